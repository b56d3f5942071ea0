"""With DEBUG off, serving and the worker do not start without their signing keys, and none is made on the fly
(issue 36 item 8 "Production defaults fail closed"; config/keys.py). Each probe is a fresh interpreter on
production settings whose key files are in a directory of its own."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SECRET = "a-production-secret-that-is-long-and-varied-0123456789-ABCDEFGHIJKLMNOP"
ENSURE = "python manage.py signing_key ensure"


@pytest.fixture
def production(tmp_path) -> dict:
    """DEBUG off, everything required set, the keys' files at paths where there is none yet."""
    drop = ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE",
            "API_NUM_PROXIES", "SIGNING_KEY_PATH", "SIGNING_PUBLIC_KEYS_DIR", "AUDIT_KEY_PATH")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return env | {"DEBUG": "0", "SECRET_KEY": SECRET, "ALLOWED_HOSTS": "review.example.org", "VAR_DIR": str(tmp_path),
                  "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "REDIS_URL": "redis://127.0.0.1:1/0"}


def run(env, *args, timeout=120):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def key_files(tmp_path) -> list[str]:
    return sorted(p.name for p in tmp_path.rglob("*.pem"))


def test_with_debug_off_serving_refuses_to_start_without_its_keys_and_makes_none(production, tmp_path):
    done = run(production, "-c", "import config.wsgi")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("django.core.exceptions.ImproperlyConfigured: With DEBUG off the app does not serve or work "
                           "without its signing keys"), done.stderr
    assert f"no result-signing key at {tmp_path / 'signing' / 'ed25519.pem'} (SIGNING_KEY_PATH)" in last
    assert f"no audit key at {tmp_path / 'signing' / 'audit-ed25519.pem'} (AUDIT_KEY_PATH)" in last
    assert f"`{ENSURE}`" in last
    assert key_files(tmp_path) == []


def test_with_debug_off_the_worker_refuses_to_start_without_its_keys_and_makes_none(production, tmp_path):
    done = run(production, "-m", "celery", "-A", "config", "worker", "-Q", "keys-probe", "--concurrency=1",
               "--loglevel=WARNING", timeout=90)
    assert done.returncode != 0
    assert "With DEBUG off the app does not serve or work without its signing keys" in done.stderr, done.stderr
    assert f"`{ENSURE}`" in done.stderr
    assert key_files(tmp_path) == []


def test_with_the_keys_made_by_the_command_serving_starts_and_without_one_it_names_that_one(production, tmp_path):
    made = run(production, "manage.py", "signing_key", "ensure")
    assert made.returncode == 0, made.stderr
    served = run(production, "-c", "import config.wsgi; print('serving')")
    assert served.returncode == 0, served.stderr
    assert served.stdout.strip() == "serving"
    (tmp_path / "signing" / "audit-ed25519.pem").unlink()
    refused = run(production, "-c", "import config.wsgi")
    assert refused.returncode != 0
    last = refused.stderr.strip().splitlines()[-1]
    assert "no audit key at" in last and "SIGNING_KEY_PATH" not in last


def test_commands_that_sign_nothing_run_without_keys(production, tmp_path):
    for command in (("check",), ("migrate", "--noinput"), ("verify_audit",)):
        done = run(production, "manage.py", *command)
        assert done.returncode == 0, (command, done.stderr)
    assert key_files(tmp_path) == []


def test_with_debug_on_serving_starts_without_keys(production, tmp_path):
    done = run(production | {"DEBUG": "1"}, "-c", "import config.wsgi")
    assert done.returncode == 0, done.stderr

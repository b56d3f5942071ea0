"""The auditor's and operator's commands run as the README writes them: no DEBUG=1, no SECRET_KEY (issue 24 item 8)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SECRET = "a-production-secret-that-is-long-and-varied-0123456789-ABCDEFGHIJKLMNOP"


@pytest.fixture(scope="module")
def production(tmp_path_factory):
    """Production settings on a migrated SQLite database of its own; the environment holds no SECRET_KEY."""
    tmp = tmp_path_factory.mktemp("nosecret")
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL",
                                                            "DJANGO_SETTINGS_MODULE")}
    # DATABASE_URL and REDIS_URL are required with DEBUG off (tests/config/test_settings.py); these commands
    # never reach Redis.
    env |= {"DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}", "VAR_DIR": str(tmp), "REDIS_URL": "redis://127.0.0.1:1/0"}
    migrated = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT,
                              env=env | {"SECRET_KEY": SECRET}, capture_output=True, text=True, timeout=300)
    assert migrated.returncode == 0, migrated.stderr
    return env


def manage(env, *args):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_issue_token_and_verify_audit_need_no_secret(production):
    issued = manage(production, "issue_token", "auditor-7", "--role", "auditor")
    assert issued.returncode == 0, issued.stderr
    assert issued.stdout.startswith("aas_") and len(issued.stdout.splitlines()) == 1
    verified = manage(production, "verify_audit")
    assert verified.returncode == 0, verified.stderr
    assert "OK (no run: tokens) (1 event)" in verified.stdout


def test_verify_bundle_and_signing_key_need_no_secret_nor_database(production, tmp_path):
    env = production | {"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "SIGNING_KEY_PATH": str(tmp_path / "k.pem")}
    created = manage(env, "signing_key", "create")
    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith("created ") and "PRIVATE" not in created.stdout
    (tmp_path / "x.zip").write_bytes(b"hello")
    checked = manage(env, "verify_bundle", str(tmp_path / "x.zip"))
    assert checked.returncode == 1 and "Traceback" not in checked.stderr
    assert checked.stdout.splitlines()[0] == "FAIL bundle: not a zip or tar.gz file"


def test_a_command_that_runs_checks_says_in_one_line_that_it_needs_the_secret(production):
    done = manage(production, "check")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "(reviews.E001) Environment variable SECRET_KEY is required" in done.stderr


def test_serving_refuses_to_start_without_the_secret(production):
    done = subprocess.run([sys.executable, "-c", "import config.wsgi"], cwd=ROOT, env=production,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == ("django.core.exceptions.ImproperlyConfigured: Environment "
                                                    "variable SECRET_KEY is required (set it, or DEBUG=1 for "
                                                    "development)")

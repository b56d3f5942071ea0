"""Settings come from the environment through strict helpers; production settings pass check --deploy."""
import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings import env_bool, env_int
from tests.conftest import ROOT


def manage(*args, **env):
    base = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS")}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=base | env,
                          capture_output=True, text=True, timeout=120)


def test_production_settings_pass_check_deploy():
    result = manage("check", "--deploy", "--fail-level", "WARNING",
                    DEBUG="0", SECRET_KEY="k" * 60 + "-not-a-real-secret-but-long-and-varied-123",
                    ALLOWED_HOSTS="review.example.org")
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key():
    result = manage("check", DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def test_a_junk_boolean_fails_loudly(monkeypatch):
    monkeypatch.setenv("SOME_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="SOME_FLAG='maybe' is not a boolean"):
        env_bool("SOME_FLAG", False)


def test_a_junk_integer_fails_loudly(monkeypatch):
    monkeypatch.setenv("SOME_SIZE", "5MB")
    with pytest.raises(ImproperlyConfigured, match="SOME_SIZE='5MB' is not an integer"):
        env_int("SOME_SIZE", 1)
    monkeypatch.setenv("SOME_SIZE", "")
    assert env_int("SOME_SIZE", 7) == 7


# Production defaults fail closed (issue 36 item 8; DESIGN §10): with DEBUG off nothing falls back to a
# development default. Each probe imports the settings (and, to serve, config.wsgi) in a fresh interpreter.
PRODUCTION = {"DEBUG": "0", "SECRET_KEY": "k" * 60 + "-not-a-real-secret-but-long-and-varied-123",
              "ALLOWED_HOSTS": "review.example.org", "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
              "REDIS_URL": "redis://127.0.0.1:1/0"}


def python(*args: str, **env):
    base = {k: v for k, v in os.environ.items() if k not in (*PRODUCTION, "DJANGO_SETTINGS_MODULE", "API_NUM_PROXIES")}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=base | env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("name", ["DATABASE_URL", "REDIS_URL"])
def test_with_debug_off_serving_refuses_to_start_without(name):
    env = {k: v for k, v in PRODUCTION.items() if k != name}
    done = python("-c", "import config.wsgi", **env)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (f"django.core.exceptions.ImproperlyConfigured: Environment "
                                                    f"variable {name} is required (set it, or DEBUG=1 for "
                                                    "development)")


@pytest.mark.parametrize("name", ["DATABASE_URL", "REDIS_URL"])
def test_with_debug_off_every_command_refuses_to_start_without(name):
    env = {k: v for k, v in PRODUCTION.items() if k != name}
    for command in ("check", "migrate", "issue_token"):
        done = python("manage.py", command, **env)
        assert done.returncode != 0
        assert f"Environment variable {name} is required" in done.stderr


def test_with_debug_on_the_development_defaults_remain(tmp_path):
    done = python("-c", "import django; django.setup(); from django.conf import settings as s; "
                  "print(s.DATABASES['default']['ENGINE'], s.CELERY_TASK_ALWAYS_EAGER)", DEBUG="1",
                  VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["django.db.backends.sqlite3", "True"]


SECURE_PROBE = """
import django
django.setup()
from django.test import Client, RequestFactory
request = RequestFactory().get("/login/", HTTP_X_FORWARDED_PROTO="https")
page = Client(HTTP_HOST="review.example.org").get("/login/", HTTP_X_FORWARDED_PROTO="https")
print(request.is_secure(), page.status_code)
"""


def test_a_client_written_x_forwarded_proto_is_not_trusted_without_a_proxy(tmp_path):
    env = PRODUCTION | {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "VAR_DIR": str(tmp_path),
                        "DJANGO_SETTINGS_MODULE": "config.settings"}
    direct = python("-c", SECURE_PROBE, **env)
    assert direct.returncode == 0, direct.stderr
    assert direct.stdout.split() == ["False", "301"]  # plain http, redirected to https
    proxied = python("-c", SECURE_PROBE, **env, API_NUM_PROXIES="1")
    assert proxied.returncode == 0, proxied.stderr
    assert proxied.stdout.split() == ["True", "200"]  # the proxy in front says how the client came


POOL_PROBE = "from config import settings as s; print(s.DATABASES['default'].get('OPTIONS', {}).get('pool'))"


def test_with_debug_off_postgresql_connections_come_from_a_pool_sized_from_the_environment():
    assert python("-c", POOL_PROBE, **PRODUCTION).stdout.strip() == "{'min_size': 1, 'max_size': 4, 'timeout': 5}"
    sized = python("-c", POOL_PROBE, **PRODUCTION, DB_POOL_MAX_SIZE="6", DB_POOL_MIN_SIZE="2", DB_POOL_TIMEOUT="3")
    assert sized.stdout.strip() == "{'min_size': 2, 'max_size': 6, 'timeout': 3}"
    assert python("-c", POOL_PROBE, **PRODUCTION, DB_POOL_MAX_SIZE="0").stdout.strip() == "None"
    assert python("-c", POOL_PROBE, **PRODUCTION | {"DATABASE_URL": "sqlite:///x.sqlite3"}).stdout.strip() == "None"


def test_persistent_connections_and_the_pool_together_are_a_start_up_error():
    done = python("-c", POOL_PROBE, **PRODUCTION, CONN_MAX_AGE="60")
    assert done.returncode != 0
    assert "CONN_MAX_AGE=60 does not go with the connection pool (DB_POOL_MAX_SIZE=4)" in done.stderr

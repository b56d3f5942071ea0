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

"""`make run` creates the PostgreSQL database DATABASE_URL names when it is missing (found by QA:
`DATABASE_URL=postgres://…/aas_new make run` stopped at migrate with 'database does not exist')."""
import os
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


def database_exists(name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        return cursor.fetchone() is not None


def ensure(url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "1"}
    return subprocess.run([sys.executable, "manage.py", "ensure_database"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_it_creates_a_missing_postgresql_database_once_and_then_does_nothing():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    parts = urlsplit(os.environ["DATABASE_URL"])
    name = f"aas_ensure_{uuid.uuid4().hex[:10]}"
    url = parts._replace(path="/" + name).geturl()
    assert not database_exists(name)
    try:
        first = ensure(url)
        assert first.returncode == 0, first.stderr
        assert first.stdout.strip() == f"created database {name}"
        assert database_exists(name)
        again = ensure(url)
        assert again.returncode == 0, again.stderr
        assert again.stdout == ""
    finally:
        import psycopg  # DROP DATABASE runs outside a transaction: a connection of its own

        with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')


def test_it_does_nothing_on_sqlite(tmp_path):
    done = ensure(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and not (tmp_path / "db.sqlite3").exists()

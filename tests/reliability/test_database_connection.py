"""The database drops the app's connection between two requests: the next request still works (DESIGN §10).

A real gunicorn process keeps one persistent connection (CONN_MAX_AGE=60), tagged with an
application_name; the test terminates that backend with pg_terminate_backend, as a database
restart or an idle-connection killer would, and sends the next request.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

import pytest
from django.db import connection

from tests.conftest import _token_for
from tests.reliability.services import app_env, database_url_of_the_tests, free_port, spawn, stop_group, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def get(url: str, key: str) -> tuple[int, dict]:
    request = urllib.request.Request(url, headers={"Authorization": f"Token {key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, {}


def backends(name: str) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s ORDER BY pid", [name])
        return [row[0] for row in cursor.fetchall()]


def terminate(pids: list[int]) -> None:
    with connection.cursor() as cursor:
        for pid in pids:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])


@pytest.fixture
def app_server(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (make test)")
    servers = []

    def start(**extra):
        name = f"aas-drop-{uuid.uuid4().hex[:8]}"
        port = free_port()
        env = app_env(DATABASE_URL=f"{database_url_of_the_tests()}?application_name={name}", CONN_MAX_AGE="60",
                      VAR_DIR=str(tmp_path), **extra)
        servers.append(spawn(["-m", "gunicorn", "config.wsgi", "--workers", "1", "--bind", f"127.0.0.1:{port}",
                              "--log-level", "warning"], env, tmp_path / f"{name}.log"))
        return f"http://127.0.0.1:{port}", name

    yield start
    for server in servers:
        stop_group(server)


def wait_up(base: str, key: str) -> None:
    def answers():
        try:
            return get(f"{base}/api/whoami/", key)[0] == 200
        except OSError:
            return False

    wait_for(answers, "the app server to answer")


def test_the_request_after_the_database_dropped_the_connection_succeeds(app_server, run_factory):
    run = run_factory()
    key = _token_for("drop-auditor", "auditor")
    base, name = app_server()
    wait_up(base, key)
    before = backends(name)
    assert len(before) == 1  # one persistent connection, kept between requests

    terminate(before)
    wait_for(lambda: backends(name) == [], "the backend to end")

    status, body = get(f"{base}/api/runs/{run.run_id}/", key)
    assert status == 200 and body["run_id"] == run.run_id
    after = backends(name)
    assert len(after) == 1 and after != before  # a new connection replaced the dropped one
    assert get(f"{base}/api/whoami/", key)[0] == 200


def test_without_health_checks_the_first_request_after_the_drop_fails(app_server, run_factory):
    """What CONN_HEALTH_CHECKS prevents: the dead connection is reused and the request fails (a 503 with
    Retry-After since issue 23: the database's failure, not a bug; it used to be a 500)."""
    run = run_factory()
    key = _token_for("drop-auditor-2", "auditor")
    base, name = app_server(CONN_HEALTH_CHECKS="0")
    wait_up(base, key)
    terminate(backends(name))
    wait_for(lambda: backends(name) == [], "the backend to end")

    assert get(f"{base}/api/runs/{run.run_id}/", key)[0] == 503
    assert get(f"{base}/api/runs/{run.run_id}/", key)[0] == 200  # Django then discards the broken connection

"""The database stops under a running app: the API answers 503 in its error shape with Retry-After, pages the
styled 503, and both work again once it is back (DESIGN §10, issue 23).

A private PostgreSQL cluster (initdb on a free port) is migrated and served by a real gunicorn; the test
stops that cluster with pg_ctl and starts it again. The shared server is never touched.
"""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
import requests

from tests.conftest import ROOT
from tests.reliability.services import (
    PrivatePostgres,
    app_env,
    free_port,
    spawn,
    stop_group,
    wait_for,
)


def manage(env, *args: str) -> str:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True,
                          text=True, timeout=300).stdout


@pytest.fixture
def private_app(tmp_path):
    database = PrivatePostgres()
    server = None
    try:
        database.create()
        env = app_env(DATABASE_URL=database.url, VAR_DIR=str(tmp_path), CONN_MAX_AGE="0")
        env.pop("REDIS_URL", None)
        manage(env, "migrate", "--noinput")
        key = manage(env, "issue_token", "outage-reviewer", "--role", "reviewer", "--password", "pw-outage-123").strip()
        port = free_port()
        server = spawn(["-m", "gunicorn", "config.wsgi", "--workers", "1", "--bind", f"127.0.0.1:{port}",
                        "--log-level", "warning"], env, tmp_path / "web.log")
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(base), "the app to answer")
        yield {"database": database, "base": base, "key": key}
    finally:
        stop_group(server)
        database.destroy()


def _answers(base: str) -> bool:
    try:
        return requests.get(f"{base}/healthz", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def logged_in(base: str) -> requests.Session:
    session = requests.Session()
    form = session.get(f"{base}/login/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    response = session.post(f"{base}/login/", data={"username": "outage-reviewer", "password": "pw-outage-123",
                                                    "csrfmiddlewaretoken": token},
                            headers={"Referer": f"{base}/login/"}, timeout=10, allow_redirects=False)
    assert response.status_code == 302, response.text[:500]
    return session


def test_with_the_database_down_the_api_answers_503_in_its_shape_and_pages_the_styled_503(private_app):
    database, base, key = private_app["database"], private_app["base"], private_app["key"]
    api = {"Authorization": f"Token {key}"}
    browser = logged_in(base)
    assert requests.get(f"{base}/api/runs/", headers=api, timeout=10).status_code == 200
    assert browser.get(f"{base}/", timeout=10).status_code == 200

    database.stop()
    response = requests.get(f"{base}/api/runs/", headers=api, timeout=30)
    assert response.status_code == 503, response.text[:500]
    assert response.headers["Retry-After"] == "5"
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == "database_unavailable"
    assert set(body["error"]) == {"code", "message", "details"}
    response = requests.post(f"{base}/api/runs/", json={"run_id": "x"}, headers=api, timeout=30)
    assert response.status_code == 503 and response.json()["error"]["code"] == "database_unavailable"

    page = browser.get(f"{base}/", timeout=30)
    assert page.status_code == 503 and page.headers["Retry-After"] == "5"
    assert "Service unavailable" in page.text and "app.css" in page.text  # the styled page, not a traceback
    health = requests.get(f"{base}/healthz", timeout=30)
    assert health.status_code == 503 and health.json()["checks"]["database"] == "down"
    assert "127.0.0.1" not in health.text and "details" not in health.json()

    database.start()
    wait_for(lambda: requests.get(f"{base}/api/runs/", headers=api, timeout=10).status_code == 200,
             "the API to answer again", timeout=30)
    assert browser.get(f"{base}/", timeout=10).status_code == 200

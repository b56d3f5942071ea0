"""Production settings: check --deploy clean, secure cookies and headers, CSP, error pages, favicon, throttles."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from django.test import Client

from reviews.models import AuditEvent
from tests.conftest import ROOT

SECRET = "a-production-secret-that-is-long-and-varied-0123456789-ABCDEFGHIJKLMNOP"

# Run under DEBUG=0 in a fresh interpreter: GET the login page over HTTPS through Django's test
# client and print what a browser would receive.
PRODUCTION_PROBE = r"""
import json, django
django.setup()
from django.test import Client
from django.conf import settings
client = Client(HTTP_HOST="review.example.org")
page = client.get("/login/", secure=True)
missing = client.get("/no/such/page/", secure=True)
api_missing = client.get("/api/no/such/endpoint/", secure=True)
plain = client.get("/login/", secure=False)
print(json.dumps({
    "status": page.status_code,
    "headers": dict(page.headers),
    "cookies": {name: {"secure": bool(c["secure"]), "httponly": bool(c["httponly"]), "samesite": c["samesite"]}
                for name, c in page.cookies.items()},
    "missing_status": missing.status_code,
    "missing_body": missing.content.decode(),
    "api_missing": [api_missing.status_code, api_missing.headers["Content-Type"], api_missing.content.decode()],
    "plain_status": plain.status_code,
    "plain_location": plain.headers.get("Location", ""),
    "debug": settings.DEBUG,
    "session_cookie": [settings.SESSION_COOKIE_SECURE, settings.SESSION_COOKIE_HTTPONLY, settings.SESSION_COOKIE_SAMESITE],
}))
"""


def production_env(tmp_path, **extra) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL",
                                                            "REDIS_URL")}
    return base | {"DEBUG": "0", "SECRET_KEY": SECRET, "ALLOWED_HOSTS": "review.example.org",
                   "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "VAR_DIR": str(tmp_path),
                   # Required with DEBUG off (nothing here queues a task or counts a request in it).
                   "REDIS_URL": os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/1"} | extra


def test_check_deploy_prints_no_warning_under_production_settings(tmp_path):
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy"], cwd=ROOT, env=production_env(tmp_path),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "System check identified no issues (0 silenced)."
    assert "WARNING" not in result.stderr and "security." not in result.stderr


def test_check_deploy_fails_when_webhooks_may_go_to_loopback_in_production(tmp_path):
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy"], cwd=ROOT,
                            env=production_env(tmp_path, WEBHOOK_ALLOW_PRIVATE="1"), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode != 0
    assert "WEBHOOK_ALLOW_PRIVATE" in result.stderr and "DEBUG" in result.stderr


@pytest.fixture(scope="module")
def production(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("production")
    result = subprocess.run([sys.executable, "-c", PRODUCTION_PROBE], cwd=ROOT, env=production_env(tmp_path)
                            | {"DJANGO_SETTINGS_MODULE": "config.settings"}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_pages_carry_hsts_and_the_security_headers(production):
    headers = production["headers"]
    assert production["debug"] is False and production["status"] == 200
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"


def test_production_cookies_are_secure_and_http_only(production):
    csrf = production["cookies"]["csrftoken"]
    assert csrf == {"secure": True, "httponly": True, "samesite": "Lax"}
    assert production["session_cookie"] == [True, True, "Lax"]


def test_production_redirects_plain_http_to_https(production):
    assert production["plain_status"] == 301
    assert production["plain_location"] == "https://review.example.org/login/"


def test_production_404_is_the_app_page(production):
    assert production["missing_status"] == 404
    assert "<h1>Not found</h1>" in production["missing_body"]
    assert "AAS review" in production["missing_body"]


def test_production_answers_an_unknown_api_path_with_the_json_error(production):
    status, content_type, body = production["api_missing"]
    assert (status, content_type) == (404, "application/json")
    assert json.loads(body)["error"]["code"] == "not_found"


def csp_directives(header: str) -> dict[str, list[str]]:
    return {part.split()[0]: part.split()[1:] for part in (p.strip() for p in header.split(";")) if part}


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/login/", "/api/docs/", "/api/schema/", "/healthz", "/favicon.ico"])
def test_every_response_allows_scripts_only_from_self(path):
    response = Client().get(path)
    policy = csp_directives(response.headers["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)


def test_no_template_carries_inline_script_or_event_handlers():
    offenders = []
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        if INLINE_SCRIPT.search(text) or INLINE_HANDLER.search(text) or "javascript:" in text.lower():
            offenders.append(str(template.relative_to(ROOT)))
    assert offenders == []


@pytest.mark.django_db
def test_the_api_docs_page_loads_its_initialiser_as_a_script_file():
    client = Client()
    page = client.get("/api/docs/").content.decode()
    assert INLINE_SCRIPT.search(page) is None
    sources = re.findall(r'<script[^>]*src="([^"]+)"', page)
    init = [s for s in sources if "script" in s.split("?", 1)[-1]]
    assert init, sources
    script = client.get(init[0].replace("&amp;", "&"))
    assert script.status_code == 200
    assert script.headers["Content-Type"].startswith("application/javascript")
    assert b"SwaggerUIBundle" in script.content


@pytest.mark.django_db
def test_favicon_answers_at_the_root_and_pages_link_it(reviewer):
    response = Client().get("/favicon.ico")
    body = b"".join(response.streaming_content)
    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    assert body[:4] == b"\x00\x00\x01\x00"  # the ICO signature: reserved 0, type 1 (icon)
    assert body == (ROOT / "static" / "favicon.ico").read_bytes()
    login = Client().get("/login/").content.decode()
    assert '<link rel="icon" href="/static/favicon.ico">' in login


@pytest.mark.django_db
def test_under_debug_a_reviewer_mistyping_a_run_gets_the_app_404_not_djangos_debug_page(settings, client):
    from django.contrib.auth import get_user_model

    from reviews.access import ensure_role_groups

    settings.DEBUG = True
    ensure_role_groups()
    user = get_user_model().objects.create_user("rev-404", password="pw-rev-404-123")
    user.groups.add(*__import__("django.contrib.auth.models", fromlist=["Group"]).Group.objects.filter(name="reviewer"))
    client.force_login(user)
    for path in ("/runs/AAS-2026-01-01-nope-01/", "/no/such/page/"):
        response = client.get(path)
        assert response.status_code == 404
        body = response.content.decode()
        assert "<h1>Not found</h1>" in body
        assert "DEBUG = True" not in body and "URLconf" not in body


@pytest.mark.django_db
def test_under_debug_a_superuser_still_sees_djangos_debug_404(settings, client):
    from django.contrib.auth import get_user_model

    settings.DEBUG = True
    client.force_login(get_user_model().objects.create_superuser("dev-404", password="pw-dev-404-123"))
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert "URLconf" in response.content.decode()


@pytest.mark.django_db
def test_a_forbidden_page_is_the_app_403_naming_the_role(client, run_factory):
    from django.contrib.auth import get_user_model

    run = run_factory()
    client.force_login(get_user_model().objects.create_user("norole", password="pw-norole-123"))
    response = client.get(f"/runs/{run.run_id}/reconcile/")
    assert response.status_code == 403
    body = response.content.decode()
    assert "<h1>Not allowed</h1>" in body and "role" in body


def test_the_500_page_renders_without_a_request_context():
    from django.template import loader

    body = loader.get_template("500.html").render({})
    assert "<h1>Server error</h1>" in body and "/static/css/app.css" in body


@pytest.mark.django_db
def test_a_token_client_over_its_rate_gets_429_in_the_error_shape(settings, agent):
    settings.API_THROTTLE_RATE = "3/minute"
    statuses = [agent.get("/api/whoami/").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    response = agent.get("/api/runs/")
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "throttled"
    assert int(response.headers["Retry-After"]) > 0


@pytest.mark.django_db
def test_an_anonymous_client_cannot_renew_its_rate_by_writing_x_forwarded_for(settings):
    settings.API_ANON_THROTTLE_RATE = "2/minute"
    statuses = [Client(HTTP_X_FORWARDED_FOR=f"203.0.113.{n}").get("/api/schema/").status_code for n in range(3)]
    assert statuses == [200, 200, 429]


@pytest.mark.django_db
def test_one_clients_rate_does_not_throttle_another(settings, agent, reviewer):
    settings.API_THROTTLE_RATE = "2/minute"
    assert [agent.get("/api/whoami/").status_code for _ in range(3)] == [200, 200, 429]
    assert reviewer.get("/api/whoami/").status_code == 200


@pytest.mark.django_db
def test_failed_logins_lock_the_user_name_out_with_429_and_an_audit_event(settings, reviewer):
    settings.LOGIN_FAILURE_LIMIT = 3
    client = Client()
    for _ in range(3):
        assert client.post("/login/", {"username": "reviewer-1", "password": "wrong"}).status_code == 200
    locked = client.post("/login/", {"username": "reviewer-1", "password": "pw-reviewer-1-123"})
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    event = AuditEvent.objects.get(run=None, action="login.locked")
    assert (event.object_id, event.after["failures"]) == ("reviewer-1", 3)
    # Another user name from the same address may still log in (the address limit is higher).
    other = Client()
    assert other.post("/login/", {"username": "auditor-x", "password": "wrong"}).status_code == 200


@pytest.mark.django_db
def test_failures_count_per_address_only_where_the_address_is_said_to_be_the_clients(settings, reviewer):
    """Behind a proxy every login arrives from the proxy's address: counting it by default would let
    anyone lock every user out. With LOGIN_CLIENT_ADDRESS set, an address fails five times the limit."""
    settings.LOGIN_FAILURE_LIMIT = 1

    def spray(address: str) -> None:  # one failure each for five new user names, from one address
        for n in range(5):
            Client(REMOTE_ADDR=address).post("/login/", {"username": f"nobody-{address}-{n}", "password": "wrong"})

    spray("10.0.0.1")
    assert Client(REMOTE_ADDR="10.0.0.1").post(
        "/login/", {"username": "reviewer-1", "password": "pw-reviewer-1-123"}).status_code == 302

    settings.LOGIN_CLIENT_ADDRESS = "REMOTE_ADDR"
    spray("10.0.0.2")
    refused = Client(REMOTE_ADDR="10.0.0.2").post("/login/", {"username": "reviewer-1", "password": "pw-reviewer-1-123"})
    assert refused.status_code == 429
    assert Client(REMOTE_ADDR="10.0.0.3").post(
        "/login/", {"username": "reviewer-1", "password": "pw-reviewer-1-123"}).status_code == 302


@pytest.mark.django_db
def test_a_user_name_with_spaces_and_controls_is_counted_without_cache_key_warnings(settings, reviewer):
    import warnings

    from django.core.cache.backends.base import CacheKeyWarning

    settings.LOGIN_FAILURE_LIMIT = 2
    settings.LOGIN_CLIENT_ADDRESS = "HTTP_X_REAL_IP"
    client = Client(HTTP_X_REAL_IP="10.0.0.9, proxy one")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheKeyWarning)
        for _ in range(2):
            assert client.post("/login/", {"username": "a name\twith spaces", "password": "x"}).status_code == 200
        assert client.post("/login/", {"username": "A NAME\twith spaces", "password": "x"}).status_code == 429


@pytest.mark.django_db
def test_a_successful_login_clears_the_user_names_failures(settings, reviewer):
    settings.LOGIN_FAILURE_LIMIT = 3
    client = Client()
    for _ in range(2):
        client.post("/login/", {"username": "reviewer-1", "password": "wrong"})
    assert client.post("/login/", {"username": "reviewer-1", "password": "pw-reviewer-1-123"}).status_code == 302
    client.logout()
    for _ in range(2):
        assert client.post("/login/", {"username": "reviewer-1", "password": "wrong"}).status_code == 200
    assert not AuditEvent.objects.filter(action="login.locked").exists()


@pytest.mark.django_db
def test_the_admin_login_shares_the_failed_login_limit(settings, reviewer):
    from django.contrib.auth import get_user_model

    settings.LOGIN_FAILURE_LIMIT = 3
    get_user_model().objects.create_superuser("boss", password="pw-boss-123456")
    admin_login = Client()
    for _ in range(3):
        admin_login.post("/admin/login/", {"username": "boss", "password": "wrong"})
    # Locked now: even the right password does not get in through the admin's own form...
    admin_login.post("/admin/login/", {"username": "boss", "password": "pw-boss-123456"})
    assert "_auth_user_id" not in admin_login.session
    # ...nor through the app's, which says why.
    assert Client().post("/login/", {"username": "boss", "password": "pw-boss-123456"}).status_code == 429
    assert AuditEvent.objects.filter(run=None, action="login.locked", object_id="boss").count() == 1


@pytest.mark.django_db
def test_a_locked_out_login_never_reaches_the_password_check(settings, reviewer, monkeypatch):
    from django.contrib.auth.hashers import MD5PasswordHasher

    settings.LOGIN_FAILURE_LIMIT = 2
    client = Client()
    for _ in range(2):
        client.post("/login/", {"username": "reviewer-1", "password": "wrong"})
    checked = []
    monkeypatch.setattr(MD5PasswordHasher, "verify", lambda self, password, encoded: checked.append(1) or True)
    assert client.post("/login/", {"username": "reviewer-1", "password": "anything"}).status_code == 429
    assert checked == []

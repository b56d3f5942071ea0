import pytest
from django.core.management import call_command

from reviews.models import ApiToken, AuditEvent, hash_token

pytestmark = pytest.mark.django_db


def issue(capsys, *args):
    call_command("issue_token", *args)
    return capsys.readouterr().out


def test_issue_token_prints_only_the_token(capsys):
    out = issue(capsys, "bot", "--role", "agent")
    assert out.count("\n") == 1
    key = out.strip()
    assert key.startswith("aas_") and len(key) > 30
    token = ApiToken.objects.get()
    assert token.key_sha256 == hash_token(key)
    assert key not in token.key_sha256 and token.key_prefix == key[:10]


def test_issue_token_creates_the_user_with_role_and_password(capsys, client):
    issue(capsys, "rita", "--role", "reviewer", "--password", "s3cret-pass")
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username="rita")
    assert list(user.groups.values_list("name", flat=True)) == ["reviewer"]
    assert client.login(username="rita", password="s3cret-pass")


def test_issue_token_refuses_an_unknown_role(capsys):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("issue_token", "bot", "--role", "astrologer")


def test_a_revoked_token_is_refused(capsys):
    from rest_framework.test import APIClient

    key = issue(capsys, "bot", "--role", "agent").strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/runs/").status_code == 200
    call_command("revoke_token", "bot")
    response = client.get("/api/runs/")
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]
    assert list(AuditEvent.objects.filter(run=None).values_list("action", flat=True)) == [
        "token.issued", "token.revoked"]


def test_a_bearer_token_gets_a_401_that_names_the_token_scheme(capsys):
    """It got the same 401 as no header at all, with no hint that the scheme is `Token` (issue 22)."""
    from rest_framework.test import APIClient

    key = issue(capsys, "bearer-bot", "--role", "agent").strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    response = client.get("/api/runs/")
    assert response.status_code == 401
    assert "Authorization: Token <key>" in response.json()["error"]["message"]
    assert "'Bearer'" in response.json()["error"]["message"]


def test_a_wrong_token_is_refused():
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token aas_nonsense")
    assert client.get("/api/runs/").status_code == 401


def test_a_failed_login_is_audited_without_the_password(client):
    client.post("/login/", {"username": "mallory", "password": "guess-123"})
    event = AuditEvent.objects.get(action="login.failed")
    assert event.run is None and event.object_id == "mallory"
    assert "guess-123" not in str(event.after)

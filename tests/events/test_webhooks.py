"""Webhook subscriptions and their signed deliveries (DESIGN §9, §10, §13)."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from standardwebhooks import Webhook as Verifier

from events import addresses
from events.models import Delivery, Webhook
from reviews.models import AuditEvent
from tests.conftest import seed_bytes, wait_until
from tests.events.receiver import Receiver

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def private_ok(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True
    settings.WEBHOOK_RETRY_BASE_MS = 1


def subscribe(client, url, **fields):
    response = client.post("/api/webhooks/", {"url": url, **fields}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def upload(client, run_id, seed="002", role="memory"):
    response = client.post(f"/api/runs/{run_id}/members/",
                           {"role": role, "file": SimpleUploadedFile(f"{seed}.txt", seed_bytes(seed))},
                           format="multipart")
    assert response.status_code in (200, 201), response.content
    return response.json()


def verified(secret, request) -> dict:
    """The payload, if its Standard Webhooks signature holds under `secret` (raises otherwise)."""
    return Verifier(secret).verify(request["body"], request["headers"])


@pytest.mark.parametrize("url", [
    "https://127.0.0.1/hook", "https://10.1.2.3/hook", "https://169.254.169.254/latest/meta-data/",
    "https://[::1]/hook", "https://localhost/hook", "https://rebound.example/hook", "http://example.com/hook",
])
def test_it_refuses_to_subscribe_a_url_that_is_not_https_to_a_public_address(agent, url, monkeypatch):
    real = addresses.resolve
    monkeypatch.setattr(addresses, "resolve",
                        lambda host, port: ["127.0.0.1"] if host == "rebound.example" else real(host, port))
    response = agent.post("/api/webhooks/", {"url": url}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "webhook_refused"
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("address", ["169.254.169.254", "fe80::1", "::ffff:169.254.169.254", "10.1.2.3",
                                     "192.168.0.7", "0.0.0.0"])
def test_allowing_private_targets_still_never_allows_link_local_nor_the_network_inside(address, monkeypatch):
    """WEBHOOK_ALLOW_PRIVATE opens loopback and http for tests and local set-ups, nothing else (issue 36 item 8)."""
    monkeypatch.setattr(addresses, "resolve", lambda host, port: [address])
    with pytest.raises(addresses.AddressRefused, match="webhooks go to public addresses only"):
        addresses.checked_target("http://hooks.example/aas", allow_private=True)


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"])
def test_allowing_private_targets_allows_loopback_over_http(address, monkeypatch):
    monkeypatch.setattr(addresses, "resolve", lambda host, port: [address])
    assert addresses.checked_target("http://receiver.local:8080/hook", allow_private=True) == (
        "receiver.local", 8080, address)
    with pytest.raises(addresses.AddressRefused, match="resolves to"):
        addresses.checked_target("https://receiver.local:8080/hook", allow_private=False)


def test_it_shows_the_secret_once_and_audits_the_subscription_without_it(agent, monkeypatch):
    monkeypatch.setattr(addresses, "resolve", lambda host, port: ["93.184.216.34"])
    made = subscribe(agent, "https://hooks.example/aas", event_types=["member.validated"])
    assert made["secret"].startswith("whsec_")
    assert "secret" not in agent.get(f"/api/webhooks/{made['id']}/").json()
    assert all("secret" not in w for w in agent.get("/api/webhooks/").json())
    event = AuditEvent.objects.get(action="webhook.created")
    assert made["secret"] not in json.dumps(event.after) and event.after["owner"] == agent.user.pk
    assert made["secret"] not in Webhook.objects.get().secret_encrypted


def test_it_keeps_a_subscription_to_its_owner(agent, reviewer, monkeypatch):
    monkeypatch.setattr(addresses, "resolve", lambda host, port: ["93.184.216.34"])
    made = subscribe(agent, "https://hooks.example/aas")
    assert reviewer.get(f"/api/webhooks/{made['id']}/").status_code == 404
    assert reviewer.delete(f"/api/webhooks/{made['id']}/").status_code == 404
    assert agent.delete(f"/api/webhooks/{made['id']}/").status_code == 204
    assert list(AuditEvent.objects.filter(object_type="webhook").values_list("action", flat=True)) == [
        "webhook.created", "webhook.deleted"]


def test_it_delivers_member_validated_signed_with_the_subscriptions_secret(agent, private_ok):
    with Receiver() as receiver:
        made = subscribe(agent, receiver.url)
        response = agent.post("/api/runs/", {**_run_fields(), "run_id": "AAS-2026-09-25-hooks-01"}, format="json")
        assert response.status_code == 201, response.content
        upload(agent, "AAS-2026-09-25-hooks-01")
        wait_until(lambda: any(p["type"] == "member.validated" for p in receiver.payloads()), "member.validated")
    request = next(r for r in receiver.received if json.loads(r["body"])["type"] == "member.validated")
    payload = verified(made["secret"], request)
    assert payload["data"]["run"] == "AAS-2026-09-25-hooks-01" and payload["data"]["action"] == "run.validated"
    assert request["headers"]["webhook-id"].startswith("msg_")
    from standardwebhooks.webhooks import WebhookVerificationError

    with pytest.raises(WebhookVerificationError):
        verified("whsec_" + "A" * 43, request)


def test_it_retries_with_backoff_and_delivers_on_the_fourth_attempt(agent, run_factory, private_ok):
    with Receiver(statuses=[500, 500, 500]) as receiver:
        made = subscribe(agent, receiver.url, event_types=["correction.requested"])
        _request_correction(agent, run_factory)
        wait_until(lambda: Delivery.objects.filter(state="delivered").exists(), "the delivery")
    delivery = agent.get(f"/api/webhooks/{made['id']}/deliveries/").json()["results"][0]
    assert [a["status_code"] for a in delivery["attempt_log"]] == [500, 500, 500, 200]
    assert delivery["attempt_log"][-1]["response_excerpt"] == "ok from test"
    assert len({r["headers"]["webhook-id"] for r in receiver.received}) == 1


def test_it_disables_after_n_failures_keeps_the_event_in_the_feed_and_redelivers(agent, run_factory, private_ok,
                                                                                settings):
    settings.WEBHOOK_DISABLE_AFTER_FAILURES = 3
    with Receiver(default=500) as receiver:
        made = subscribe(agent, receiver.url, event_types=["correction.requested"])
        run = _request_correction(agent, run_factory)
        wait_until(lambda: not Webhook.objects.get().active, "the subscription disabled")
        assert len(receiver.received) == 3
        disabled = AuditEvent.objects.get(action="webhook.disabled")
        assert "3 consecutive failed attempts" in disabled.after["reason"]
        feed = agent.get("/api/events/", {"limit": 500}).json()["events"]
        types = [e["type"] for e in feed]
        assert "webhook.disabled" in types
        assert any(e["type"] == "correction.requested" and e["data"]["run"] == run.run_id for e in feed)
        receiver.default = 200
        assert agent.patch(f"/api/webhooks/{made['id']}/", {"active": True}, format="json").json()["active"]
        delivery = Delivery.objects.get()
        answer = agent.post(f"/api/webhooks/{made['id']}/deliveries/{delivery.pk}/redeliver/")
        assert answer.status_code == 202
        wait_until(lambda: Delivery.objects.get().state == "delivered", "the redelivery")
        assert len({r["headers"]["webhook-id"] for r in receiver.received}) == 1


def test_it_does_not_follow_a_redirect(agent, run_factory, private_ok):
    with Receiver(statuses=[302], default=200) as receiver:
        receiver.location = receiver.url.replace("/hook", "/elsewhere")
        made = subscribe(agent, receiver.url, event_types=["correction.requested"])
        _request_correction(agent, run_factory)
        wait_until(lambda: Delivery.objects.filter(state="delivered").exists(), "the retry after the redirect")
    assert receiver.payloads("/elsewhere") == []
    attempts = agent.get(f"/api/webhooks/{made['id']}/deliveries/").json()["results"][0]["attempt_log"]
    assert attempts[0]["status_code"] == 302 and "not followed" in attempts[0]["error"]


def test_it_checks_the_address_again_at_each_attempt(agent, run_factory, monkeypatch, settings):
    settings.WEBHOOK_RETRY_BASE_MS = 1
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    monkeypatch.setattr(addresses, "resolve", lambda host, port: ["93.184.216.34"])
    made = subscribe(agent, "https://hooks.example/aas", event_types=["correction.requested"])
    monkeypatch.setattr(addresses, "resolve", lambda host, port: ["127.0.0.1"])  # the name now points inside
    _request_correction(agent, run_factory)
    wait_until(lambda: Delivery.objects.filter(state="failed").exists(), "the refused attempt")
    attempt = agent.get(f"/api/webhooks/{made['id']}/deliveries/").json()["results"][0]["attempt_log"][0]
    assert attempt["status_code"] is None and "loopback" in attempt["error"]


def _run_fields():
    from tests.conftest import RUN_FIELDS

    return dict(RUN_FIELDS)


def _request_correction(agent, run_factory):
    """A run the agent took part in, with one `correction.requested` event on it."""
    from reviews.audit import Actor, record_event

    run = run_factory()
    record_event(run=run, actor=Actor("token:agent-1", agent.user.pk), action="member.uploaded",
                 object_type="member_version", object_id="memory/v1")
    record_event(run=run, actor=Actor("token:reviewer-1"), action="correction.requested",
                 object_type="correction_request", object_id=1, after={"text": "cite it"})
    return run


def test_it_delivers_through_a_real_worker_after_the_upload_commits(agent, worker, private_ok):
    with Receiver() as receiver:
        made = subscribe(agent, receiver.url, event_types=["member.validated"])
        response = agent.post("/api/runs/", {**_run_fields(), "run_id": "AAS-2026-09-25-hooks-02"}, format="json")
        assert response.status_code == 201, response.content
        upload(agent, "AAS-2026-09-25-hooks-02")
        wait_until(receiver.payloads, "a delivery from the worker", timeout=60)
    payload = verified(made["secret"], receiver.received[0])
    assert (payload["type"], payload["data"]["run"]) == ("member.validated", "AAS-2026-09-25-hooks-02")

"""Webhook subscriptions and their signed deliveries (DESIGN §9, §10, §13)."""
from __future__ import annotations

import json
import socket

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from standardwebhooks import Webhook as Verifier

from events import addresses, sending
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
    "https://mixed.example/hook",
])
def test_it_refuses_to_subscribe_a_url_that_is_not_https_to_a_public_address(agent, url, monkeypatch):
    real = addresses.resolve
    monkeypatch.setattr(addresses, "resolve",
                        lambda host, port: {"rebound.example": ["127.0.0.1"], "mixed.example": [
                            "93.184.216.34", "127.0.0.1"]}.get(host) or real(host, port))
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
    assert delivery["attempt_log"][-1]["response_excerpt"] == "(reply from a non-public target not shown)"
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


def test_a_name_that_rebinds_to_loopback_between_check_and_connect_never_reaches_it(agent, run_factory, monkeypatch,
                                                                                  settings):
    """DNS rebinding (issue 36 item 8): the attacker's name answers a public address to the subscription's and the
    attempt's checks, then 127.0.0.1. The attempt connects to the address it checked, never to what the name says
    next, and resolves the name once. (The public address is played by a listener on 127.0.0.2.)"""
    settings.WEBHOOK_MAX_ATTEMPTS, settings.WEBHOOK_TIMEOUT_SECONDS = 1, 1
    inside = socket.create_server(("127.0.0.1", 0))
    port = inside.getsockname()[1]
    public = socket.create_server(("127.0.0.2", port))
    real, asked = socket.getaddrinfo, []

    def rebinding(host, *args, **kwargs):
        if host == "rebind.example":
            asked.append(host)
            return real("93.184.216.34" if len(asked) <= 2 else "127.0.0.1", *args, **kwargs)
        return real("127.0.0.2" if host == "93.184.216.34" else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with inside, public:
        made = subscribe(agent, f"https://rebind.example:{port}/hook", event_types=["correction.requested"])
        _request_correction(agent, run_factory)
        wait_until(lambda: Delivery.objects.filter(state="failed").exists(), "the attempt")
        inside.settimeout(0.5), public.settimeout(0.5)
        with pytest.raises(TimeoutError):
            inside.accept()  # nothing ever connected to the loopback receiver
        public.accept()[0].close()  # the attempt went to the address that was checked
    assert len(asked) == 2, asked  # the subscription's check and the attempt's: the connect asked nothing
    attempt = agent.get(f"/api/webhooks/{made['id']}/deliveries/").json()["results"][0]["attempt_log"][0]
    assert attempt["status_code"] is None and attempt["error"]


def test_a_reply_from_a_non_public_target_is_never_shown(agent, run_factory, private_ok):
    """With WEBHOOK_ALLOW_PRIVATE a loopback target gets deliveries, but what it answers (the body, a redirect's
    Location) never reaches the deliveries log: a subscription must not read the server's own services
    (issue 36 item 8). Status codes and the attempt's own errors stay."""
    with Receiver(statuses=[302], default=200) as receiver:
        receiver.location = "http://127.0.0.1:6379/internal-secret"
        made = subscribe(agent, receiver.url, event_types=["correction.requested"])
        _request_correction(agent, run_factory)
        wait_until(lambda: Delivery.objects.filter(state="delivered").exists(), "the delivery")
    log = agent.get(f"/api/webhooks/{made['id']}/deliveries/").json()["results"][0]["attempt_log"]
    assert [a["status_code"] for a in log] == [302, 200]
    assert log[0]["error"] == "redirect not followed (reply from a non-public target not shown)"
    assert [a["response_excerpt"] for a in log] == ["(reply from a non-public target not shown)"] * 2
    assert "ok from test" not in json.dumps(log) and "internal-secret" not in json.dumps(log)


def test_only_a_public_targets_reply_is_kept():
    with Receiver() as receiver:
        port = receiver.server.server_address[1]
        replies = {public: sending.post(url=receiver.url, host="127.0.0.1", port=port, address="127.0.0.1",
                                        public=public, headers={}, body="{}", timeout=5) for public in (True, False)}
    assert (replies[True].status_code, replies[True].excerpt) == (200, "ok from test")
    assert (replies[False].status_code, replies[False].excerpt) == (200, sending.NOT_SHOWN)
    assert addresses.is_public("93.184.216.34") and not addresses.is_public("::ffff:127.0.0.1")

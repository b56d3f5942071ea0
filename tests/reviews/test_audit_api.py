"""GET /api/runs/{run_id}/audit/ and /audit/verify/: order, pages, filters, access, and a client-side recomputation."""
from __future__ import annotations

import hashlib

import pytest
import rfc8785

from reviews.audit import GENESIS, Actor, record_event
from reviews.models import AuditEvent, DenialTally
from tests.conftest import _persona

pytestmark = pytest.mark.django_db


def _append(run, n, *, actor="command:test", action="test.step"):
    for i in range(n):
        record_event(run=run, actor=Actor(actor), action=action, object_type="run", object_id=run.run_id,
                     before={"i": i - 1} if i else None, after={"i": i, "x": 0.5, "text": "é <b>"})


def _all_pages(client, url, **params):
    events, page = [], 1
    while True:
        body = client.get(url, {**params, "page": page}).json()
        events += body["results"]
        if not body["next"]:
            return events, body["count"]
        page += 1


def test_it_lists_a_runs_events_oldest_first_with_their_chain_hashes(auditor, run_factory):
    run = run_factory()
    _append(run, 2)
    response = auditor.get(f"/api/runs/{run.run_id}/audit/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3 and [e["seq"] for e in body["results"]] == [1, 2, 3]
    first, second = body["results"][0], body["results"][1]
    assert set(first) == {"id", "seq", "actor", "action", "object_type", "object_id", "before", "after",
                          "created_at", "prev_hash", "hash", "salt", "signature"}
    assert len(first["salt"]) == 32 and first["signature"]
    assert (first["action"], first["actor"], first["object_type"], first["object_id"]) == (
        "run.created", "command:test", "run", run.run_id)
    assert first["prev_hash"] == GENESIS and second["prev_hash"] == first["hash"]
    assert second["after"] == {"i": 0, "x": 0.5, "text": "é <b>"}


def test_it_pages_the_events_and_keeps_them_in_order_across_pages(auditor, run_factory):
    run = run_factory()
    _append(run, 120)
    body = auditor.get(f"/api/runs/{run.run_id}/audit/").json()
    assert body["count"] == 121 and len(body["results"]) == 50 and body["previous"] is None
    assert "page=2" in body["next"]
    events, count = _all_pages(auditor, f"/api/runs/{run.run_id}/audit/")
    assert [e["seq"] for e in events] == list(range(1, 122))
    small = auditor.get(f"/api/runs/{run.run_id}/audit/", {"page_size": 10, "page": 3}).json()
    assert [e["seq"] for e in small["results"]] == list(range(21, 31))


def test_it_filters_by_actor_and_by_action(auditor, run_factory):
    run = run_factory()
    _append(run, 2, actor="token:agent-1", action="member.uploaded")
    _append(run, 1, actor="user:reviewer-1", action="mapping.decided")
    _append(run, 1, actor="token:agent-1", action="mapping.proposed")
    url = f"/api/runs/{run.run_id}/audit/"
    by_agent = auditor.get(url, {"actor": "token:agent-1"}).json()
    assert [(e["seq"], e["action"]) for e in by_agent["results"]] == [
        (2, "member.uploaded"), (3, "member.uploaded"), (5, "mapping.proposed")]
    assert [e["seq"] for e in auditor.get(url, {"action": "mapping.decided"}).json()["results"]] == [4]
    both = auditor.get(url, {"actor": "token:agent-1", "action": "mapping.proposed"}).json()
    assert [e["seq"] for e in both["results"]] == [5]
    assert auditor.get(url, {"actor": "nobody"}).json()["count"] == 0


def test_a_client_can_recompute_the_chain_from_the_api_alone(auditor, run_factory):
    run = run_factory()
    _append(run, 3)
    record_event(run=run, actor=Actor("token:agent-1"), action="test.awkward", object_type="run",
                 object_id=run.run_id, after={"float": 0.1, "big": 1e16, "unicode": "日本 𝄞", "nested": {"b": [1, 2.0]}})
    events, _ = _all_pages(auditor, f"/api/runs/{run.run_id}/audit/")
    prev = GENESIS
    for event in events:
        payload = {k: event[k] for k in ("seq", "actor", "action", "object_type", "object_id", "before", "after",
                                          "created_at", "prev_hash", "salt")} | {"run": run.run_id}
        assert event["prev_hash"] == prev
        assert hashlib.sha256(prev.encode() + rfc8785.dumps(payload)).hexdigest() == event["hash"]
        prev = event["hash"]


def test_verify_reports_an_intact_chain_with_its_length(auditor, run_factory):
    run = run_factory()
    _append(run, 4)
    response = auditor.get(f"/api/runs/{run.run_id}/audit/verify/")
    assert response.status_code == 200 and response.json() == {
        "ok": True, "events": 5, "signatures": {"signed": 5, "unsigned_history": 0, "failures": []}}


# Access: who may read a run's trail.

def test_auditors_reviewers_and_admins_read_any_run(auditor, reviewer, run_factory):
    run = run_factory()
    admin = _persona("admin-1", "admin")
    for client in (auditor, reviewer, admin):
        assert client.get(f"/api/runs/{run.run_id}/audit/").status_code == 200
        assert client.get(f"/api/runs/{run.run_id}/audit/verify/").status_code == 200


def test_an_agent_reads_the_trail_of_a_run_it_created(agent):
    created = agent.post("/api/runs/", {
        "run_id": "AAS-2026-09-25-supermemory-02", "system": "Supermemory", "title": "t", "run_date": "2026-09-25",
        "reviewed_boundary": "0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f"}, format="json")
    assert created.status_code == 201
    assert agent.get("/api/runs/AAS-2026-09-25-supermemory-02/audit/").status_code == 200


def test_an_agent_reads_the_trail_of_a_run_it_uploaded_to(agent, run_factory):
    run = run_factory()  # created by a command, not by the agent
    uploaded = agent.post(f"/api/runs/{run.run_id}/members/", {"role": "workflow", "content": "# Workflow\n"},
                          format="json")
    assert uploaded.status_code == 201, uploaded.content
    body = agent.get(f"/api/runs/{run.run_id}/audit/", {"action": "member.uploaded"}).json()
    assert [e["actor"] for e in body["results"]] == ["token:agent-1"]


def test_another_agent_is_refused_and_the_denial_is_audited(agent, run_factory):
    run = run_factory()
    record_event(run=run, actor=Actor("token:agent-1"), action="member.uploaded", object_type="member_version",
                 object_id=1)
    other = _persona("agent-2", "agent")
    for url in (f"/api/runs/{run.run_id}/audit/", f"/api/runs/{run.run_id}/audit/verify/"):
        response = other.get(url)
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "permission_denied"
        assert "agent that took part" in response.json()["error"]["message"]
    # On the run-less chain, naming the run: an agent outside the run writes nothing to its trail (issue 36).
    denials = AuditEvent.objects.filter(run=None, object_id=run.run_id, action="permission.denied",
                                        actor="token:agent-2")
    assert not AuditEvent.objects.filter(run=run, action="permission.denied").exists()
    # The two denials within a minute are one event, its count kept beside it (issue 24: folded denials).
    assert denials.count() == 1 and denials.first().after == {"attempted": "read audit", "roles": ["agent"],
                                                             "count": 1, "fold_seconds": 60}
    assert DenialTally.objects.get(run=run, actor="token:agent-2").count == 2
    # A denial is not taking part: asking again does not open the trail.
    assert other.get(f"/api/runs/{run.run_id}/audit/").status_code == 403
    assert agent.get(f"/api/runs/{run.run_id}/audit/").status_code == 200


def test_a_user_without_a_role_is_refused_and_anonymous_callers_get_401(outsider, anonymous, run_factory):
    run = run_factory()
    assert outsider.get(f"/api/runs/{run.run_id}/audit/").status_code == 403
    assert AuditEvent.objects.filter(run=run, action="permission.denied", actor="user:outsider-1").count() == 1
    response = anonymous.get(f"/api/runs/{run.run_id}/audit/verify/")
    assert response.status_code == 401 and response.json()["error"]["code"] == "not_authenticated"


def test_an_unknown_run_is_404_with_the_error_shape(auditor):
    response = auditor.get("/api/runs/AAS-2026-01-01-nope-01/audit/")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_a_page_past_the_end_is_404_not_500(auditor, run_factory):
    run = run_factory()
    for page in ("99", "junk"):
        assert auditor.get(f"/api/runs/{run.run_id}/audit/", {"page": page}).status_code == 404

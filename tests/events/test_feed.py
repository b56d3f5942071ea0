"""GET /api/events/: the audit events that concern the caller as a cursor feed (DESIGN §4, §13)."""
from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from events.feed import EVENT_TYPES, Cursor, event_types
from reviews.actions import Action
from reviews.audit import Actor, record_event
from reviews.models import AuditEvent

ACTOR = Actor.command("test")


def test_it_names_the_validation_of_a_member_set_by_what_it_did_to_the_run():
    assert event_types("run.validated", {"errors": 0}) == ("member.validated",)
    assert event_types("run.validated", {"run_status": {"after": "in_review"}}) == ("member.validated", "run.in_review")
    assert event_types("run.validated", {"run_status": {"after": "failed"}}) == ("run.failed",)
    assert event_types("run.finalized", None) == ("run.final",)
    assert event_types("correction.requested", None) == ("correction.requested",)
    assert event_types("member.uploaded", None) == ("member.uploaded",)


def test_the_types_and_names_come_from_the_vocabulary_as_the_hand_tables_had_them():
    # The API lists EVENT_TYPES in this order (a refusal's message, the schema's help text).
    assert EVENT_TYPES == (
        "member.validated", "run.in_review", "correction.requested", "correction.replied", "correction.resolved",
        "correction.reopened", "correction.withdrawn", "run.approved", "run.final", "run.failed", "webhook.disabled")
    renamed = {"run.finalized": ("run.final",), "run.finalize_failed": ("run.failed",),
               "run.reopened": ("run.reopened", "run.in_review"), "pass.decided": (),
               "run.validated": ("member.validated",)}
    for action in Action:
        assert event_types(action.value, None) == renamed.get(action.value, (action.value,))
        assert all(type(name) is str for name in event_types(action.value, None))
    assert event_types("test.step", None) == ("test.step",)


def test_it_refuses_a_cursor_it_did_not_hand_out():
    assert Cursor.parse("") == Cursor(0, 0)
    assert Cursor.parse(str(Cursor(12, 345))) == Cursor(12, 345)
    for junk in ("12", "a-b", "1-2-3", "-1-2"):
        with pytest.raises(ValueError):
            Cursor.parse(junk)


def read_all(client, *, limit=7, after="", **params):
    seen, cursor = [], after
    while True:
        body = client.get("/api/events/", {"after": cursor, "limit": limit, **params}).json()
        seen += body["events"]
        cursor = body["next"]
        if not body["has_more"]:
            return seen, cursor


@pytest.mark.django_db(transaction=True)
def test_it_pages_oldest_first_with_the_audit_event_as_payload(reviewer, run_factory):
    run = run_factory()
    record_event(run=run, actor=ACTOR, action="correction.requested", object_type="correction_request", object_id=1,
                 after={"text": "cite it"})
    events, cursor = read_all(reviewer, limit=1)
    mine = [e for e in events if e["data"]["run"] == run.run_id]
    assert [e["type"] for e in mine] == ["run.created", "correction.requested"]
    last = AuditEvent.objects.get(run=run, action="correction.requested")
    data = mine[-1]["data"]
    assert (data["id"], data["seq"], data["actor"], data["object"]) == (
        last.pk, 2, "command:test", {"type": "correction_request", "id": "1"})
    assert data["chain"] == {"seq": 2, "prev_hash": last.prev_hash, "hash": last.hash}
    assert data["links"]["corrections"] == f"/api/runs/{run.run_id}/corrections/"
    assert reviewer.get("/api/events/", {"after": cursor}).json()["events"] == []


@pytest.mark.django_db(transaction=True)
def test_it_shows_an_agent_only_the_runs_it_took_part_in(agent, reviewer, run_factory):
    theirs, mine = run_factory(created_by=None), run_factory(created_by=None)
    record_event(run=mine, actor=Actor("token:agent-1", agent.user.pk), action="member.uploaded",
                 object_type="member_version", object_id="runtime/v1")
    runs = {e["data"]["run"] for e in read_all(agent)[0]}
    assert mine.run_id in runs and theirs.run_id not in runs
    assert {mine.run_id, theirs.run_id} <= {e["data"]["run"] for e in read_all(reviewer)[0]}


@pytest.mark.django_db(transaction=True)
def test_it_answers_400_on_a_bad_cursor_or_limit_and_403_without_a_role(reviewer, outsider):
    assert reviewer.get("/api/events/", {"after": "nope"}).json()["error"]["code"] == "invalid_cursor"
    assert reviewer.get("/api/events/", {"limit": "9999"}).status_code == 400
    assert outsider.get("/api/events/").status_code == 403


@pytest.mark.django_db(transaction=True)
def test_it_skips_and_repeats_nothing_while_writers_commit_out_of_order(reviewer, run_factory):
    """Two writers on two runs: the slow one takes its event id first and commits after the fast one.

    A cursor over ids alone would pass the slow event's id once it saw the fast one's and never
    serve it; this feed holds the fast event back until the slow transaction has ended.
    """
    if connection.vendor != "postgresql":
        pytest.skip("the commit-order race needs concurrent writers (SQLite serialises them)")
    slow_run, fast_run = run_factory(), run_factory()
    _seen, start = read_all(reviewer, limit=50)
    written: list[int] = []
    stop = threading.Event()

    def writer(run, hold: float, count: int):
        try:
            for n in range(count):
                with transaction.atomic():
                    event = record_event(run=run, actor=ACTOR, action="member.uploaded",
                                         object_type="member_version", object_id=f"runtime/v{n}")
                    time.sleep(hold)  # the id is taken; the commit comes later
                written.append(event.pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(slow_run, 0.03, 25)),
               threading.Thread(target=writer, args=(fast_run, 0.0, 80))]
    for thread in threads:
        thread.start()
    seen, cursor = [], start
    while not stop.is_set():
        done = not any(t.is_alive() for t in threads)
        page, cursor = read_all(reviewer, limit=3, after=cursor)
        seen += [e["data"]["id"] for e in page]
        if done:
            stop.set()
    for thread in threads:
        thread.join()
    seen += [e["data"]["id"] for e in read_all(reviewer, after=cursor)[0]]
    assert len(seen) == len(set(seen)), "an event was served twice"
    assert sorted(seen) == sorted(written), "an event was skipped"

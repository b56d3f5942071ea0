"""The audit chain: canonical form, append-only storage, tamper detection, verify_audit, the timeline page."""
from __future__ import annotations

import hashlib
import io
import json
from datetime import date, datetime, timezone as dt_timezone
from decimal import Decimal
from uuid import UUID

import pytest
import rfc8785
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from reviews.audit import GENESIS, Actor, canonical_json, chain_payload, plain_json, record_event, verify_chain
from reviews.models import AuditEvent

TRIGGER = "reviews_auditevent_append_only"


def _append(run, n=1, **fields):
    events = []
    for i in range(n):
        events.append(record_event(
            run=run, actor=fields.get("actor", Actor.command("test")), action=fields.get("action", "test.step"),
            object_type=fields.get("object_type", "run"), object_id=fields.get("object_id", run.run_id if run else "-"),
            before=fields.get("before"), after=fields.get("after", {"i": i})))
    return events


def _raw(sql, params=()):
    """Raw SQL with the append-only trigger switched off for this statement, as an intruder with owner rights would."""
    with transaction.atomic(), connection.cursor() as cursor:
        # Rows inserted in this test's transaction have deferred FK checks pending; ALTER TABLE needs none.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"ALTER TABLE reviews_auditevent DISABLE TRIGGER {TRIGGER}")
        cursor.execute(sql, params)
        cursor.execute(f"ALTER TABLE reviews_auditevent ENABLE TRIGGER {TRIGGER}")


# The canonical form, as the module docstring states it (pure: no database).

def test_the_canonical_form_sorts_keys_drops_whitespace_and_writes_utf8():
    assert canonical_json({"b": 1, "a": [1.0, "é"], "€": None}) == '{"a":[1,"é"],"b":1,"€":null}'.encode("utf-8")


def test_the_canonical_form_writes_numbers_as_ecmascript_does():
    assert canonical_json([1.0, 0.1, -0.0, 1e16, 1e21, 1.5e-7]) == b"[1,0.1,0,10000000000000000,1e+21,1.5e-7]"


def test_the_hash_is_sha256_of_the_previous_hash_and_the_canonical_json():
    payload = {"run": None, "seq": 1, "actor": "command:test", "action": "x", "object_type": "t", "object_id": "1",
               "before": None, "after": {"z": 1, "a": "ü"}, "created_at": "2026-09-25T10:00:00.000001+00:00",
               "prev_hash": GENESIS}
    expected = hashlib.sha256(GENESIS.encode() + rfc8785.dumps(payload)).hexdigest()
    from reviews.audit import event_hash

    assert event_hash(GENESIS, payload) == expected


def test_plain_json_writes_what_jsonb_and_rfc8785_cannot_carry_as_strings():
    value = {"nan": float("nan"), "inf": float("inf"), "ninf": float("-inf"), "big": 2**64, "bigf": 2.0**64,
             "nul": "a\x00b", "surrogate": "x\ud800y", 1: (1, 2), "set": {3, 1, 2}}
    assert plain_json(value) == {
        "nan": "NaN", "inf": "Infinity", "ninf": "-Infinity", "big": "18446744073709551616",
        "bigf": "1.8446744073709552e+19", "nul": "a\ufffdb", "surrogate": "x\ufffdy", "1": [1, 2], "set": [1, 2, 3]}


def test_plain_json_writes_dates_decimals_and_uuids_as_django_does():
    when = datetime(2026, 9, 25, 10, 0, 0, 123456, tzinfo=dt_timezone.utc)
    assert plain_json([date(2026, 9, 25), when, Decimal("1.10"), UUID(int=1)]) == [
        "2026-09-25", "2026-09-25T10:00:00.123Z", "1.10", "00000000-0000-0000-0000-000000000001"]


# What is hashed survives the round trip through PostgreSQL jsonb.

AWKWARD = [
    pytest.param(0.1, 0.1, id="float"),
    pytest.param(9007199254740991.0, 9007199254740991.0, id="largest-safe-float"),
    # jsonb would hand these back as integers beyond what JCS carries: stored as their repr.
    pytest.param(1e16, "1e+16", id="large-integral-float"),
    pytest.param(1e300, "1e+300", id="huge-float"),
    pytest.param(-123456789012345680000.0, "-1.2345678901234568e+20", id="float-beyond-2^53"),
    pytest.param(5e-324, 5e-324, id="subnormal"),
    pytest.param(-0.0, 0.0, id="negative-zero"),
    pytest.param(2.0, 2.0, id="integral-float"),
    pytest.param(2**53 - 1, 2**53 - 1, id="largest-safe-int"),
    pytest.param(2**64, "18446744073709551616", id="int-beyond-2^53"),
    pytest.param(float("nan"), "NaN", id="nan"),
    pytest.param("é 𝄞 \u2028 \u00a0 日本 <script>", "é 𝄞 \u2028 \u00a0 日本 <script>", id="unicode"),
    pytest.param("nul\x00byte", "nul\ufffdbyte", id="nul"),
    pytest.param({"z": {"b": [1, {"y": None, "x": True}], "a": ""}, "": "empty key"},
                 {"z": {"b": [1, {"y": None, "x": True}], "a": ""}, "": "empty key"}, id="nested"),
    pytest.param(datetime(2026, 9, 25, 10, 0, 0, 999999, tzinfo=dt_timezone.utc), "2026-09-25T10:00:00.999Z",
                 id="datetime"),
    pytest.param([], [], id="empty-list"),
    pytest.param("", "", id="empty-string"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("value", "stored"), AWKWARD)
def test_it_verifies_awkward_values_after_the_jsonb_round_trip(run_factory, value, stored):
    run = run_factory()
    record_event(run=run, actor=Actor.command("test"), action="test.awkward", object_type="run",
                 object_id=run.run_id, before={"v": value}, after=value)
    event = AuditEvent.objects.get(run=run, seq=2)  # fresh from the database
    assert event.after == stored and event.before == {"v": stored}
    assert verify_chain(run).ok


@pytest.mark.django_db
def test_each_event_links_to_the_previous_one_and_recomputes_from_the_stored_row(run_factory):
    run = run_factory()
    first, second = AuditEvent.objects.get(run=run, seq=1), _append(run)[0]
    assert first.prev_hash == GENESIS and second.prev_hash == first.hash
    stored = AuditEvent.objects.select_related("run").get(pk=second.pk)
    assert stored.hash == hashlib.sha256(first.hash.encode() + canonical_json(chain_payload(stored))).hexdigest()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("token_state", ["revoked", "deleted"])
def test_an_event_of_a_revoked_or_deleted_token_is_refused_by_its_own_insert(run_factory, token_state):
    """On PostgreSQL the token is re-checked by the statement that inserts the event (no statement of its own):
    refused, the event and the change it records roll back together, and the chain head stays."""
    from reviews.audit import TokenRevoked
    from reviews.models import ApiToken, Run
    from reviews.services import issue_token, revoke_token

    run = run_factory()
    token, _key = issue_token(name="agent-x", role="agent", actor=Actor.command("test"))
    actor = Actor(label="token:agent-x", user_id=token.user_id, token_id=token.pk)
    kept = _append(run, actor=actor)[0]  # a live token: written
    head = Run.objects.values_list("audit_head_seq", "audit_head_hash").get(pk=run.pk)
    if token_state == "revoked":
        revoke_token(token=token, actor=Actor.command("test"))
    else:
        ApiToken.objects.filter(pk=token.pk).delete()
    with pytest.raises(TokenRevoked), transaction.atomic():
        Run.objects.filter(pk=run.pk).update(title="changed under a dead token")
        _append(run, actor=actor)
    assert list(AuditEvent.objects.filter(run=run, actor="token:agent-x").values_list("pk", flat=True)) == [kept.pk]
    assert Run.objects.values_list("audit_head_seq", "audit_head_hash", "title").get(pk=run.pk)[:2] == head
    assert Run.objects.get(pk=run.pk).title != "changed under a dead token"
    assert verify_chain(run).ok


@pytest.mark.django_db(transaction=True)
def test_the_token_is_re_checked_without_a_statement_of_its_own(run_factory):
    from django.test.utils import CaptureQueriesContext

    from reviews.services import issue_token

    run = run_factory()
    token, _key = issue_token(name="agent-y", role="agent", actor=Actor.command("test"))
    with CaptureQueriesContext(connection) as plain:
        _append(run)
    with CaptureQueriesContext(connection) as with_token:
        _append(run, actor=Actor(label="token:agent-y", user_id=token.user_id, token_id=token.pk))
    assert len(with_token.captured_queries) == len(plain.captured_queries)
    assert any("FOR SHARE" in q["sql"] and "INSERT" in q["sql"] for q in with_token.captured_queries)


@pytest.mark.django_db
def test_events_without_a_run_form_a_chain_of_their_own(run_factory):
    run_factory()
    _append(None, 2)
    events = list(AuditEvent.objects.filter(run__isnull=True).order_by("seq"))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert verify_chain(None).ok and verify_chain(None).events == len(events)


# Append-only, refused by the database itself.

@pytest.mark.django_db
@pytest.mark.parametrize("sql", [
    "UPDATE reviews_auditevent SET after = '{\"edited\": true}'::jsonb",
    "UPDATE reviews_auditevent SET hash = hash",
    "DELETE FROM reviews_auditevent",
    "TRUNCATE reviews_auditevent CASCADE",
])
def test_the_database_refuses_to_change_or_remove_events(run_factory, sql):
    run = run_factory()
    with pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # else ALTER/TRUNCATE stop at pending FK checks
            # tests/conftest.py lets the test database be flushed; put the production guard back.
            cursor.execute("ALTER TABLE reviews_auditevent ENABLE TRIGGER reviews_auditevent_no_truncate")
            cursor.execute(sql)
    assert AuditEvent.objects.filter(run=run).count() == 1 and verify_chain(run).ok


@pytest.mark.django_db
def test_the_orm_cannot_update_or_delete_events_either(run_factory):
    run = run_factory()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(run=run).update(actor="user:mallory")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(run=run).delete()


# Tampering is found and the first broken event named.

@pytest.mark.django_db
def test_it_names_the_event_whose_after_was_edited(run_factory):
    run = run_factory()
    events = _append(run, 4)
    target = events[1]  # seq 3
    _raw("UPDATE reviews_auditevent SET after = %s::jsonb WHERE id = %s", [json.dumps({"i": 99}), target.pk])
    check = verify_chain(run)
    assert (check.ok, check.broken_seq, check.broken_event_id) == (False, 3, target.pk)
    assert "does not match its hash" in check.reason


@pytest.mark.django_db
def test_it_names_an_edit_that_recomputed_the_hash_at_the_next_event(run_factory):
    run = run_factory()
    events = _append(run, 3)
    _raw("UPDATE reviews_auditevent SET hash = %s WHERE id = %s", ["f" * 64, events[0].pk])
    check = verify_chain(run)
    # The row's own hash no longer matches; had the intruder recomputed it, seq 3's prev_hash would not.
    assert (check.broken_seq, check.broken_event_id) == (2, events[0].pk)


@pytest.mark.django_db
def test_it_names_a_deleted_middle_event_as_a_sequence_gap(run_factory):
    run = run_factory()
    events = _append(run, 4)  # seq 2..5
    _raw("DELETE FROM reviews_auditevent WHERE id = %s", [events[1].pk])  # seq 3
    check = verify_chain(run)
    assert (check.ok, check.broken_seq, check.broken_event_id) == (False, 4, events[2].pk)
    assert "sequence gap" in check.reason and "#3" in check.reason


@pytest.mark.django_db
def test_a_tampered_value_that_json_cannot_carry_is_reported_not_raised(run_factory):
    run = run_factory()
    event = _append(run)[0]
    _raw("UPDATE reviews_auditevent SET after = '{\"i\": 123456789012345678901234567890}'::jsonb WHERE id = %s",
         [event.pk])
    check = verify_chain(run)
    assert (check.ok, check.broken_seq, check.broken_event_id) == (False, 2, event.pk)
    assert "cannot be canonicalised" in check.reason


@pytest.mark.django_db
def test_a_tampered_chain_is_named_by_the_verify_api_and_the_command(run_factory, auditor):
    run = run_factory()
    events = _append(run, 3)
    _raw("UPDATE reviews_auditevent SET after = '{\"i\": \"forged\"}'::jsonb WHERE id = %s", [events[1].pk])

    body = auditor.get(f"/api/runs/{run.run_id}/audit/verify/").json()
    assert body == {"ok": False, "broken_seq": 3, "broken_event_id": events[1].pk,
                    "reason": "content does not match its hash (edited)",
                    "signatures": {"signed": 2, "unsigned_history": 0, "failures": []}}  # the events read before

    out = io.StringIO()
    with pytest.raises(CommandError, match="1 of 1 audit chain broken") as raised:
        call_command("verify_audit", run.run_id, stdout=out)
    assert raised.value.returncode == 1
    assert out.getvalue() == (f"BROKEN {run.run_id} at event #3 (id {events[1].pk}): "
                              "content does not match its hash (edited)\n")


# python manage.py verify_audit

@pytest.mark.django_db
def test_verify_audit_reports_every_chain_including_the_one_without_a_run(run_factory):
    first, second = run_factory(), run_factory()
    _append(second, 2)
    _append(None, 1)
    _append(None, 1)
    out = io.StringIO()
    call_command("verify_audit", stdout=out)
    assert out.getvalue().splitlines() == [
        f"OK {first.run_id} (1 event)", f"OK {second.run_id} (3 events)", "OK (no run: tokens) (2 events)"]


@pytest.mark.django_db
def test_verify_audit_checks_one_run_when_named(run_factory):
    run_factory()
    run = run_factory()
    out = io.StringIO()
    call_command("verify_audit", run.run_id, stdout=out)
    assert out.getvalue() == f"OK {run.run_id} (1 event)\n"


@pytest.mark.django_db
def test_verify_audit_goes_on_past_a_broken_chain_and_fails_at_the_end(run_factory):
    broken, fine = run_factory(), run_factory()
    event = _append(broken)[0]
    _raw("DELETE FROM reviews_auditevent WHERE id = %s", [AuditEvent.objects.get(run=broken, seq=1).pk])
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("verify_audit", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == (f"BROKEN {broken.run_id} at event #2 (id {event.pk}): "
                        "sequence gap: expected event #1, found #2 (events deleted)")
    assert lines[1] == f"OK {fine.run_id} (1 event)"


@pytest.mark.django_db
def test_verify_audit_refuses_an_unknown_run():
    with pytest.raises(CommandError, match="unknown run 'AAS-2026-01-01-nope-01'"):
        call_command("verify_audit", "AAS-2026-01-01-nope-01", stdout=io.StringIO())


# The timeline page /runs/<run_id>/audit/

@pytest.fixture
def browser(client, reviewer):
    client.force_login(reviewer.user)
    return client


@pytest.mark.django_db
def test_the_timeline_shows_who_what_when_and_the_chain_check(browser, run_factory):
    run = run_factory()
    _append(run, 1, actor=Actor("token:agent-1"), action="mapping.proposed", object_type="mapping", object_id=7,
             before={"state": "none"}, after={"state": "proposed"})
    response = browser.get(f"/runs/{run.run_id}/audit/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Chain verified: 2 events" in html
    assert "token:agent-1" in html and "mapping.proposed" in html and "command:test" in html
    # What was done in words (reviews.actions), the action's code in the tooltip.
    assert '<td data-label="What"><span class="action" title="mapping.proposed">proposed a mapping</span></td>' in html
    # Named in words, the database id only in the tooltip (issue 22).
    assert f'href="/runs/{run.run_id}/reconcile/" title="mapping 7">a mapping no longer in the run</a>' in html
    assert f'href="/runs/{run.run_id}/" title="run {run.run_id}">run {run.run_id}</a>' in html
    # Before → after as the list of changed fields (reviews/audit_diff.py).
    assert ('<li class="change-changed"><span class="field" title="state">state</span><del>none</del>'
            '<span class="arrow" aria-label="becomes">→</span><ins>proposed</ins></li>') in html
    event = AuditEvent.objects.get(run=run, seq=2)
    assert f'title="{event.hash}">{event.hash[:12]}</span>' in html


@pytest.mark.django_db
def test_the_timeline_escapes_report_text_in_before_and_after(browser, run_factory):
    run = run_factory()
    _append(run, 1, before={"label": "<script>alert(1)</script>"}, after="</code><b>x</b>")
    html = browser.get(f"/runs/{run.run_id}/audit/").content.decode()
    assert "<script>alert(1)" not in html and "<b>x</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;/code&gt;&lt;b&gt;x&lt;/b&gt;" in html


@pytest.mark.django_db
def test_the_timeline_filters_by_actor_and_action_from_select_lists(browser, run_factory):
    run = run_factory()
    _append(run, 2, actor=Actor("token:agent-1"), action="member.uploaded")
    _append(run, 1, actor=Actor("user:reviewer-1"), action="mapping.decided")
    html = browser.get(f"/runs/{run.run_id}/audit/", {"actor": "token:agent-1"}).content.decode()
    assert html.count("<tr id=\"event-") == 2 and 'title="mapping.decided">mapping.decided</span>' not in html
    assert '<option value="user:reviewer-1">user:reviewer-1</option>' in html
    assert '<option value="token:agent-1" selected>token:agent-1</option>' in html
    html = browser.get(f"/runs/{run.run_id}/audit/", {"action": "mapping.decided"}).content.decode()
    assert html.count("<tr id=\"event-") == 1 and 'id="event-4"' in html
    # A code the vocabulary does not know is shown as it is.
    assert '<span class="action" title="mapping.decided">mapping.decided</span>' in html
    html = browser.get(f"/runs/{run.run_id}/audit/", {"action": "mapping.decided", "actor": "token:agent-1"}).content
    assert b"No events match these filters." in html


@pytest.mark.django_db
def test_the_timeline_returns_only_the_table_for_htmx(browser, run_factory):
    run = run_factory()
    response = browser.get(f"/runs/{run.run_id}/audit/", {"action": "run.created"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="timeline">') and "<html" not in html and "Chain verified" not in html
    assert 'id="event-1"' in html


@pytest.mark.django_db
def test_the_timeline_pages_by_a_hundred_events_oldest_first(browser, run_factory):
    run = run_factory()
    _append(run, 149)
    first = browser.get(f"/runs/{run.run_id}/audit/").content.decode()
    assert first.count('<tr id="event-') == 100 and 'id="event-1"' in first and 'id="event-101"' not in first
    assert "page 1 of 2 (150 events)" in first and 'href="?page=2"' in first
    second = browser.get(f"/runs/{run.run_id}/audit/", {"page": 2, "action": "test.step"}).content.decode()
    assert second.count('<tr id="event-') == 49 and 'href="?action=test.step&amp;page=1"' in second


@pytest.mark.django_db
def test_the_timeline_banner_names_the_first_broken_event(browser, run_factory):
    run = run_factory()
    events = _append(run, 2)
    _raw("UPDATE reviews_auditevent SET actor = 'user:someone-else' WHERE id = %s", [events[0].pk])
    html = browser.get(f"/runs/{run.run_id}/audit/").content.decode()
    assert f"Chain BROKEN at event #2 (id {events[0].pk}): content does not match its hash (edited)" in html


@pytest.mark.django_db
def test_the_timeline_needs_a_login_and_a_role(client, outsider, run_factory):
    run = run_factory()
    response = client.get(f"/runs/{run.run_id}/audit/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    client.force_login(outsider.user)
    assert client.get(f"/runs/{run.run_id}/audit/").status_code == 403
    assert AuditEvent.objects.filter(run=run, action="permission.denied", actor="user:outsider-1").count() == 1


@pytest.mark.django_db
def test_the_timeline_answers_404_for_an_unknown_run(browser):
    assert browser.get("/runs/AAS-2026-01-01-nope-01/audit/").status_code == 404


# lock_run: the lock every writer of a run takes first.

@pytest.mark.django_db(transaction=True)
def test_lock_run_reads_the_run_fresh_by_its_row_or_its_run_id(run_factory):
    from reviews.audit import lock_run
    from reviews.models import Run

    run = run_factory()
    Run.objects.filter(pk=run.pk).update(title="changed elsewhere")
    with transaction.atomic():
        by_row, by_id = lock_run(run), lock_run(run.run_id)
    assert by_row.pk == by_id.pk == run.pk and by_row.title == by_id.title == "changed elsewhere"
    with transaction.atomic(), pytest.raises(Run.DoesNotExist):
        lock_run("AAS-2026-01-01-nothing-here-01")


@pytest.mark.django_db(transaction=True)
def test_lock_run_outside_a_transaction_is_refused(run_factory):
    from reviews.audit import lock_run

    with pytest.raises(transaction.TransactionManagementError):
        lock_run(run_factory())

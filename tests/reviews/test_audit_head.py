"""The trail cannot be cut short (DESIGN §8): the run row's chain head, denial folding, the app's database role."""
from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from reviews.audit import FOLD_SECONDS, GENESIS, Actor, chain_head, record_denial, record_event, verify_chain
from reviews.db_roles import app_role_grants
from reviews.models import AuditEvent, DenialTally, Run
from tests.reviews.test_audit import TRIGGER, _append

pytestmark = pytest.mark.django_db


def _cut_last(run, n: int) -> None:
    """Delete the last n events as an intruder with the owner's rights would, the trigger off for it."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"ALTER TABLE reviews_auditevent DISABLE TRIGGER {TRIGGER}")
        cursor.execute("DELETE FROM reviews_auditevent WHERE id IN (SELECT id FROM reviews_auditevent "
                       "WHERE run_id = %s ORDER BY seq DESC LIMIT %s)", [run.pk, n])
        cursor.execute(f"ALTER TABLE reviews_auditevent ENABLE TRIGGER {TRIGGER}")


def test_the_run_row_keeps_the_last_events_seq_and_hash(run_factory):
    run = run_factory()
    events = _append(run, 3)
    assert chain_head(run) == (events[-1].seq, events[-1].hash)
    assert Run.objects.values_list("audit_head_seq", "audit_head_hash").get(pk=run.pk) == (events[-1].seq,
                                                                                          events[-1].hash)
    assert (run.audit_head_seq, run.audit_head_hash) == (events[-1].seq, events[-1].hash)


def test_a_run_without_events_has_the_genesis_head():
    fresh = Run.objects.create(run_id="AAS-2026-01-02-empty-01", system="s", title="t", run_date="2026-01-02",
                               reviewed_boundary="0" * 40)
    assert chain_head(fresh) == (0, GENESIS)
    assert verify_chain(fresh).ok


def test_the_head_rolls_back_with_the_event(run_factory):
    run = run_factory()
    before = chain_head(run)
    with pytest.raises(RuntimeError), transaction.atomic():
        _append(run, 1)
        raise RuntimeError("the change the event records failed")
    assert chain_head(run) == before


def test_a_trail_cut_at_its_end_no_longer_matches_its_head(run_factory):
    run = run_factory()
    events = _append(run, 5)
    _cut_last(run, 3)
    check = verify_chain(run)
    first_missing = events[-3].seq
    assert not check.ok
    assert check.broken_seq == first_missing and check.broken_event_id is None
    assert f"chain head is event #{events[-1].seq}" in check.reason and "trail cut at its end" in check.reason


def test_verify_audit_and_the_api_name_the_cut(run_factory, auditor):
    run = run_factory()
    _append(run, 4)
    _cut_last(run, 2)
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("verify_audit", run.run_id, stdout=out)
    assert "trail cut at its end" in out.getvalue()
    report = auditor.get(f"/api/runs/{run.run_id}/audit/verify/").json()
    assert report["ok"] is False and "trail cut at its end" in report["reason"]


def test_events_after_a_cut_never_reuse_the_freed_sequence_numbers(run_factory):
    run = run_factory()
    events = _append(run, 4)
    _cut_last(run, 2)
    later = _append(run, 1)[0]
    assert later.seq == events[-1].seq + 1 and later.prev_hash == events[-1].hash
    check = verify_chain(run)
    assert not check.ok and "sequence gap" in check.reason


def test_fifty_denials_in_a_second_add_one_event_with_a_count(run_factory):
    run = run_factory()
    outsider = Actor("token:outsider")
    before = AuditEvent.objects.filter(run=run).count()
    for _ in range(50):
        record_denial(run=run, actor=outsider, attempted="member.upload", roles=[])
    events = AuditEvent.objects.filter(run=run, action="permission.denied")
    assert events.count() == 1 and AuditEvent.objects.filter(run=run).count() == before + 1
    assert events.get().after == {"attempted": "member.upload", "roles": [], "count": 1, "fold_seconds": 60}
    tally = DenialTally.objects.get(run=run, actor="token:outsider")
    assert (tally.count, tally.attempts) == (50, {"member.upload": 50})
    assert verify_chain(run).ok


def test_a_later_window_writes_a_new_event_carrying_the_previous_count(run_factory):
    run = run_factory()
    outsider = Actor("token:outsider")
    for _ in range(3):
        first = record_denial(run=run, actor=outsider, attempted="mapping.decide", roles=["agent"])
    DenialTally.objects.filter(run=run).update(window_start=timezone.now() - timedelta(seconds=FOLD_SECONDS + 1))
    second = record_denial(run=run, actor=outsider, attempted="run.approve", roles=["agent"])
    assert second.pk != first.pk
    assert second.after["previous_window"]["count"] == 3
    assert second.after["previous_window"]["attempts"] == {"mapping.decide": 3}
    assert second.after["previous_window"]["event_seq"] == first.seq


def test_denials_of_two_callers_fold_separately(run_factory):
    run = run_factory()
    for name in ("token:a", "token:b", "token:a", "token:b"):
        record_denial(run=run, actor=Actor(name), attempted="member.upload", roles=[])
    assert sorted(AuditEvent.objects.filter(run=run, action="permission.denied").values_list("actor", flat=True)) == [
        "token:a", "token:b"]


def test_a_flood_of_denied_posts_over_the_api_adds_one_event(run_factory, outsider):
    run = run_factory()
    for _ in range(20):
        assert outsider.post(f"/api/runs/{run.run_id}/members/", {"role": "workflow", "content": "x"},
                             format="json").status_code == 403
    assert AuditEvent.objects.filter(run=run, action="permission.denied").count() == 1
    assert DenialTally.objects.get(run=run).count == 20


# --- the app's database role owns no table -------------------------------------------------------

@pytest.fixture
def app_role(run_factory):
    """A role set up as README's "Database roles" says, in this test's transaction (rolled back after)."""
    if connection.vendor != "postgresql":
        pytest.skip("roles and grants are PostgreSQL's")
    role = f"{connection.settings_dict['NAME']}_app"[:63]
    owner = connection.settings_dict["USER"] or "postgres"
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN "
                       f"CREATE ROLE {connection.ops.quote_name(role)} NOLOGIN; END IF; END $$")
        for statement in app_role_grants(app_role=role, owner_role=owner):
            cursor.execute(statement)
    return role


def _as(role: str, sql: str) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {connection.ops.quote_name(role)}")
        cursor.execute(sql)


@pytest.mark.parametrize("sql", [
    f"ALTER TABLE reviews_auditevent DISABLE TRIGGER {TRIGGER}",
    "ALTER TABLE reviews_auditevent DISABLE TRIGGER ALL",
    f"DROP TRIGGER {TRIGGER} ON reviews_auditevent",
    "TRUNCATE reviews_auditevent CASCADE",
    "DELETE FROM reviews_auditevent",
    "UPDATE reviews_auditevent SET actor = 'someone else'",
])
def test_the_app_role_is_refused_what_would_cut_the_trail(app_role, run_factory, sql):
    run = run_factory()
    _append(run, 2)
    with pytest.raises(DatabaseError) as refused:
        _as(app_role, sql)
    assert "must be owner" in str(refused.value) or "permission denied" in str(refused.value)
    assert verify_chain(run).ok and AuditEvent.objects.filter(run=run).count() >= 2


def test_the_app_role_owns_no_table(app_role):
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner = %s", [app_role])
        assert cursor.fetchone()[0] == 0


def test_the_app_role_still_appends_events_and_moves_the_head(app_role, run_factory):
    run = run_factory()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {connection.ops.quote_name(app_role)}")
        event = record_event(run=run, actor=Actor.command("test"), action="test.step", object_type="run",
                             object_id=run.run_id)
        record_denial(run=run, actor=Actor("token:x"), attempted="member.upload", roles=[])
        cursor.execute("SELECT current_user")
        assert cursor.fetchone()[0] == app_role
    assert chain_head(run)[0] == event.seq + 1 and verify_chain(run).ok


def test_db_roles_prints_the_grants(app_role):
    out = io.StringIO()
    call_command("db_roles", "aas_app", "--owner", "aas_owner", stdout=out)
    text = out.getvalue()
    assert 'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "aas_app";' in text
    assert 'REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON "reviews_auditevent" FROM "aas_app";' in text

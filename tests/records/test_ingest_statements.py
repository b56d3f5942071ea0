"""An upload and its parse (with the run's validation) cost at most 25 SQL statements and write three
audit events, one per service (DESIGN §11, issue 23 item 7). Counted, not timed."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from records import services
from records.models import MemberVersion
from reviews import queue
from reviews.audit import Actor, verify_chain
from reviews.models import AuditEvent
from tests.conftest import seed_bytes

ACTOR = Actor.command("test")


# Transactional: the upload's transaction is the outermost one, as in a request (no test savepoints counted).
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("seed, role", [("000", "result"), ("002", "memory")])
def test_an_upload_and_its_parse_take_at_most_25_statements_and_write_three_events(run_factory, seed, role,
                                                                                   monkeypatch):
    run = run_factory()
    queued = []
    # The tasks the commits queue are recorded, not run: the parse is called below, and the sync and the
    # events' fan-out that follow it are not ingest.
    monkeypatch.setattr(queue.Job, "send", lambda job, *args: queued.append(job.name))
    with CaptureQueriesContext(connection) as upload:
        version, created = services.ingest_member_report(run=run, role=role, filename=f"{seed}.txt",
                                                         content=seed_bytes(seed), actor=ACTOR)
    assert created and queued  # the parse waits for the commit
    with CaptureQueriesContext(connection) as parse:
        services.parse_member_version(version_pk=version.pk, actor=ACTOR)
    # BEGIN and COMMIT aside, as the bench counts: two transactions, whatever they hold.
    statements = [q["sql"][:100] for q in upload.captured_queries + parse.captured_queries
                  if q["sql"] not in ("BEGIN", "COMMIT")]
    assert len(statements) <= 25, "\n".join(statements)
    assert MemberVersion.objects.get(pk=version.pk).status == MemberVersion.Status.VALIDATED
    run.refresh_from_db()
    assert run.status == "in_review" and run.manifest_sha256  # saved by the validated event's statement
    assert list(AuditEvent.objects.filter(run=run).exclude(action="run.created").order_by("seq")
                .values_list("action", flat=True)) == ["member.uploaded", "member.parsed", "run.validated"]
    assert verify_chain(run).ok


@pytest.mark.django_db(transaction=True)
def test_an_uploads_version_its_members_move_and_its_event_are_one_statement(run_factory, monkeypatch):
    """reviews.audit.WithEvent: the version row, the member's current version and the event (with the run's
    chain head and status) are written by the event's own statement, and read back as written."""
    run = run_factory()
    monkeypatch.setattr(queue.Job, "send", lambda job, *args: None)
    services.ingest_member_report(run=run, role="memory", filename="a.md", content=seed_bytes("002"), actor=ACTOR)
    with CaptureQueriesContext(connection) as upload:
        version, created = services.ingest_member_report(run=run, role="memory", filename="b.md",
                                                         content=seed_bytes("002") + b"\nmore\n", actor=ACTOR)
    writes = [q["sql"] for q in upload.captured_queries if "INSERT INTO" in q["sql"] or q["sql"].startswith("UPDATE")]
    assert len(writes) == 1 and "records_memberversion" in writes[0] and "reviews_auditevent" in writes[0]
    stored = MemberVersion.objects.select_related("member").get(pk=version.pk)
    assert created and stored.version == 2 and stored.member.current_version_id == version.pk
    assert bytes(stored.content) == seed_bytes("002") + b"\nmore\n"
    event = AuditEvent.objects.get(run=run, action="member.uploaded", object_id="memory/v2")
    assert event.after["sha256"] == stored.sha256
    run.refresh_from_db()
    assert run.status == "validating" and run.audit_head_seq == event.seq and verify_chain(run).ok


@pytest.mark.django_db(transaction=True)
def test_a_change_is_carried_by_an_event_only_where_its_statement_can(run_factory):
    from reviews.audit import WithEvent, record_event

    with pytest.raises(ValueError):
        record_event(run=None, actor=ACTOR, action="test.step", object_type="run", object_id="-",
                     with_event=WithEvent(ctes='"x" AS (SELECT 1)', params=[], returning="1"))

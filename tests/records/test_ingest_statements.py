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

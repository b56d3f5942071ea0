"""The quotation check on a real Celery worker over Redis (DESIGN §6, §10)."""
import hashlib

import pytest

from records.models import QuotationCheck
from reviews.models import AuditEvent
from tests.conftest import wait_until
from tests.records.test_source_api import (
    COMMIT,
    SOURCE,
    memory_report,
    post_member,
    post_source,
    quote,
    tar_gz,
)
from tests.records.test_worker import _worker_idle_before_teardown  # noqa: F401 — autouse: drain before flush

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def statuses(run):
    return list(QuotationCheck.objects.filter(run=run, kind=QuotationCheck.Kind.QUOTATION)
                .order_by("line").values_list("status", "snapshot__archive_sha256"))


def test_the_worker_checks_quotations_after_a_member_upload_and_after_a_snapshot(worker, agent, run_factory):
    run = run_factory()
    text = memory_report(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`"),
                         quote("db.upsert(row)", f"`src/store.py` @ `{COMMIT}`"))
    assert post_member(agent, run, text).status_code == 201
    assert wait_until(lambda: statuses(run) == [("unverified", None), ("unverified", None)])
    data = tar_gz(SOURCE)
    assert post_source(agent, run, data).status_code == 201
    digest = hashlib.sha256(data).hexdigest()
    assert wait_until(lambda: statuses(run) == [("verified", digest), ("not-found", digest)])
    body = agent.get(f"/api/runs/{run.run_id}/quotations/").json()
    assert body["quotations"][0]["source_lines"] == [[3, "    db.insert(row)"]]
    validation = agent.get(f"/api/runs/{run.run_id}/validation/").json()
    assert [f["code"] for f in validation["findings"] if f["code"].startswith("quote-")] == ["quote-not-found"]
    # Each check that changed the rows is in its validation's event: the parse's (no snapshot yet), then the
    # snapshot's validation task.
    checks = [(actor, after["quotations"]) for actor, after in AuditEvent.objects.filter(
        run=run, action="run.validated").order_by("seq").values_list("actor", "after") if "quotations" in after]
    assert [actor for actor, _ in checks] == ["worker:parse_member_version", "worker:validate_run"]
    assert checks[0][1]["snapshot_sha256"] is None and checks[0][1]["quotations"]["unverified"] == 2
    assert checks[-1][1]["snapshot_sha256"] == digest
    assert (checks[-1][1]["quotations"]["verified"], checks[-1][1]["quotations"]["not-found"]) == (1, 1)

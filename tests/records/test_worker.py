"""The pipeline on a real Celery worker over Redis, against committed rows (DESIGN §10)."""
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.utils import timezone

from records import services, tasks
from records.models import IntegrationIssue, MemberVersion, Record
from reviews.audit import Actor
from reviews.models import AuditEvent, Run
from tests.conftest import seed_bytes, wait_until

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _worker_idle_before_teardown(worker):
    """Wait for the worker to finish what the test queued (reconcile's sync follows each validation):
    the test database is flushed at teardown, and a task still writing would deadlock with the flush."""
    yield
    import redis
    from django.conf import settings

    from config.celery import app

    queue = redis.Redis.from_url(settings.REDIS_URL)

    def idle():
        if queue.llen(worker["queue"]):
            return False
        inspect = app.control.inspect(timeout=1)
        busy = [*(inspect.active() or {}).values(), *(inspect.reserved() or {}).values()]
        return not any(busy)

    wait_until(idle, timeout=30, interval=0.3)


def rows_of(version_pk):
    records = list(Record.objects.filter(member_version_id=version_pk).order_by("ordinal").values_list(
        "ordinal", "record_type", "record_id", "label", "text", "fields", "references", "content_sha256"))
    issues = list(IntegrationIssue.objects.filter(member_version_id=version_pk).order_by("index").values_list(
        "index", "text", "references", "content_sha256"))
    return records, issues


def validated(version_pk):
    return MemberVersion.objects.filter(pk=version_pk, status=MemberVersion.Status.VALIDATED).first()


def upload_seed(agent, run):
    response = agent.post(f"/api/runs/{run.run_id}/members/",
                          {"role": "memory", "file": SimpleUploadedFile("memory.md", seed_bytes("002"))},
                          format="multipart")
    assert response.status_code == 201, response.content
    return MemberVersion.objects.get(member__run=run, version=response.json()["version"])


def test_the_worker_parses_and_validates_an_upload(worker, agent, run_factory):
    run = run_factory()
    version = upload_seed(agent, run)
    done = wait_until(lambda: validated(version.pk))
    assert done.counts["declarations"] == 18
    assert done.counts["annotations"] == 5
    assert done.counts["integration_issues"] == 8
    assert Record.objects.filter(member_version=version).count() == 23
    run.refresh_from_db()
    assert run.status == Run.Status.IN_REVIEW
    assert len(run.manifest_sha256) == 64
    # The run's only member: its parse validated the run in the same task and transaction.
    events = list(AuditEvent.objects.filter(run=run, action__in=["member.parsed", "run.validated"])
                  .order_by("seq").values_list("action", "actor"))
    assert events == [("member.parsed", "worker:parse_member_version"),
                      ("run.validated", "worker:parse_member_version")]


def test_a_parse_left_behind_by_a_killed_worker_is_redone_to_the_same_state(worker, agent, run_factory):
    run = run_factory()
    version = upload_seed(agent, run)
    wait_until(lambda: validated(version.pk))
    expected = rows_of(version.pk)
    events_before = AuditEvent.objects.filter(run=run, action="member.parsed").count()

    # What a worker killed mid-parse leaves: the claim taken long ago, half the rows written, run validating.
    an_hour_ago = timezone.now() - timedelta(hours=1)
    MemberVersion.objects.filter(pk=version.pk).update(status=MemberVersion.Status.PARSING, claimed_at=an_hour_ago,
                                                       queued_at=an_hour_ago, counts={})
    Record.objects.filter(member_version=version, ordinal__gt=10).delete()
    IntegrationIssue.objects.filter(member_version=version).delete()
    Run.objects.filter(pk=run.pk).update(status=Run.Status.VALIDATING, updated_at=an_hour_ago)

    counts = services.sweep_stuck_members(older_than_seconds=300, actor=Actor.command("test"))
    assert counts["versions"] == 1

    done = wait_until(lambda: validated(version.pk))
    assert rows_of(version.pk) == expected
    assert done.counts["declarations"] == 18
    assert done.attempts == 2
    assert AuditEvent.objects.filter(run=run, action="member.parsed").count() == events_before + 1
    wait_until(lambda: Run.objects.get(pk=run.pk).status == Run.Status.IN_REVIEW)


def test_running_the_parse_task_twice_on_the_worker_changes_nothing(worker, agent, run_factory):
    run = run_factory()
    version = upload_seed(agent, run)
    wait_until(lambda: validated(version.pk))
    expected, attempts = rows_of(version.pk), MemberVersion.objects.get(pk=version.pk).attempts
    validations = AuditEvent.objects.filter(run=run, action="run.validated").count()

    tasks.parse_member_version.delay(version.pk)
    tasks.parse_member_version.delay(version.pk)
    # One worker process takes its queue in order: once this requested validation lands, both parses
    # have run. (A bare validate_run.delay would find no pending request and, rightly, do nothing.)
    with transaction.atomic():
        services.request_validation(Run.objects.get(pk=run.pk))
    wait_until(lambda: AuditEvent.objects.filter(run=run, action="run.validated").count() == validations + 1)

    after = MemberVersion.objects.get(pk=version.pk)
    assert after.status == MemberVersion.Status.VALIDATED
    assert after.attempts == attempts
    assert rows_of(version.pk) == expected
    assert AuditEvent.objects.filter(run=run, action="member.parsed").count() == 1

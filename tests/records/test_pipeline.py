"""The pipeline's services: parse and validate are idempotent, the sweep re-queues, failures are recorded."""
from datetime import timedelta

import pytest
from django.utils import timezone

from records import services
from records.models import Finding, IntegrationIssue, MemberVersion, Record, ValidationReport
from reviews.audit import Actor, verify_chain
from reviews.models import AuditEvent, Run
from tests.conftest import seed_bytes

ACTOR = Actor.command("test")
SEED_ROLES = {"000": "result", "001": "workflow", "002": "memory", "003": "memory"}


def ingest(run, seed, capture, role=None):
    with capture(execute=True):
        version, created = services.ingest_member_report(run=run, role=role or SEED_ROLES[seed],
                                                         filename=f"{seed}.txt", content=seed_bytes(seed), actor=ACTOR)
    version.refresh_from_db()
    return version, created


def snapshot(version):
    records = list(Record.objects.filter(member_version=version).order_by("ordinal").values(
        "ordinal", "record_type", "record_id", "kind", "prefix", "label", "text", "fields", "references",
        "line_start", "line_end", "content_sha256"))
    issues = list(IntegrationIssue.objects.filter(member_version=version).order_by("index").values(
        "index", "text", "references", "line", "content_sha256"))
    return records, issues


def findings_of(run):
    return sorted(Finding.objects.filter(report__run=run).values_list("code", "severity", "member", "record_id",
                                                                       "line", "message"))


@pytest.mark.django_db
def test_it_parses_and_validates_an_upload_after_commit(run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    version, created = ingest(run, "002", django_capture_on_commit_callbacks)
    assert created
    assert version.status == MemberVersion.Status.VALIDATED
    assert version.counts["declarations"] == 18
    assert version.counts["annotations"] == 5
    assert version.counts["integration_issues"] == 8
    assert Record.objects.filter(member_version=version).count() == 23
    run.refresh_from_db()
    assert run.status == Run.Status.IN_REVIEW
    assert len(run.manifest_sha256) == 64
    assert verify_chain(run).ok
    actions = list(AuditEvent.objects.filter(run=run).values_list("action", flat=True))
    assert actions.count("member.uploaded") == 1
    assert actions.count("member.parsed") == 1
    assert actions.count("run.validated") == 1


@pytest.mark.django_db
def test_it_leaves_the_same_rows_and_findings_when_parse_and_validate_run_twice(
        run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    version, _ = ingest(run, "002", django_capture_on_commit_callbacks)
    before_rows, before_findings = snapshot(version), findings_of(run)
    assert before_findings

    # A duplicate delivery of a finished parse claims nothing.
    assert services.parse_member_version(version_pk=version.pk, actor=ACTOR) is None
    # A rerun (as after a killed worker) replaces the rows with the same rows.
    MemberVersion.objects.filter(pk=version.pk).update(status=MemberVersion.Status.RECEIVED)
    with django_capture_on_commit_callbacks(execute=True):
        services.parse_member_version(version_pk=version.pk, actor=ACTOR)
    services.validate_run(run=run, actor=ACTOR)

    assert snapshot(version) == before_rows
    assert findings_of(run) == before_findings
    assert ValidationReport.objects.filter(run=run).count() == 1


@pytest.mark.django_db
def test_it_requeues_a_version_stuck_in_parsing_with_an_old_claim(run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    version, _ = ingest(run, "001", django_capture_on_commit_callbacks)
    expected = snapshot(version)
    an_hour_ago = timezone.now() - timedelta(hours=1)
    MemberVersion.objects.filter(pk=version.pk).update(status=MemberVersion.Status.PARSING, claimed_at=an_hour_ago,
                                                       queued_at=an_hour_ago)
    Record.objects.filter(member_version=version).delete()

    with django_capture_on_commit_callbacks(execute=True) as queued:
        counts = services.sweep_stuck_members(older_than_seconds=300, actor=ACTOR)

    assert counts["versions"] == 1
    assert queued  # the parse was queued after commit
    version.refresh_from_db()
    assert version.status == MemberVersion.Status.VALIDATED
    assert version.attempts == 2
    assert snapshot(version) == expected
    assert AuditEvent.objects.filter(run=run, action="member.requeued").count() == 1


@pytest.mark.django_db
def test_it_leaves_a_fresh_claim_alone(run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    version, _ = ingest(run, "001", django_capture_on_commit_callbacks)
    MemberVersion.objects.filter(pk=version.pk).update(status=MemberVersion.Status.PARSING, claimed_at=timezone.now())
    assert services.sweep_stuck_members(older_than_seconds=300, actor=ACTOR)["versions"] == 0
    assert services.parse_member_version(version_pk=version.pk, actor=ACTOR) is None


@pytest.mark.django_db
def test_it_fails_a_version_whose_stored_bytes_no_longer_match_their_hash(
        run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    with django_capture_on_commit_callbacks(execute=False):
        version, _ = services.ingest_member_report(run=run, role="workflow", filename="w.md",
                                                   content=seed_bytes("001"), actor=ACTOR)
    MemberVersion.objects.filter(pk=version.pk).update(content=b"tampered")
    with django_capture_on_commit_callbacks(execute=True):
        services.parse_member_version(version_pk=version.pk, actor=ACTOR)
    version.refresh_from_db()
    run.refresh_from_db()
    assert version.status == MemberVersion.Status.FAILED
    assert "hash to" in version.status_reason
    assert run.status == Run.Status.FAILED
    assert "workflow v1 failed" in run.status_reason
    assert AuditEvent.objects.filter(run=run, action="member.parse_failed").count() == 1


@pytest.mark.django_db
def test_it_records_a_parser_crash_as_a_failed_version(run_factory, django_capture_on_commit_callbacks, monkeypatch):
    run = run_factory()

    def explode(text):
        raise RuntimeError("boom")

    monkeypatch.setattr(services.parse, "parse_report_strict", explode)
    version, _ = ingest(run, "001", django_capture_on_commit_callbacks)
    assert version.status == MemberVersion.Status.FAILED
    assert version.status_reason == "parser error: RuntimeError: boom"


@pytest.mark.django_db
def test_it_retries_a_failed_version_when_the_same_bytes_are_uploaded_again(
        run_factory, django_capture_on_commit_callbacks, monkeypatch):
    run = run_factory()
    monkeypatch.setattr(services.parse, "parse_report_strict", lambda text: 1 / 0)
    version, _ = ingest(run, "001", django_capture_on_commit_callbacks)
    assert version.status == MemberVersion.Status.FAILED
    monkeypatch.undo()
    again, created = ingest(run, "001", django_capture_on_commit_callbacks)
    assert not created
    assert again.pk == version.pk
    assert again.status == MemberVersion.Status.VALIDATED
    run.refresh_from_db()
    assert run.status == Run.Status.IN_REVIEW


@pytest.mark.django_db
def test_an_upload_still_succeeds_when_the_broker_is_down(run_factory, django_capture_on_commit_callbacks,
                                                          monkeypatch):
    from kombu.exceptions import OperationalError

    from records import tasks

    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to redis: Connection refused.")

    monkeypatch.setattr(tasks.parse_member_version, "apply_async", broker_down)
    run = run_factory()
    version, created = ingest(run, "001", django_capture_on_commit_callbacks)
    assert created
    assert version.status == MemberVersion.Status.RECEIVED
    monkeypatch.undo()
    MemberVersion.objects.filter(pk=version.pk).update(queued_at=timezone.now() - timedelta(hours=1),
                                                       created_at=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.sweep_stuck_members(older_than_seconds=300, actor=ACTOR)["versions"] == 1
    version.refresh_from_db()
    assert version.status == MemberVersion.Status.VALIDATED


@pytest.mark.django_db
def test_validation_waits_while_a_current_version_is_not_parsed(run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    with django_capture_on_commit_callbacks(execute=False):
        services.ingest_member_report(run=run, role="workflow", filename="w.md", content=seed_bytes("001"),
                                      actor=ACTOR)
    assert services.validate_run(run=run, actor=ACTOR) is None
    run.refresh_from_db()
    assert run.status == Run.Status.VALIDATING


@pytest.mark.django_db
def test_the_run_manifest_matches_the_export_manifest_of_reconcile(run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    ingest(run, "001", django_capture_on_commit_callbacks)
    ingest(run, "002", django_capture_on_commit_callbacks)
    run.refresh_from_db()
    _text, digest = services.run_manifest(list(services.current_versions(run, content=True)), rehash=True)
    assert digest == run.manifest_sha256


@pytest.mark.django_db
def test_the_sweep_command_and_the_beat_task_requeue_stuck_parses(run_factory, django_capture_on_commit_callbacks):
    from io import StringIO

    from django.core.management import call_command

    from records import tasks

    run = run_factory()
    with django_capture_on_commit_callbacks(execute=False):
        version, _ = services.ingest_member_report(run=run, role="workflow", filename="w.md",
                                                   content=seed_bytes("001"), actor=ACTOR)
    old = timezone.now() - timedelta(hours=1)
    MemberVersion.objects.filter(pk=version.pk).update(created_at=old, queued_at=old)
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("sweep_stuck_members", "--older-than", "60", stdout=out)
    assert "re-queued 1 member versions" in out.getvalue()
    version.refresh_from_db()
    assert version.status == MemberVersion.Status.VALIDATED
    assert tasks.sweep_stuck_members.apply().get() == {"versions": 0, "runs": 0}
    assert AuditEvent.objects.get(run=run, action="member.requeued").actor == "command:sweep_stuck_members"


@pytest.mark.django_db
def test_an_upload_through_the_api_succeeds_with_the_real_broker_unreachable(
        agent, run_factory, django_capture_on_commit_callbacks, caplog):
    """No mock: the Celery app is pointed at a closed port, as when Redis is down."""
    from config.celery import app

    run = run_factory()
    saved = (app.conf.broker_url, app.conf.task_always_eager)
    app.conf.broker_url, app.conf.task_always_eager = "redis://127.0.0.1:1/0", False
    app._pool = app.amqp._producer_pool = None  # drop pooled connections to the real broker
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = agent.post(f"/api/runs/{run.run_id}/members/",
                                  {"role": "memory", "content": "# Memory report\n\nText.\n"}, format="json")
    finally:
        app.conf.broker_url, app.conf.task_always_eager = saved
        app._pool = app.amqp._producer_pool = None
    assert response.status_code == 201, response.content
    version = MemberVersion.objects.get(member__run=run)
    assert version.status == MemberVersion.Status.RECEIVED  # kept, waiting for the sweep
    assert "could not queue records.tasks.parse_member_version" in caplog.text

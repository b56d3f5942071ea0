"""A burst of uploads is validated once, on its latest state; each version is parsed once (issue 14)."""
import pytest

from records import parsed, parsing, services
from records.models import MemberVersion, ValidationRequest
from reviews.audit import Actor
from reviews.models import AuditEvent, Run
from tests.conftest import seed_bytes

pytestmark = pytest.mark.django_db

ACTOR = Actor.command("test")
SEEDS = {"001": "workflow", "002": "memory", "000": "result"}


def upload_all(run, capture):
    with capture(execute=False):  # the broker holds the parse tasks
        return [services.ingest_member_report(run=run, role=role, filename=f"{seed}.txt", content=seed_bytes(seed),
                                              actor=ACTOR)[0] for seed, role in SEEDS.items()]


def test_a_burst_of_parses_queues_one_validation_that_validates_the_latest_state(
        run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    versions = upload_all(run, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        for version in versions:
            services.parse_member_version(version_pk=version.pk, actor=ACTOR)
    assert len(queued) == 1  # one validate_run for the three parses
    assert ValidationRequest.objects.filter(run=run).count() == 1

    with django_capture_on_commit_callbacks(execute=False):
        report, outcome = services.validate_requested(run=Run.objects.get(pk=run.pk), actor=ACTOR)
    assert outcome == f"{report.errors} errors, {report.warnings} warnings"
    [event] = AuditEvent.objects.filter(run=run, action="run.validated")
    assert event.after["members"] == {v.member.role: v.sha256 for v in versions}  # all three, once
    assert not ValidationRequest.objects.filter(run=run).exists()
    assert set(MemberVersion.objects.filter(pk__in=[v.pk for v in versions]).values_list("status", flat=True)) == {
        "validated"}

    # A duplicate delivery finds nothing pending and leaves the validated run alone.
    assert services.validate_requested(run=Run.objects.get(pk=run.pk), actor=ACTOR) == (None, "no validation pending")
    assert AuditEvent.objects.filter(run=run, action="run.validated").count() == 1


def test_a_parse_after_the_claim_asks_for_a_new_validation(run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    first, second, third = upload_all(run, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=False):
        services.parse_member_version(version_pk=first.pk, actor=ACTOR)
        assert services.validate_requested(run=Run.objects.get(pk=run.pk), actor=ACTOR) == (None, "waiting for parses")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        services.parse_member_version(version_pk=second.pk, actor=ACTOR)
        services.parse_member_version(version_pk=third.pk, actor=ACTOR)
    assert len(queued) == 1  # the claim emptied the request: the next parse asks again, once
    with django_capture_on_commit_callbacks(execute=False):
        report, _ = services.validate_requested(run=Run.objects.get(pk=run.pk), actor=ACTOR)
    assert report is not None and Run.objects.get(pk=run.pk).status == Run.Status.IN_REVIEW


def test_each_version_is_parsed_once_through_parse_validation_and_sync(
        run_factory, django_capture_on_commit_callbacks, monkeypatch):
    calls = []
    strict = parsing.parse_report_strict

    def counted(text):
        calls.append(len(text))
        return strict(text)

    # Count the parser's entry point wherever it is called from (the parse task, records.parsed).
    monkeypatch.setattr(parsing, "parse_report_strict", counted)
    monkeypatch.setattr(services, "parse_report_strict", counted)
    parsed.clear()
    run = run_factory()
    with django_capture_on_commit_callbacks(execute=True):  # parse, validate and sync run in process
        for seed, role in SEEDS.items():
            services.ingest_member_report(run=run, role=role, filename=f"{seed}.txt", content=seed_bytes(seed),
                                          actor=ACTOR)
    assert AuditEvent.objects.filter(run=run, action="reconcile.synced").exists()
    assert len(calls) == len(SEEDS)


def test_a_process_that_never_saw_the_version_parses_its_stored_bytes_once(
        run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    with django_capture_on_commit_callbacks(execute=True):
        version, _ = services.ingest_member_report(run=run, role="memory", filename="m.txt",
                                                   content=seed_bytes("002"), actor=ACTOR)
    parsed.clear()  # as in another worker process
    report = parsed.version_report(MemberVersion.objects.defer("content").get(pk=version.pk))
    assert report == parsing.parse_report(seed_bytes("002").decode())
    assert parsed.cached(version.sha256) is report

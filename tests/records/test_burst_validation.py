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


def jobs_of(callbacks) -> list:
    """The Jobs the on-commit callbacks queue (the event feed's wake-ups ride on every commit too)."""
    return [job for cb in callbacks if (job := getattr(getattr(cb, "func", None), "__self__", None)) is not None]


def test_a_burst_is_validated_once_by_its_last_parse_on_the_latest_state(
        run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    versions = upload_all(run, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        for version in versions[:-1]:  # a member still waits for its parse: no validation yet
            services.parse_member_version(version_pk=version.pk, actor=ACTOR)
        assert not AuditEvent.objects.filter(run=run, action="run.validated").exists()
        services.parse_member_version(version_pk=versions[-1].pk, actor=ACTOR)
    assert jobs_of(queued) == [services.RUN_VALIDATED]  # no validate_run
    [event] = AuditEvent.objects.filter(run=run, action="run.validated")
    assert event.actor == ACTOR.label
    assert event.after["members"] == {v.member.role: v.sha256 for v in versions}  # all three, once
    assert not ValidationRequest.objects.filter(run=run).exists()
    assert set(MemberVersion.objects.filter(pk__in=[v.pk for v in versions]).values_list("status", flat=True)) == {
        "validated"}
    assert Run.objects.get(pk=run.pk).status == Run.Status.IN_REVIEW

    # A duplicate delivery of the parse or of a validation finds nothing to do.
    assert services.parse_member_version(version_pk=versions[-1].pk, actor=ACTOR) is None
    assert services.validate_requested(run=Run.objects.get(pk=run.pk), actor=ACTOR) == (None, "no validation pending")
    assert AuditEvent.objects.filter(run=run, action="run.validated").count() == 1


def test_the_validating_parse_claims_a_pending_request_so_its_task_does_nothing(
        run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    [version] = upload_all(run, django_capture_on_commit_callbacks)[:1]
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert services.request_validation(run)  # as a snapshot upload asks, before the parse ends
    assert len(queued) == 1
    with django_capture_on_commit_callbacks(execute=False):
        for other in MemberVersion.objects.filter(member__run=run).exclude(pk=version.pk):
            services.parse_member_version(version_pk=other.pk, actor=ACTOR)
        services.parse_member_version(version_pk=version.pk, actor=ACTOR)
    assert not ValidationRequest.objects.filter(run=run).exists()
    assert AuditEvent.objects.filter(run=run, action="run.validated").count() == 1
    assert services.validate_requested(run=Run.objects.get(pk=run.pk), actor=ACTOR) == (None, "no validation pending")


def test_a_validation_that_fails_leaves_the_parse_committed_and_queues_the_validation_apart(
        run_factory, django_capture_on_commit_callbacks, monkeypatch):
    run = run_factory()
    [version] = upload_all(run, django_capture_on_commit_callbacks)[-1:]
    for other in MemberVersion.objects.filter(member__run=run).exclude(pk=version.pk):
        with django_capture_on_commit_callbacks(execute=False):
            services.parse_member_version(version_pk=other.pk, actor=ACTOR)

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in validation")

    monkeypatch.setattr(services.parse, "validate_locked", broken)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert services.parse_member_version(version_pk=version.pk, actor=ACTOR).status == "parsed"
    assert MemberVersion.objects.get(pk=version.pk).status == "parsed"
    assert AuditEvent.objects.filter(run=run, action="member.parsed").count() == 3
    assert ValidationRequest.objects.filter(run=run).count() == 1 and jobs_of(queued) == [services.VALIDATE]  # apart
    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=False):
        report, _ = services.validate_requested(run=Run.objects.get(pk=run.pk), actor=ACTOR)
    assert report is not None and Run.objects.get(pk=run.pk).status == Run.Status.IN_REVIEW


def test_each_version_is_parsed_once_through_parse_validation_and_sync(
        run_factory, django_capture_on_commit_callbacks, monkeypatch):
    calls = []
    strict = parsing.report.parse_report_strict

    def counted(text):
        calls.append(len(text))
        return strict(text)

    # Count the parser's entry point wherever it is called from (the parse task, records.parsed).
    monkeypatch.setattr(parsing.report, "parse_report_strict", counted)
    monkeypatch.setattr(services.parse, "parse_report_strict", counted)
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


def test_the_parse_cache_keeps_texts_within_its_byte_budget_and_always_the_newest(monkeypatch):
    monkeypatch.setattr(parsed, "MAX_TEXT_BYTES", 100)
    parsed.clear()
    reports = {name: parsing.parse_report(f"# {name}\n") for name in "abcd"}
    parsed.remember("a", reports["a"], 40)
    parsed.remember("b", reports["b"], 40)
    assert parsed.cached("a") is reports["a"]  # 80 bytes: both kept; reading "a" makes "b" the least recent
    parsed.remember("c", reports["c"], 40)  # 120 > 100: the least recently used goes
    assert parsed.cached("b") is None and parsed.cached("a") is reports["a"] and parsed.cached("c") is reports["c"]
    parsed.remember("d", reports["d"], 500)  # larger than the whole budget: kept alone
    assert [parsed.cached(key) for key in "acd"] == [None, None, reports["d"]]
    parsed.clear()

"""sync_run: canonical seeding, derived mappings, suggestions, issue decisions, carry-over (DESIGN §2)."""
from __future__ import annotations

import pytest

from config.celery import app as celery_app
from reconcile import services
from reconcile.models import CanonicalRecord, IssueDecision, KindCounter, Mapping
from records import services as records_services
from reviews.models import AuditEvent, Run
from tests.reconcile.factories import (
    AGENT, CHEATSHEET, INSTINCTUAL, MEMORY_SMALL, REVIEWER, RUNTIME_SLUG, WORKER, seed_path, upload, upload_file,
)

pytestmark = pytest.mark.django_db


def canonical_ids(run):
    return set(CanonicalRecord.objects.filter(run=run).values_list("canonical_id", flat=True))


def counters(run):
    return dict(KindCounter.objects.filter(run=run).values_list("kind", "last_number"))


def test_the_result_seed_seeds_twenty_canonical_records_and_its_five_mappings(run_factory):
    run = run_factory()
    upload_file(run, "result", seed_path("000"))

    expected = ({f"CMP-{n}" for n in range(1, 4)} | {f"OBJ-{n}" for n in range(1, 6)}
                | {f"RTE-{n}" for n in range(1, 9)} | {"CLM-1", "ABS-1", "BAP-1", "BAP-2"})
    assert canonical_ids(run) == expected
    assert set(CanonicalRecord.objects.filter(run=run).values_list("origin", flat=True)) == {"result"}
    assert CanonicalRecord.objects.get(run=run, canonical_id="RTE-6").number == 6
    mappings = Mapping.objects.filter(run=run)
    assert {(m.source, m.relation, m.target) for m in mappings} == {
        ("MEM-OBJ-1", "same", "OBJ-5"), ("MEM-RTE-1", "same", "RTE-6"), ("MEM-RTE-2", "same", "RTE-7"),
        ("MEM-RTE-3", "same", "RTE-8"), ("MEM-ABS-1", "same", "ABS-1")}
    assert {m.origin for m in mappings} == {"result"}
    assert all(m.source_record is None and m.state == "proposed" for m in mappings)
    assert counters(run) == {"CMP": 3, "OBJ": 5, "RTE": 8, "CLM": 1, "ABS": 1, "BAP": 2}


def test_a_prefixed_numbered_runtime_seeds_bare_canonical_ids(run_factory):
    run = run_factory()
    upload_file(run, "runtime", CHEATSHEET / "runtime.md")

    obj2 = CanonicalRecord.objects.get(run=run, canonical_id="OBJ-2")
    assert (obj2.source_record_id, obj2.origin, obj2.number) == ("RT-OBJ-2", "runtime", 2)
    assert obj2.label == "Retrieval corpus and embeddings"
    assert not any(cid.startswith("RT-") for cid in canonical_ids(run))
    assert len(canonical_ids(run)) == 16
    assert counters(run)["RTE"] == 8


def test_a_bare_numbered_runtime_keeps_its_ids(run_factory):
    run = run_factory()
    upload_file(run, "runtime", INSTINCTUAL / "runtime.md")

    assert {"CMP-1", "OBJ-4", "RTE-10", "RTE-11", "BAP-1"} <= canonical_ids(run)
    assert CanonicalRecord.objects.get(run=run, canonical_id="RTE-11").source_record_id == "RTE-11"
    assert counters(run)["RTE"] == 11


def test_a_slug_runtime_keeps_its_declared_ids(run_factory):
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)

    assert canonical_ids(run) == {"RT-CMP-wrapper", "RT-OBJ-memory-cache", "RT-OBJ-document-content",
                                  "RT-RTE-mcp-read", "RT-RTE-vercel-call"}
    assert set(CanonicalRecord.objects.filter(run=run).values_list("number", flat=True)) == {None}


def test_it_suggests_a_mapping_for_every_declaration_of_the_seed_002_memory_report(run_factory):
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload_file(run, "memory", seed_path("002"))

    suggested = {m.source: m for m in Mapping.objects.filter(run=run, origin="suggested")}
    assert len(suggested) == 18
    content = suggested["MEM-OBJ-document-content"]
    assert (content.relation, content.target) == ("same", "RT-OBJ-document-content")
    assert content.score == 1.0
    assert "same slug 'document-content' under RT-" in content.reason
    read = suggested["MEM-RTE-mcp-read"]
    assert (read.relation, read.target) == ("same", "RT-RTE-mcp-read")
    assert "label similarity 1.00" in read.reason
    claim = suggested["MEM-CLM-graph-display"]
    assert (claim.relation, claim.target, claim.score) == ("new", "", 1.0)
    facts = suggested["MEM-OBJ-memory-facts"]
    assert facts.relation == "new" and 0 < facts.score < 1 and "nearest" in facts.reason
    assert all(m.proposed_by == "app" and m.source_record.member_version.member.role == "memory"
               for m in suggested.values())


def test_it_opens_one_issue_decision_per_integration_issue(run_factory):
    run = run_factory()
    upload_file(run, "memory", seed_path("002"))

    decisions = IssueDecision.objects.filter(run=run)
    assert decisions.count() == 8
    assert set(decisions.values_list("state", flat=True)) == {"proposed"}
    assert sorted(decisions.values_list("issue__index", flat=True)) == list(range(1, 9))


def test_a_reconciliation_amendment_becomes_a_supersedes_mapping(run_factory):
    run = run_factory()
    upload_file(run, "runtime", CHEATSHEET / "runtime.md")
    upload_file(run, "reconciliation", CHEATSHEET / "reconciliation.md")

    amendment = Mapping.objects.get(run=run, origin="reconciliation")
    assert (amendment.source, amendment.relation, amendment.target) == ("EPI-OBJ-4", "supersedes", "MEM-OBJ-2")
    assert "is superseded by" in amendment.reason


def test_sync_run_twice_changes_nothing_the_second_time(run_factory):
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload_file(run, "memory", seed_path("002"))
    upload_file(run, "reconciliation", CHEATSHEET / "reconciliation.md")

    def snapshot():
        return (sorted(CanonicalRecord.objects.filter(run=run).values_list("pk", "canonical_id", "version")),
                sorted(Mapping.objects.filter(run=run).values_list("pk", "source", "target", "state", "version")),
                sorted(IssueDecision.objects.filter(run=run).values_list("pk", "issue_id", "state", "version")),
                counters(run))

    before, events = snapshot(), AuditEvent.objects.filter(run=run).count()
    summary = services.sync_run(run=run, actor=WORKER)
    assert not summary.changed
    assert snapshot() == before
    assert AuditEvent.objects.filter(run=run).count() == events


def test_a_sync_that_changes_rows_writes_one_synced_event(run_factory):
    run = run_factory()
    upload(run, "memory", MEMORY_SMALL, sync=False)
    events = AuditEvent.objects.filter(run=run).count()

    summary = services.sync_run(run=run, actor=WORKER)

    assert (summary.suggestions_created, summary.issue_decisions_created) == (3, 2)
    new = AuditEvent.objects.filter(run=run).order_by("seq")[events:]
    assert [e.action for e in new] == ["reconcile.synced"]
    assert new[0].after["suggestions_created"] == 3


def test_a_rejected_suggestion_is_not_suggested_again(run_factory):
    run = run_factory()
    upload(run, "memory", MEMORY_SMALL)
    facts = Mapping.objects.get(run=run, source="MEM-OBJ-memory-facts")
    services.decide_mapping(mapping=facts, decision="reject", rationale="not a record", actor=REVIEWER,
                            expected_version=facts.version)

    services.sync_run(run=run, actor=WORKER)

    assert Mapping.objects.filter(run=run, source="MEM-OBJ-memory-facts").count() == 1


def test_a_reupload_carries_unchanged_decisions_over_and_marks_changed_ones_stale(run_factory):
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    first = upload(run, "memory", MEMORY_SMALL)
    facts = Mapping.objects.get(run=run, source="MEM-OBJ-memory-facts")
    profile = Mapping.objects.get(run=run, source="MEM-OBJ-profile-summary")
    for mapping in (facts, profile):
        services.decide_mapping(mapping=mapping, decision="accept", rationale="checked", actor=REVIEWER,
                                expected_version=mapping.version)
    for decision in IssueDecision.objects.filter(run=run):
        services.decide_issue(issue_decision=decision, decision="accept", rationale="fine", actor=REVIEWER,
                              expected_version=decision.version)
    facts.refresh_from_db()
    assert facts.decided_member_sha256 == first.sha256
    assert services.decision_progress(run)["issues"]["undecided"] == 0
    events = AuditEvent.objects.filter(run=run).count()

    changed = (MEMORY_SMALL
               .replace("the profile strings the engine synthesises", "the profile strings the engine rebuilds")
               .replace("was inspected on v4", "was inspected on v3"))
    second = upload(run, "memory", changed)

    facts.refresh_from_db()
    assert facts.state == "accepted"
    assert facts.source_record.member_version_id == second.pk
    assert facts.rationale == "checked" and facts.decided_member_sha256 == first.sha256
    assert facts.version == 3  # accepted (2), carried over to the new row (3)
    profile.refresh_from_db()
    assert profile.state == "stale"
    assert profile.source_record.member_version_id == second.pk
    issues = {d.issue.index: d for d in IssueDecision.objects.filter(run=run).select_related("issue")}
    assert len(issues) == 2
    assert issues[1].state == "accepted" and issues[1].issue.member_version_id == second.pk
    assert issues[2].state == "stale" and issues[2].issue.member_version_id == second.pk
    progress = services.decision_progress(run)
    assert progress["mappings"]["stale"] == 1
    assert progress["issues"] == {"total": 2, "accepted": 1, "rejected": 0, "proposed": 0, "stale": 1,
                                  "decided": 1, "undecided": 1}
    actions = list(AuditEvent.objects.filter(run=run).order_by("seq")[events:].values_list("action", flat=True))
    assert actions.count("mapping.marked_stale") == 1
    assert actions.count("issue.marked_stale") == 1


def test_a_removed_record_makes_its_mapping_stale(run_factory):
    run = run_factory()
    upload(run, "memory", MEMORY_SMALL)
    read = Mapping.objects.get(run=run, source="MEM-RTE-mcp-read")
    without = MEMORY_SMALL.split("### Routes")[0] + "## Integration issues" + MEMORY_SMALL.split("## Integration issues")[1]

    upload(run, "memory", without)

    read.refresh_from_db()
    assert read.state == "stale"
    event = AuditEvent.objects.filter(run=run, action="mapping.marked_stale").get()
    assert event.after["reason"] == "record removed"


def test_a_member_version_still_waiting_for_its_parse_is_left_alone(run_factory):
    run = run_factory()
    upload(run, "memory", MEMORY_SMALL)
    facts = Mapping.objects.get(run=run, source="MEM-OBJ-memory-facts")
    services.decide_mapping(mapping=facts, decision="accept", rationale="", actor=REVIEWER,
                            expected_version=facts.version)
    records_services.ingest_member_report(run=run, role="memory", filename="memory.md",
                                          content=b"# changed\n", actor=AGENT)

    summary = services.sync_run(run=run, actor=WORKER)

    assert not summary.changed
    facts.refresh_from_db()
    assert facts.state == "accepted"


def test_the_records_pipeline_queues_the_sync_task_after_validation(run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    with django_capture_on_commit_callbacks(execute=True):
        records_services.ingest_member_report(run=run, role="memory", filename="memory.md",
                                              content=MEMORY_SMALL.encode(), actor=AGENT)

    assert Mapping.objects.filter(run=run, origin="suggested").count() == 3
    assert IssueDecision.objects.filter(run=run).count() == 2
    assert AuditEvent.objects.filter(run=run, action="reconcile.synced", actor="worker:sync_run").exists()


def test_the_sync_task_takes_a_run_pk_and_skips_a_missing_run(run_factory):
    run = run_factory()
    upload(run, "memory", MEMORY_SMALL, sync=False)
    task = celery_app.tasks["reconcile.tasks.sync_run"]

    result = task.apply(args=[run.pk]).get()

    assert result["suggestions_created"] == 3
    assert task.apply(args=[10 ** 9]).get() is None


def test_an_approved_run_is_not_synced(run_factory):
    run = run_factory()
    upload(run, "memory", MEMORY_SMALL, sync=False)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.APPROVED)

    summary = services.sync_run(run=run, actor=WORKER)

    assert summary.skipped == "run is approved"
    assert not Mapping.objects.filter(run=run).exists()


@pytest.mark.worker
def test_a_real_worker_syncs_the_run_after_an_upload(worker, run_factory):
    """Upload → parse → validate → reconcile.tasks.sync_run, each queued on commit to a Celery worker on Redis."""
    from django.db import transaction

    from tests.conftest import wait_until

    run = run_factory()
    with transaction.atomic():
        records_services.ingest_member_report(run=run, role="memory", filename="memory.md",
                                              content=MEMORY_SMALL.encode(), actor=AGENT)

    wait_until(lambda: IssueDecision.objects.filter(run=run).count() == 2, timeout=60)
    assert Mapping.objects.filter(run=run, origin="suggested").count() == 3
    assert AuditEvent.objects.filter(run=run, action="reconcile.synced", actor="worker:sync_run").count() == 1


def _without_declaration(text: str, record_id: str) -> str:
    """The report with one `#### ID — label` declaration (up to the next heading) cut out."""
    start = text.index(f"#### {record_id} ")
    end = min(i for i in (text.find("\n#", start + 1), len(text)) if i != -1)
    return text[:start] + text[end + 1:]


def test_a_runtime_declaration_removed_on_reupload_is_withdrawn_and_returns_when_declared_again(run_factory):
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload(run, "memory", MEMORY_SMALL)
    joined = Mapping.objects.get(run=run, source="MEM-RTE-mcp-read", origin="suggested")
    joined = services.decide_mapping(mapping=joined, decision="accept", rationale="same route", actor=REVIEWER,
                                     expected_version=1)
    assert joined.target == "RT-RTE-mcp-read"

    upload(run, "runtime", _without_declaration(RUNTIME_SLUG, "RT-RTE-mcp-read"))

    record = CanonicalRecord.objects.get(run=run, canonical_id="RT-RTE-mcp-read")
    assert (record.state, record.rationale) == ("rejected", "removed from runtime v2")
    withdrawn = AuditEvent.objects.get(run=run, action="canonical.withdrawn")
    assert (withdrawn.object_id, withdrawn.before["state"], withdrawn.after["state"]) == (
        "RT-RTE-mcp-read", "active", "rejected")
    joined.refresh_from_db()
    assert joined.state == "stale"  # the record it was joined to left the shared set
    assert CanonicalRecord.objects.get(run=run, canonical_id="RT-CMP-wrapper").state == "active"

    upload(run, "runtime", RUNTIME_SLUG + "\n")

    record.refresh_from_db()
    assert (record.state, record.rationale) == ("active", "")
    reactivated = AuditEvent.objects.get(run=run, action="canonical.reactivated")
    assert (reactivated.object_id, reactivated.after["member_version"]) == ("RT-RTE-mcp-read", 3)
    assert CanonicalRecord.objects.filter(run=run, canonical_id="RT-RTE-mcp-read").count() == 1


def test_a_withdrawn_numbered_record_keeps_its_number_and_a_reviewers_rejection_stays(run_factory):
    run = run_factory()
    runtime = (CHEATSHEET / "runtime.md").read_text()
    upload(run, "runtime", runtime)
    services.reject_canonical_record(record=CanonicalRecord.objects.get(run=run, canonical_id="OBJ-3"),
                                     rationale="not an operative object", actor=REVIEWER)

    upload(run, "runtime", _without_declaration(_without_declaration(runtime, "RT-OBJ-4"), "RT-OBJ-3"))

    obj4 = CanonicalRecord.objects.get(run=run, canonical_id="OBJ-4")
    assert (obj4.state, obj4.rationale, obj4.number) == ("rejected", "removed from runtime v2", 4)
    assert CanonicalRecord.objects.get(run=run, canonical_id="OBJ-3").rationale == "not an operative object"
    assert counters(run)["OBJ"] == 4
    assert services.next_number(run, "OBJ") == 5  # the withdrawn number is never given to another record

    upload(run, "runtime", runtime)

    assert CanonicalRecord.objects.get(run=run, canonical_id="OBJ-4").state == "active"
    assert CanonicalRecord.objects.get(run=run, canonical_id="OBJ-3").state == "rejected"  # a reviewer's call
    assert AuditEvent.objects.filter(run=run, action="canonical.withdrawn").count() == 1

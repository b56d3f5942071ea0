"""Proposals, decisions, allocation and progress (DESIGN §2, §5)."""
from __future__ import annotations

import pytest

from reconcile import services
from reconcile.models import CanonicalRecord, KindCounter, Mapping
from reconcile.services import InvalidDecision, ProposalError, RunLocked, StaleVersion
from reviews.audit import verify_chain
from reviews.models import AuditEvent, Run
from tests.reconcile.factories import AGENT, CHEATSHEET, MEMORY_SMALL, REVIEWER, RUNTIME_SLUG, upload, upload_file

pytestmark = pytest.mark.django_db

# A prefixed-numbered memory report beside the cheatsheet's runtime (RT-OBJ-1..4 → OBJ-1..4).
MEMORY_NUMBERED = """---
type: agentic-systems/types/agent-memory-analysis-report.md
---

# Memory report

## Shared records

### Operative objects

#### MEM-OBJ-1 — Caller-supplied prior examples

- Identity: examples the caller passes in.

#### MEM-OBJ-2 — Caller-supplied embedding matrix

- Identity: the embedding matrix.

#### MEM-OBJ-3 — Session transcript

- Identity: the transcript.

### Routes

#### MEM-RTE-1 — Example selection

- Immediate return: the examples.

## Integration issues

- MEM-OBJ-1 overlaps RT-OBJ-2.
"""


@pytest.fixture
def numbered_run(run_factory):
    run = run_factory()
    upload_file(run, "runtime", CHEATSHEET / "runtime.md")
    upload(run, "memory", MEMORY_NUMBERED)
    return run


@pytest.fixture
def slug_run(run_factory):
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload(run, "memory", MEMORY_SMALL)
    return run


def events_after(run, seq):
    return list(AuditEvent.objects.filter(run=run, seq__gt=seq).order_by("seq"))


def last_seq(run):
    return AuditEvent.objects.filter(run=run).order_by("-seq").values_list("seq", flat=True).first() or 0


def accept(mapping, **kwargs):
    mapping.refresh_from_db()
    return services.decide_mapping(mapping=mapping, decision="accept", rationale=kwargs.pop("rationale", "ok"),
                                   actor=REVIEWER, expected_version=mapping.version, **kwargs)


# --- proposals -----------------------------------------------------------------------------------

def test_an_agent_proposes_a_same_mapping_with_one_audit_event(numbered_run):
    seq = last_seq(numbered_run)
    mapping, created = services.propose_mapping(run=numbered_run, source="MEM-OBJ-1", relation="same",
                                                target="OBJ-2", actor=AGENT)
    assert created
    assert (mapping.state, mapping.origin, mapping.proposed_by, mapping.version) == ("proposed", "agent",
                                                                                    "token:agent-1", 1)
    assert mapping.source_record.member_version.member.role == "memory"
    [event] = events_after(numbered_run, seq)
    assert (event.action, event.object_id, event.after["target"]) == ("mapping.proposed", str(mapping.pk), "OBJ-2")


def test_proposing_the_same_open_mapping_again_returns_the_first_and_audits_nothing(numbered_run):
    first, created = services.propose_mapping(run=numbered_run, source="MEM-OBJ-1", relation="same", target="OBJ-2",
                                              actor=AGENT)
    seq = last_seq(numbered_run)
    again, created_again = services.propose_mapping(run=numbered_run, source=" MEM-OBJ-1 ", relation="same",
                                                    target="OBJ-2", actor=AGENT)
    assert (created, created_again, again.pk) == (True, False, first.pk)
    assert events_after(numbered_run, seq) == []
    other, created_other = services.propose_mapping(run=numbered_run, source="MEM-OBJ-1", relation="same",
                                                    target="OBJ-1", actor=AGENT)
    assert created_other and other.pk != first.pk  # a rival proposal is the reviewer's conflict to resolve
    assert Mapping.objects.filter(run=numbered_run, origin="agent", source="MEM-OBJ-1").count() == 2


def test_a_decided_proposal_can_be_proposed_again_but_not_reopened_beside_its_twin(numbered_run):
    first, _ = services.propose_mapping(run=numbered_run, source="MEM-OBJ-1", relation="same", target="OBJ-2",
                                        actor=AGENT)
    rejected = services.decide_mapping(mapping=first, decision="reject", rationale="not the same", actor=REVIEWER,
                                       expected_version=1)
    twin, created = services.propose_mapping(run=numbered_run, source="MEM-OBJ-1", relation="same", target="OBJ-2",
                                             actor=AGENT)
    assert created and twin.pk != first.pk
    with pytest.raises(InvalidDecision, match="decide that one instead"):
        services.decide_mapping(mapping=rejected, decision="reopen", rationale="", actor=REVIEWER,
                                expected_version=rejected.version)
    rejected.refresh_from_db()
    assert rejected.state == "rejected"


@pytest.mark.parametrize("source, relation, target, field, words", [
    ("MEM-OBJ-1", "same", "RTE-1", "target", "kinds differ: MEM-OBJ-1 is OBJ but RTE-1 is RTE"),
    ("MEM-OBJ-1", "same", "", "target", "needs a target"),
    ("MEM-OBJ-1", "part-of", None, "target", "needs a target"),
    ("MEM-OBJ-1", "same", "OBJ-99", "target", "OBJ-99 is not a canonical record"),
    ("MEM-OBJ-1", "same", "RT-OBJ-2", "target", "did you mean OBJ-2?"),
    ("MEM-OBJ-1", "new", "OBJ-2", "target", "OBJ-2 is already taken"),
    ("MEM-OBJ-1", "new", "MEM-OBJ-7", "target", "a numbered canonical ID is bare"),
    ("MEM-OBJ-1", "new", "not an id", "target", "is not a record ID"),
    ("MEM-OBJ-1", "no-counterpart", "OBJ-2", "target", "takes no target"),
    ("MEM-OBJ-1", "merged", "OBJ-2", "relation", "relation must be one of"),
    ("MEM-OBJ-9", "same", "OBJ-2", "source", "MEM-OBJ-9 is not declared by a current member report"),
    ("garbage", "same", "OBJ-2", "source", "is not a record ID"),
])
def test_a_bad_proposal_is_refused_naming_the_problem(numbered_run, source, relation, target, field, words):
    seq = last_seq(numbered_run)
    with pytest.raises(ProposalError) as refused:
        services.propose_mapping(run=numbered_run, source=source, relation=relation, target=target, actor=AGENT)
    assert refused.value.field == field
    assert words in refused.value.message
    assert events_after(numbered_run, seq) == []


def test_a_new_mapping_with_a_free_explicit_target_is_accepted_as_proposed(numbered_run):
    mapping, _created = services.propose_mapping(run=numbered_run, source="MEM-OBJ-3", relation="new",
                                                 target="OBJ-40", actor=AGENT)
    accepted = accept(mapping)
    assert accepted.target == "OBJ-40"
    assert KindCounter.objects.get(run=numbered_run, kind="OBJ").last_number == 40


def test_a_result_mapping_statement_can_be_proposed_again(run_factory):
    from tests.reconcile.factories import seed_path
    run = run_factory()
    upload_file(run, "result", seed_path("000"))
    mapping, _created = services.propose_mapping(run=run, source="MEM-OBJ-1", relation="same", target="OBJ-4", actor=AGENT)
    assert mapping.source_record is None


# --- decisions -----------------------------------------------------------------------------------

def test_accepting_a_new_mapping_allocates_the_next_number_of_its_kind(numbered_run):
    mapping = Mapping.objects.get(run=numbered_run, source="MEM-OBJ-3")
    assert mapping.relation == "new"
    seq = last_seq(numbered_run)

    accepted = accept(mapping)

    assert (accepted.state, accepted.target, accepted.version) == ("accepted", "OBJ-5", 2)
    record = CanonicalRecord.objects.get(run=numbered_run, canonical_id="OBJ-5")
    assert (record.origin, record.source_record_id, record.number, record.label) == (
        "mapping", "MEM-OBJ-3", 5, "Session transcript")
    assert accepted.decided_member_sha256 == accepted.source_record.member_version.sha256
    assert accepted.decided_content_sha256 == accepted.source_record.content_sha256
    assert accepted.decided_by == "user:reviewer-1" and accepted.decided_at is not None
    [event] = events_after(numbered_run, seq)
    assert event.action == "mapping.accepted"
    assert event.before["state"] == "proposed"
    assert (event.after["state"], event.after["canonical_id"]) == ("accepted", "OBJ-5")


def test_allocation_never_reuses_the_number_of_a_rejected_record(numbered_run):
    first = Mapping.objects.get(run=numbered_run, source="MEM-OBJ-3")
    assert accept(first).target == "OBJ-5"
    services.decide_mapping(mapping=first, decision="reopen", rationale="wrong referent", actor=REVIEWER,
                            expected_version=2)
    assert CanonicalRecord.objects.get(run=numbered_run, canonical_id="OBJ-5").state == "rejected"
    services.decide_mapping(mapping=first, decision="reject", rationale="not a new record", actor=REVIEWER,
                            expected_version=3)

    second, _created = services.propose_mapping(run=numbered_run, source="MEM-OBJ-2", relation="new", target=None,
                                                actor=AGENT)
    assert accept(second).target == "OBJ-6"

    services.reject_canonical_record(record=CanonicalRecord.objects.get(run=numbered_run, canonical_id="OBJ-6"),
                                     rationale="duplicate of OBJ-2", actor=REVIEWER)
    third, _created = services.propose_mapping(run=numbered_run, source="MEM-OBJ-1", relation="new", target=None,
                                               actor=AGENT)
    assert accept(third).target == "OBJ-7"
    with pytest.raises(ProposalError, match="OBJ-5 is already taken"):
        services.propose_mapping(run=numbered_run, source="MEM-OBJ-1", relation="new", target="OBJ-5", actor=AGENT)


def test_reaccepting_a_reopened_new_mapping_takes_back_its_own_id(numbered_run):
    mapping = Mapping.objects.get(run=numbered_run, source="MEM-OBJ-3")
    accept(mapping)
    services.decide_mapping(mapping=mapping, decision="reopen", rationale="look again", actor=REVIEWER,
                            expected_version=2)

    again = accept(mapping)

    assert again.target == "OBJ-5"
    assert CanonicalRecord.objects.get(run=numbered_run, canonical_id="OBJ-5").state == "active"
    assert CanonicalRecord.objects.filter(run=numbered_run, kind="OBJ").count() == 5


def test_a_slug_new_mapping_keeps_the_declared_id(slug_run):
    mapping = Mapping.objects.get(run=slug_run, source="MEM-OBJ-memory-facts")
    assert accept(mapping).target == "MEM-OBJ-memory-facts"
    assert CanonicalRecord.objects.get(run=slug_run, canonical_id="MEM-OBJ-memory-facts").number is None


def test_accepting_can_change_the_target(slug_run):
    mapping = Mapping.objects.get(run=slug_run, source="MEM-RTE-mcp-read")
    services.decide_mapping(mapping=mapping, decision="accept", rationale="", actor=REVIEWER,
                            expected_version=1, target="RT-RTE-vercel-call")
    mapping.refresh_from_db()
    assert (mapping.state, mapping.target) == ("accepted", "RT-RTE-vercel-call")


def test_accepting_with_a_target_of_another_kind_is_refused(slug_run):
    mapping = Mapping.objects.get(run=slug_run, source="MEM-RTE-mcp-read")
    with pytest.raises(ProposalError, match="kinds differ"):
        services.decide_mapping(mapping=mapping, decision="accept", rationale="", actor=REVIEWER,
                                expected_version=1, target="RT-OBJ-memory-cache")
    mapping.refresh_from_db()
    assert (mapping.state, mapping.version) == ("proposed", 1)


def test_reject_needs_a_rationale_and_writes_one_event(slug_run):
    mapping = Mapping.objects.get(run=slug_run, source="MEM-RTE-mcp-read")
    with pytest.raises(ProposalError, match="needs a rationale") as refused:
        services.decide_mapping(mapping=mapping, decision="reject", rationale="  ", actor=REVIEWER,
                                expected_version=1)
    assert refused.value.field == "rationale"
    seq = last_seq(slug_run)
    rejected = services.decide_mapping(mapping=mapping, decision="reject", rationale="adjacent, not identical",
                                       actor=REVIEWER, expected_version=1)
    assert (rejected.state, rejected.rationale) == ("rejected", "adjacent, not identical")
    assert [e.action for e in events_after(slug_run, seq)] == ["mapping.rejected"]


def test_reopen_returns_the_item_to_proposed_with_one_event(slug_run):
    mapping = Mapping.objects.get(run=slug_run, source="MEM-RTE-mcp-read")
    accept(mapping)
    seq = last_seq(slug_run)
    reopened = services.decide_mapping(mapping=mapping, decision="reopen", rationale="second look",
                                       actor=REVIEWER, expected_version=2)
    assert (reopened.state, reopened.version, reopened.decided_by) == ("proposed", 3, "")
    [event] = events_after(slug_run, seq)
    assert (event.action, event.before["state"], event.after["state"]) == ("mapping.reopened", "accepted", "proposed")
    assert verify_chain(slug_run).ok


def test_an_outdated_version_raises_stale_version_with_the_current_row(slug_run):
    mapping = Mapping.objects.get(run=slug_run, source="MEM-RTE-mcp-read")
    accept(mapping)
    seq = last_seq(slug_run)
    with pytest.raises(StaleVersion) as stale:
        services.decide_mapping(mapping=mapping, decision="reject", rationale="no", actor=REVIEWER,
                                expected_version=1)
    assert (stale.value.current.version, stale.value.current.state) == (2, "accepted")
    assert events_after(slug_run, seq) == []


def test_accepting_twice_or_reopening_an_open_item_is_a_state_conflict(slug_run):
    mapping = Mapping.objects.get(run=slug_run, source="MEM-RTE-mcp-read")
    with pytest.raises(InvalidDecision, match="already open"):
        services.decide_mapping(mapping=mapping, decision="reopen", rationale="", actor=REVIEWER,
                                expected_version=1)
    accept(mapping)
    with pytest.raises(InvalidDecision, match="reopen it first"):
        services.decide_mapping(mapping=mapping, decision="accept", rationale="", actor=REVIEWER,
                                expected_version=2)


def test_an_unknown_decision_is_a_proposal_error(slug_run):
    mapping = Mapping.objects.get(run=slug_run, source="MEM-RTE-mcp-read")
    with pytest.raises(ProposalError) as refused:
        services.decide_mapping(mapping=mapping, decision="approve", rationale="", actor=REVIEWER,
                                expected_version=1)
    assert refused.value.field == "decision"


def test_issue_decisions_accept_reject_and_reopen_each_with_one_event(slug_run):
    decision = services.current_issue_decisions(slug_run).get(issue__index=1)
    seq = last_seq(slug_run)
    accepted = services.decide_issue(issue_decision=decision, decision="accept", rationale="agreed",
                                     actor=REVIEWER, expected_version=1)
    assert (accepted.state, accepted.version) == ("accepted", 2)
    assert accepted.decided_content_sha256 == accepted.issue.content_sha256
    assert accepted.decided_member_sha256 == accepted.issue.member_version.sha256
    reopened = services.decide_issue(issue_decision=decision, decision="reopen", rationale="", actor=REVIEWER,
                                     expected_version=2)
    rejected = services.decide_issue(issue_decision=decision, decision="reject", rationale="out of scope",
                                     actor=REVIEWER, expected_version=3)
    assert (reopened.state, rejected.state, rejected.version) == ("proposed", "rejected", 4)
    assert [e.action for e in events_after(slug_run, seq)] == ["issue.accepted", "issue.reopened", "issue.rejected"]
    with pytest.raises(StaleVersion):
        services.decide_issue(issue_decision=decision, decision="reopen", rationale="", actor=REVIEWER,
                              expected_version=3)


def test_decisions_are_refused_while_the_run_is_approved(slug_run):
    Run.objects.filter(pk=slug_run.pk).update(status=Run.Status.APPROVED)
    mapping = Mapping.objects.get(run=slug_run, source="MEM-RTE-mcp-read")
    with pytest.raises(RunLocked, match="is approved"):
        services.decide_mapping(mapping=mapping, decision="accept", rationale="", actor=REVIEWER,
                                expected_version=1)
    with pytest.raises(RunLocked):
        services.propose_mapping(run=slug_run, source="MEM-RTE-mcp-read", relation="no-counterpart", target=None,
                                 actor=AGENT)


def test_state_conflicts_are_not_proposal_errors_so_a_page_shows_them_as_409(slug_run):
    mapping = Mapping.objects.get(run=slug_run, source="MEM-RTE-mcp-read")
    accepted = accept(mapping)
    with pytest.raises(services.StateConflict) as twice:
        accept(accepted)
    assert isinstance(twice.value, InvalidDecision) and not isinstance(twice.value, ProposalError)
    Run.objects.filter(pk=slug_run.pk).update(status=Run.Status.APPROVED)
    with pytest.raises(services.StateConflict) as locked:
        services.bulk_accept_suggestions(run=slug_run, min_score=0.0, actor=REVIEWER, rationale="bulk")
    assert isinstance(locked.value, RunLocked) and not isinstance(locked.value, ProposalError)


def test_bulk_accept_takes_only_suggestions_at_or_above_the_score(slug_run):
    suggested = {m.source: m for m in Mapping.objects.filter(run=slug_run, origin="suggested")}
    high = [m for m in suggested.values() if m.score >= 0.9]
    seq = last_seq(slug_run)

    count = services.bulk_accept_suggestions(run=slug_run, min_score=0.9, actor=REVIEWER, rationale="bulk")

    assert count == len(high) > 0
    assert set(Mapping.objects.filter(run=slug_run, state="accepted").values_list("source", flat=True)) == {
        m.source for m in high}
    assert [e.action for e in events_after(slug_run, seq)] == ["mapping.accepted"] * count


def test_reject_canonical_record_needs_a_rationale_and_is_audited(slug_run):
    record = CanonicalRecord.objects.get(run=slug_run, canonical_id="RT-CMP-wrapper")
    with pytest.raises(ProposalError):
        services.reject_canonical_record(record=record, rationale="", actor=REVIEWER)
    seq = last_seq(slug_run)
    services.reject_canonical_record(record=record, rationale="not a component", actor=REVIEWER)
    record.refresh_from_db()
    assert (record.state, record.rationale) == ("rejected", "not a component")
    [event] = events_after(slug_run, seq)
    assert (event.action, event.object_id) == ("canonical.rejected", "RT-CMP-wrapper")
    with pytest.raises(InvalidDecision):
        services.reject_canonical_record(record=record, rationale="again", actor=REVIEWER)


def test_decision_progress_counts_mappings_and_issues(slug_run, django_assert_max_num_queries):
    mapping = Mapping.objects.get(run=slug_run, source="MEM-RTE-mcp-read")
    accept(mapping)
    with django_assert_max_num_queries(3):  # mappings, issues, amendments
        progress = services.decision_progress(slug_run)
    assert progress["mappings"]["total"] == 3
    assert progress["mappings"]["decided"] == 1
    assert progress["mappings"]["undecided"] == 2
    assert progress["issues"]["undecided"] == 2
    assert (progress["total"], progress["decided"], progress["undecided"]) == (5, 1, 4)
    assert progress["amendments"]["total"] == 0


@pytest.mark.parametrize("text, pairs", [
    ("EPI-OBJ-4 is superseded by MEM-OBJ-2. Both records identify the same input.", [("EPI-OBJ-4", "MEM-OBJ-2")]),
    ("`MEM-RTE-3` is superseded by `RT-RTE-7` and RT-RTE-8.", [("MEM-RTE-3", "RT-RTE-7"), ("MEM-RTE-3", "RT-RTE-8")]),
    ("MEM-RTE-3 is superseded by RT-RTE-7, RT-RTE-8, and RT-RTE-9 because",
     [("MEM-RTE-3", "RT-RTE-7"), ("MEM-RTE-3", "RT-RTE-8"), ("MEM-RTE-3", "RT-RTE-9")]),
    ("RTE-4's description is replaced by two predicates.", []),
    ("EPI-OBJ-2 supersedes `Part of: RT-OBJ-2` with `Part of: MEM-OBJ-1`.", []),
])
def test_only_identity_amendments_become_supersedes_pairs(text, pairs):
    assert services.superseded_pairs(text) == pairs


def test_a_numbered_amendment_target_is_read_as_its_canonical_record(numbered_run):
    from tests.reconcile.factories import upload
    upload(numbered_run, "reconciliation", "# Reconciliation\n\n## Reconciliation\n\n"
                                           "Amendment: MEM-OBJ-1 is superseded by RT-OBJ-2.\n")
    mapping = Mapping.objects.get(run=numbered_run, origin="reconciliation")
    assert (mapping.source, mapping.relation, mapping.target) == ("MEM-OBJ-1", "supersedes", "OBJ-2")
    assert "target read as OBJ-2" in mapping.reason
    assert accept(mapping).state == "accepted"


def test_a_supersedes_target_still_a_member_record_waits_for_that_records_own_mapping(numbered_run):
    from tests.reconcile.factories import upload
    upload(numbered_run, "reconciliation", "# Reconciliation\n\n## Reconciliation\n\n"
                                           "Amendment: MEM-OBJ-3 is superseded by MEM-OBJ-2.\n")
    amendment = Mapping.objects.get(run=numbered_run, origin="reconciliation")
    assert amendment.target == "MEM-OBJ-2"
    with pytest.raises(services.TargetNotSettled) as refused:
        accept(amendment)
    assert str(refused.value).endswith("accept MEM-OBJ-2's own mapping first")
    assert isinstance(refused.value, InvalidDecision)  # a 409 wherever decisions are shown
    amendment.refresh_from_db()
    assert (amendment.state, amendment.version) == ("proposed", 1)

    own = accept(Mapping.objects.get(run=numbered_run, source="MEM-OBJ-2", origin="suggested"))
    assert accept(amendment).target == own.target  # resolved to MEM-OBJ-2's canonical record


@pytest.mark.parametrize("disposition, target, relation", [
    ("mapped", "OBJ-5", "same"),
    ("merged", "OBJ-9", "same"),
    ("registered", "OBJ-9", "new"),
    ("registered", "OBJ-5", "same"),  # the result already declares it
    ("part of", "OBJ-5", "part-of"),
    ("superseded", "OBJ-5", "supersedes"),
    ("rejected", "OBJ-5", "no-counterpart"),
    ("mapped", "", "no-counterpart"),
    ("no counterpart", "OBJ-5", "no-counterpart"),  # "counterpart" holds "part": never read as part-of
    ("no record: limitation on RTE-8, part of the runtime's account", "", "no-counterpart"),
    ("part-of", "OBJ-5", "part-of"),
])
def test_a_statement_disposition_reads_as_a_relation(disposition, target, relation):
    assert services.relation_for(disposition, target, {"OBJ-5"}) == relation

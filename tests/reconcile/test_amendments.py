"""Amendments and unresolved conflicts are decided by a reviewer (DESIGN §2, §7): sync makes one decision
per paragraph, a reviewer accepts, rejects or carries it, approval waits for it, the result states it."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from reconcile import services
from results.services import ApprovalBlocked, approve_run, approval_blockers, finalize_run
from reconcile.models import AmendmentDecision, Mapping
from results.models import Result
from reconcile.services import InvalidDecision, ProposalError, StaleVersion, amendment_sha256
from records.parsing import parse_report
from reviews.audit import Actor, verify_chain
from reviews.models import AuditEvent, Run
from tests.reconcile.factories import CHEATSHEET, INSTINCTUAL, REVIEWER, WORKER, upload, upload_file
from reviews.actions import Action
from tests.results.test_approval import (
    CHEATSHEET_FIELDS,
    audit_decision,
    corpus_files,
    mark_validated,
    reconcile_rows,
    store_members,
)

INSTINCTUAL_FIELDS = CHEATSHEET_FIELDS | dict(
    run_id="AAS-2026-10-02-instinctual-memory-02", system="instinctual-memory",
    title="instinctual-memory agentic-system analysis",
    reviewed_boundary="6acb13dc35765bf5ccfc87e445dd09c480f1c28a",
)
SUPERSESSION = "EPI-OBJ-4 is superseded by MEM-OBJ-2"
CONFLICTS = """# Reconciliation

## Reconciliation

Amendment: RTE-4's summary is narrowed to the inspected producers.

Unresolved conflict: RT-OBJ-1 and MEM-OBJ-2 disagree
about RT-OBJ-1's expiry.
"""


def events_after(run, seq):
    return list(AuditEvent.objects.filter(run=run, seq__gt=seq).order_by("seq"))


def last_seq(run):
    return AuditEvent.objects.filter(run=run).order_by("-seq").values_list("seq", flat=True).first() or 0


def decide(amendment, decision, rationale="", *, actor=REVIEWER, version=None):
    amendment.refresh_from_db()
    return services.decide_amendment(amendment=amendment, decision=decision, rationale=rationale, actor=actor,
                                     expected_version=amendment.version if version is None else version)


def current(run, **filters):
    return list(services.current_amendment_decisions(run).filter(**filters).order_by("index"))


@pytest.fixture
def instinctual_run(run_factory):
    """The instinctual-memory corpus run's reconciliation: six value amendments of an older generation."""
    run = run_factory()
    upload_file(run, "reconciliation", INSTINCTUAL / "reconciliation.md")
    return run


@pytest.fixture
def cheatsheet_run(run_factory):
    """The dynamic-cheatsheet corpus run: three `Part of:` value amendments and one supersession."""
    run = run_factory()
    for role in ("runtime", "memory", "epistemic", "reconciliation"):
        upload_file(run, role, CHEATSHEET / f"{role}.md")
    return run


def supersession_of(run) -> AmendmentDecision:
    return next(a for a in current(run) if a.text.startswith(SUPERSESSION))


def settle_memory_obj_2(run) -> None:
    """MEM-OBJ-2 enters the shared set, so the supersession's target is a canonical record."""
    mapping = Mapping.objects.get(run=run, source="MEM-OBJ-2", origin="suggested")
    services.decide_mapping(mapping=mapping, decision="accept", rationale="its own record", actor=REVIEWER,
                            expected_version=mapping.version, target=mapping.target or None)


# --- sync ----------------------------------------------------------------------------------------

def test_sync_makes_one_decision_per_value_amendment_of_the_instinctual_reconciliation(instinctual_run):
    rows = current(instinctual_run)
    report = parse_report((INSTINCTUAL / "reconciliation.md").read_text())
    assert len(rows) == len(report.amendments) == 6
    assert [(r.index, r.kind, r.line, r.state, r.mapping_id) for r in rows] == [
        (i, "amendment", a.line, "proposed", None) for i, a in enumerate(report.amendments, start=1)]
    assert rows[0].text.startswith("RTE-4's description") and rows[0].references[0] == "RTE-4"
    assert rows[0].content_sha256 == amendment_sha256("amendment", report.amendments[0].text)
    assert {r.member_version.member.role for r in rows} == {"reconciliation"}


def test_a_second_sync_changes_nothing_and_audits_nothing(instinctual_run):
    seq = last_seq(instinctual_run)
    summary = services.sync_run(run=instinctual_run, actor=WORKER)
    assert not summary.changed
    assert events_after(instinctual_run, seq) == []
    assert AmendmentDecision.objects.filter(run=instinctual_run).count() == 6


def test_sync_links_the_cheatsheet_supersession_to_its_supersedes_mapping(cheatsheet_run):
    rows = current(cheatsheet_run)
    assert len(rows) == 4
    supersession = supersession_of(cheatsheet_run)
    mapping = Mapping.objects.get(run=cheatsheet_run, origin="reconciliation", relation="supersedes")
    assert supersession.mapping == mapping
    assert [r.mapping_id for r in rows if r.pk != supersession.pk] == [None, None, None]


def test_an_unresolved_conflict_is_a_decision_of_its_own_kind(run_factory):
    run = run_factory()
    upload(run, "reconciliation", CONFLICTS)
    amendment, conflict = current(run)
    assert (amendment.kind, conflict.kind) == ("amendment", "unresolved-conflict")
    assert conflict.text == "RT-OBJ-1 and MEM-OBJ-2 disagree\nabout RT-OBJ-1's expiry."
    assert conflict.references == ["RT-OBJ-1", "MEM-OBJ-2"]


# --- deciding ------------------------------------------------------------------------------------

@pytest.mark.parametrize("decision, rationale, state, action", [
    ("accept", "", "accepted", "amendment.accepted"),
    ("reject", "RTE-4 still reads as deterministic", "rejected", "amendment.rejected"),
    ("carry", "the TTL question stays open", "carried", "amendment.carried"),
])
def test_a_reviewer_decides_an_amendment_with_one_audit_event(instinctual_run, decision, rationale, state, action):
    amendment = current(instinctual_run)[0]
    seq = last_seq(instinctual_run)
    decided = decide(amendment, decision, rationale)
    assert (decided.state, decided.version, decided.rationale, decided.decided_by) == (
        state, 2, rationale, "user:reviewer-1")
    assert decided.decided_content_sha256 == amendment.content_sha256
    assert decided.decided_member_sha256 == amendment.member_version.sha256
    [event] = events_after(instinctual_run, seq)
    assert (event.action, event.object_type, event.object_id) == (action, "amendment_decision", str(amendment.pk))
    assert (event.before["state"], event.after["state"], event.after["member"]) == ("proposed", state, "reconciliation")
    assert verify_chain(instinctual_run).ok


def test_reopening_a_decided_amendment_makes_it_open_again(instinctual_run):
    amendment = current(instinctual_run)[0]
    decide(amendment, "carry", "open question")
    seq = last_seq(instinctual_run)
    reopened = decide(amendment, "reopen", "read it again")
    assert (reopened.state, reopened.decided_by, reopened.version) == ("proposed", "", 3)
    assert [e.action for e in events_after(instinctual_run, seq)] == ["amendment.reopened"]
    with pytest.raises(InvalidDecision):
        decide(amendment, "reopen")


@pytest.mark.parametrize("decision", ["reject", "carry"])
def test_a_rejection_or_a_carry_needs_a_rationale(instinctual_run, decision):
    amendment = current(instinctual_run)[0]
    with pytest.raises(ProposalError) as refused:
        decide(amendment, decision, "  ")
    assert refused.value.field == "rationale"
    amendment.refresh_from_db()
    assert (amendment.state, amendment.version) == ("proposed", 1)


def test_deciding_twice_or_on_an_old_version_is_refused(instinctual_run):
    amendment = current(instinctual_run)[0]
    decide(amendment, "accept")
    with pytest.raises(InvalidDecision, match="already accepted; reopen it first"):
        decide(amendment, "carry", "changed my mind")
    with pytest.raises(StaleVersion) as stale:
        decide(amendment, "reopen", version=1)
    assert (stale.value.current.version, stale.value.current.state) == (2, "accepted")


def test_decisions_are_refused_once_the_run_is_approved(instinctual_run):
    amendment = current(instinctual_run)[0]
    Run.objects.filter(pk=instinctual_run.pk).update(status=Run.Status.APPROVED)
    with pytest.raises(services.RunLocked):
        decide(amendment, "accept")


def test_two_reviewers_deciding_at_once_one_wins_the_other_gets_the_current_row(instinctual_run):
    amendment = current(instinctual_run)[0]
    decide(amendment, "accept", actor=Actor("user:reviewer-1"))
    with pytest.raises(StaleVersion) as stale:
        decide(amendment, "carry", "too late", actor=Actor("user:reviewer-2"), version=1)
    assert stale.value.current.decided_by == "user:reviewer-1"


# --- a supersession follows its mapping ----------------------------------------------------------

def test_deciding_the_supersedes_mapping_decides_its_amendment_in_the_same_event(cheatsheet_run):
    settle_memory_obj_2(cheatsheet_run)
    mapping = Mapping.objects.get(run=cheatsheet_run, origin="reconciliation", relation="supersedes")
    seq = last_seq(cheatsheet_run)
    services.decide_mapping(mapping=mapping, decision="accept", rationale="one embedding matrix", actor=REVIEWER,
                            expected_version=mapping.version)
    amendment = supersession_of(cheatsheet_run)
    assert (amendment.state, amendment.rationale, amendment.decided_by) == (
        "accepted", "one embedding matrix", "user:reviewer-1")
    [event] = events_after(cheatsheet_run, seq)
    assert event.action == "mapping.accepted"
    assert event.after["amendments"] == [{"amendment": amendment.pk, "state": "accepted", "version": 2}]


@pytest.mark.parametrize("decision, state", [("accept", "accepted"), ("reject", "rejected")])
def test_deciding_the_supersession_amendment_decides_its_mapping(cheatsheet_run, decision, state):
    settle_memory_obj_2(cheatsheet_run)
    amendment = supersession_of(cheatsheet_run)
    seq = last_seq(cheatsheet_run)
    decided = decide(amendment, decision, "the embedding matrix is one object")
    mapping = Mapping.objects.get(pk=amendment.mapping_id)
    assert (decided.state, mapping.state) == (state, state)
    assert decided.rationale == mapping.rationale == "the embedding matrix is one object"
    assert [e.action for e in events_after(cheatsheet_run, seq)] == [f"mapping.{state}"]

    reopened = decide(decided, "reopen", "read again")
    mapping.refresh_from_db()
    assert (reopened.state, mapping.state) == ("proposed", "proposed")


def test_a_supersession_cannot_be_carried_and_waits_for_its_target(cheatsheet_run):
    amendment = supersession_of(cheatsheet_run)
    with pytest.raises(InvalidDecision, match="accept or reject it"):
        decide(amendment, "carry", "leave it open")
    with pytest.raises(services.TargetNotSettled):
        decide(amendment, "accept")
    amendment.refresh_from_db()
    assert (amendment.state, amendment.version) == ("proposed", 1)
    assert Mapping.objects.get(pk=amendment.mapping_id).state == "proposed"


def test_a_supersession_goes_stale_with_its_mapping_when_the_superseded_record_changes(cheatsheet_run):
    settle_memory_obj_2(cheatsheet_run)
    accepted = decide(supersession_of(cheatsheet_run), "accept", "same matrix")
    epistemic = (CHEATSHEET / "epistemic.md").read_text()
    identity = "- Source-native identity: rows in `original_input_embeddings`"  # in EPI-OBJ-4's declaration
    assert epistemic.count(identity) == 1
    seq = last_seq(cheatsheet_run)
    upload(cheatsheet_run, "epistemic", epistemic.replace(identity, identity + " (revised)"))

    amendment = supersession_of(cheatsheet_run)
    assert Mapping.objects.get(pk=amendment.mapping_id).state == "stale"
    assert (amendment.state, amendment.version) == ("stale", accepted.version + 1)
    stale = [e for e in events_after(cheatsheet_run, seq) if e.object_type == "amendment_decision"]
    assert [(e.action, e.object_id) for e in stale] == [("amendment.marked_stale", str(amendment.pk))]
    assert services.decision_progress(cheatsheet_run)["amendments"]["stale"] == 1


# --- re-upload: carry-over and staleness ---------------------------------------------------------

def test_a_reuploaded_reconciliation_keeps_unchanged_decisions_and_stales_the_changed_one(instinctual_run):
    rows = current(instinctual_run)
    for row in rows:
        decide(row, "accept", "read against the runtime")
    text = (INSTINCTUAL / "reconciliation.md").read_text()
    changed = rows[2].text.split("\n")[0]
    assert text.count(changed) == 1
    seq = last_seq(instinctual_run)
    version = upload(instinctual_run, "reconciliation", text.replace(changed, changed + " (revised)"))

    after = current(instinctual_run)
    assert [a.pk for a in after] == [r.pk for r in rows]  # the same decisions, moved to the new version
    assert {a.member_version_id for a in after} == {version.pk}
    assert [a.state for a in after] == ["accepted", "accepted", "stale", "accepted", "accepted", "accepted"]
    assert "(revised)" in after[2].text
    stale = [e for e in events_after(instinctual_run, seq) if e.action == "amendment.marked_stale"]
    assert [(e.object_id, e.after["reason"]) for e in stale] == [(str(rows[2].pk), "paragraph changed")]
    progress = services.decision_progress(instinctual_run)["amendments"]
    assert (progress["total"], progress["decided"], progress["stale"], progress["undecided"]) == (6, 5, 1, 1)

    redecided = decide(after[2], "accept", "the revision is right")
    assert (redecided.state, redecided.decided_content_sha256) == ("accepted", after[2].content_sha256)


def test_a_removed_paragraph_s_decision_goes_stale_where_it_stands_and_stops_counting(run_factory):
    run = run_factory()
    upload(run, "reconciliation", CONFLICTS)
    amendment, conflict = current(run)
    decide(conflict, "carry", "expiry unobserved")
    upload(run, "reconciliation", CONFLICTS.split("Unresolved conflict:")[0])
    conflict.refresh_from_db()
    assert conflict.state == "stale"
    assert [a.pk for a in current(run)] == [amendment.pk]
    assert services.decision_progress(run)["amendments"]["total"] == 1


# --- approval and the result ---------------------------------------------------------------------

@pytest.fixture(params=[CHEATSHEET, INSTINCTUAL], ids=["cheatsheet", "instinctual"])
def corpus_ready_run(request, run_factory):
    """A corpus run validated and fully reconciled from rows (every amendment accepted), in review."""
    run = run_factory(**(CHEATSHEET_FIELDS if request.param == CHEATSHEET else INSTINCTUAL_FIELDS))
    files = corpus_files(request.param)
    versions = store_members(run, files)
    mark_validated(run, files)
    reconcile_rows(run, versions)
    return run


def test_approval_waits_for_every_amendment(corpus_ready_run):
    rows = current(corpus_ready_run)
    assert approval_blockers(corpus_ready_run) == []
    AmendmentDecision.objects.filter(pk=rows[0].pk).update(state="proposed")
    AmendmentDecision.objects.filter(pk=rows[1].pk).update(state="stale")
    AmendmentDecision.objects.filter(pk=rows[2].pk).delete()
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=corpus_ready_run, note="Too early.", actor=REVIEWER)
    messages = [b.message for b in blocked.value.blockers if b.code == "open_amendment"]
    where = "The amendment at line {} of the reconciliation report is undecided"
    assert messages == [where.format(rows[0].line) + ": accept, reject or carry it",
                        where.format(rows[1].line) + " (stale: the report changed since it was decided): accept, "
                                                     "reject or carry it",
                        where.format(rows[2].line) + " (not yet read into decisions): accept, reject or carry it"]


def test_the_result_states_each_decision_and_carries_rejected_and_carried_ones_into_limitations(
        corpus_ready_run, django_capture_on_commit_callbacks):
    rows = current(corpus_ready_run)
    AmendmentDecision.objects.filter(pk=rows[0].pk).update(state="rejected", rationale="not what the code does")
    AmendmentDecision.objects.filter(pk=rows[1].pk).update(state="carried", rationale="left for the next run")
    audit_decision(corpus_ready_run, rows[0], Action.AMENDMENT_REJECTED)
    audit_decision(corpus_ready_run, rows[1], Action.AMENDMENT_CARRIED)
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=corpus_ready_run, note="Read every amendment.", actor=REVIEWER)
    result = finalize_run(run=corpus_ready_run, actor=WORKER)
    assert result is not None, Run.objects.get(pk=corpus_ready_run.pk).status_reason

    by_line = {a["line"]: a for a in result.data["amendments"]}
    assert len(by_line) == len(rows)
    assert [by_line[r.line]["decision"] for r in rows] == ["reject", "carry"] + ["accept"] * (len(rows) - 2)
    assert by_line[rows[2].line]["rationale"] == "read against both records"
    # The result's own sections are the last of their name (members' prose may hold a "Limitations" too).
    reconciliation = result.markdown.rsplit("\n## Reconciliation\n", 1)[1].split("\n## Limitations\n", 1)[0]
    limitations = result.markdown.rsplit("\n## Limitations\n", 1)[1].split("\n## Verification", 1)[0]
    first = rows[0].text.split("\n")[0]
    assert f"Amendment: {first}" in reconciliation
    assert (f"Amendment decision: rejected by user:reviewer-1 (reconciliation.md line {rows[0].line}). "
            f"Rationale: not what the code does") in reconciliation
    assert (f"Amendment decision: accepted by user:reviewer-1 (reconciliation.md line {rows[2].line}). "
            f"Rationale: read against both records") in reconciliation
    assert f"- Rejected amendment, not applied to the shared records: {first}" in limitations
    assert f"- Carried amendment, not applied to the shared records: {rows[1].text.split(chr(10))[0]}" in limitations
    assert "Rationale: left for the next run" in limitations
    assert rows[2].text.split("\n")[0] not in limitations  # accepted: stated, not limiting

    again = parse_report(result.markdown)  # the result reads back with the same amendments
    assert sorted(a.text for a in again.amendments) == sorted(r.text for r in rows)


def test_finalization_refuses_a_paragraph_without_a_decision_on_its_text(corpus_ready_run,
                                                                        django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=corpus_ready_run, note="Read every amendment.", actor=REVIEWER)
    row = current(corpus_ready_run)[0]
    AmendmentDecision.objects.filter(pk=row.pk).update(content_sha256="0" * 64)
    assert finalize_run(run=corpus_ready_run, actor=WORKER) is None
    corpus_ready_run.refresh_from_db()
    assert corpus_ready_run.status == Run.Status.FAILED
    # Refused by the decision blockers finalization re-reads (the text changed since its decision).
    assert corpus_ready_run.status_reason.startswith("the decisions no longer support approval: ")
    assert f"amendment at line {row.line} of the reconciliation report is undecided (its text changed since its decision)" in \
        corpus_ready_run.status_reason
    assert not Result.objects.filter(run=corpus_ready_run).exists()


def test_decision_progress_counts_amendments_in_three_queries(instinctual_run, django_assert_max_num_queries):
    rows = current(instinctual_run)
    decide(rows[0], "accept")
    decide(rows[1], "carry", "open")
    with django_assert_max_num_queries(3):
        progress = services.decision_progress(instinctual_run)
    assert progress["amendments"] == {"total": 6, "accepted": 1, "rejected": 0, "carried": 1, "proposed": 4,
                                      "stale": 0, "conflicts": 0, "decided": 2, "undecided": 4}
    assert (progress["total"], progress["undecided"]) == (6, 4)


# --- the API -------------------------------------------------------------------------------------

def api(run, suffix=""):
    return f"/api/runs/{run.run_id}/amendments/{suffix}"


def test_the_api_lists_amendments_with_their_decision_state(cheatsheet_run, auditor):
    body = auditor.get(api(cheatsheet_run), {"page_size": 50}).json()
    items = body.get("results", body) if isinstance(body, dict) else body
    assert len(items) == 4
    supersession = next(i for i in items if i["text"].startswith(SUPERSESSION))
    assert supersession["mapping"] == Mapping.objects.get(run=cheatsheet_run, origin="reconciliation").pk
    assert {k: supersession[k] for k in ("kind", "member", "state", "version", "rationale", "decided_by")} == {
        "kind": "amendment", "member": "reconciliation", "state": "proposed", "version": 1, "rationale": "",
        "decided_by": ""}
    assert supersession["references"][:2] == ["EPI-OBJ-4", "MEM-OBJ-2"]
    assert isinstance(supersession["line"], int)
    assert auditor.get(api(cheatsheet_run), {"state": "carried"}).json()["count"] == 0
    bad = auditor.get(api(cheatsheet_run), {"kind": "opinion"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_filter"


def test_a_reviewer_decides_over_the_api_and_gets_409_on_a_stale_version(instinctual_run, reviewer,
                                                                          second_reviewer):
    row = current(instinctual_run)[0]
    url = api(instinctual_run, f"{row.pk}/decision/")
    first = reviewer.post(url, {"decision": "carry", "rationale": "open", "version": 1}, format="json")
    assert first.status_code == 200, first.json()
    assert (first.json()["state"], first.json()["version"], first.json()["decided_by"]) == (
        "carried", 2, "token:reviewer-1")
    late = second_reviewer.post(url, {"decision": "accept", "version": 1}, format="json")
    assert late.status_code == 409
    error = late.json()["error"]
    assert error["code"] == "stale_version"
    assert (error["details"]["current"]["state"], error["details"]["current"]["version"]) == ("carried", 2)
    again = reviewer.post(url, {"decision": "accept", "version": 2}, format="json")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "invalid_decision")


@pytest.mark.parametrize("body, field", [
    ({"decision": "carry", "rationale": "", "version": 1}, "rationale"),
    ({"decision": "reject", "version": 1}, "rationale"),
    ({"decision": "maybe", "version": 1}, "decision"),
    ({"decision": "accept", "version": 1, "target": "OBJ-1"}, "target"),
])
def test_bad_decisions_are_400_naming_the_field(instinctual_run, reviewer, body, field):
    row = current(instinctual_run)[0]
    response = reviewer.post(api(instinctual_run, f"{row.pk}/decision/"), body, format="json")
    assert response.status_code == 400, response.json()
    assert field in str(response.json()["error"])
    row.refresh_from_db()
    assert row.version == 1


def test_only_reviewers_decide_and_outsiders_do_not_read(instinctual_run, agent, auditor, outsider, anonymous,
                                                         reviewer):
    row = current(instinctual_run)[0]
    url = api(instinctual_run, f"{row.pk}/decision/")
    for client in (agent, auditor, outsider):
        assert client.post(url, {"decision": "accept", "version": 1}, format="json").status_code == 403
    assert anonymous.post(url, {"decision": "accept", "version": 1}, format="json").status_code in (401, 403)
    assert outsider.get(api(instinctual_run)).status_code == 403
    assert agent.get(api(instinctual_run)).status_code == 200
    assert reviewer.post(api(instinctual_run, "999999/decision/"), {"decision": "accept", "version": 1},
                         format="json").status_code == 404
    row.refresh_from_db()
    assert row.state == "proposed"
    assert AuditEvent.objects.filter(run=instinctual_run, action="amendment.accepted").count() == 0


# --- two reviewers at the same moment, on two connections ----------------------------------------

@pytest.mark.django_db(transaction=True)
def test_two_reviewers_racing_on_one_amendment_one_wins_the_other_is_stale(run_factory):
    run = run_factory()
    upload_file(run, "reconciliation", INSTINCTUAL / "reconciliation.md")
    row = current(run)[0]
    events = AuditEvent.objects.filter(run=run).count()
    barrier = threading.Barrier(2)
    outcomes: list = [None, None]

    def worker(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes[i] = services.decide_amendment(
                amendment=AmendmentDecision.objects.select_related("run").get(pk=row.pk),
                decision="accept" if i == 0 else "carry", rationale=f"reviewer {i}",
                actor=Actor(f"user:reviewer-{i}"), expected_version=1)
        except Exception as error:  # noqa: BLE001 — the outcome under test
            outcomes[i] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(type(o).__name__ for o in outcomes) == ["AmendmentDecision", "StaleVersion"], outcomes
    row.refresh_from_db()
    assert row.version == 2
    assert AuditEvent.objects.filter(run=run).count() == events + 1
    assert verify_chain(run).ok

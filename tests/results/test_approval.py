"""Approval and reopening (DESIGN §3): what blocks a sign-off, what it records, what it queues."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from results import services
from results.models import Approval
from results.services import ApprovalBlocked, NoteRequired, approve_run, reopen_run
from records.manifests import build_manifest, manifest_sha256, pins_of
from reconcile.models import AmendmentDecision, CanonicalRecord, IssueDecision, Mapping
from reconcile.services import amendment_sha256
from records.models import Finding, IntegrationIssue, MemberReport, MemberVersion, ValidationReport
from records.parsing import parse_report
from reconcile.services.snapshots import amendment_snapshot, issue_snapshot, mapping_snapshot
from reviews.actions import Action
from reviews.audit import Actor, record_event, verify_chain
from reviews.models import AuditEvent, Run
from tests.conftest import CORPUS

CHEATSHEET = CORPUS / "AAS-2026-10-02-dynamic-cheatsheet-01"
CHEATSHEET_FIELDS = dict(
    run_id="AAS-2026-10-02-dynamic-cheatsheet-01",
    system="Dynamic Cheatsheet",
    title="Dynamic Cheatsheet agentic-system analysis",
    run_date="2026-10-02",
    target_class="memory/knowledge/context-engineering system",
    boundary_kind="whole-system",
    reviewed_boundary="5cfe3c37e8e52b1d858d0f3df46e7f17c50991b9",
    evidence_tier="code-grounded",
    analysis_cutoff="2026-10-02",
)
REVIEWER = Actor("user:reviewer-1")
NUMBERED = re.compile(r"^(?:(?:RT|MEM|EPI)-)?(?P<kind>[A-Z]{3})-(?P<number>\d+)$")


def store_members(run: Run, files: dict[str, bytes]) -> list[MemberVersion]:
    """Member rows as the upload pipeline leaves them: validated current versions."""
    versions = []
    for name, data in sorted(files.items()):
        member = MemberReport.objects.create(run=run, role=name.removesuffix(".md"))
        version = MemberVersion.objects.create(
            member=member, version=1, filename=name, content=data, sha256=hashlib.sha256(data).hexdigest(),
            size=len(data), status=MemberVersion.Status.VALIDATED, uploaded_by="token:agent-1",
        )
        member.current_version = version
        member.save(update_fields=["current_version"])
        versions.append(version)
    return versions


def mark_validated(run: Run, files: dict[str, bytes], *, errors: int = 0, warnings: int = 0) -> ValidationReport:
    digest = manifest_sha256(build_manifest(pins_of(files)))
    Run.objects.filter(pk=run.pk).update(manifest_sha256=digest, status=Run.Status.IN_REVIEW)
    run.refresh_from_db()
    return ValidationReport.objects.create(run=run, manifest_sha256=digest, errors=errors, warnings=warnings)


def reconcile_rows(run: Run, versions: list[MemberVersion], *, decided: bool = True) -> None:
    """Canonical records, mappings and issue decisions as a reviewer would leave them.

    The runtime's numbered records seed the shared set under bare IDs
    (RT-OBJ-2 → OBJ-2); every other member's declaration enters through a
    `new` mapping under the next free number of its kind; every integration
    issue and every amendment is accepted. With decided=False the mappings and issues stay proposed.
    """
    state = Mapping.State.ACCEPTED if decided else Mapping.State.PROPOSED
    last: dict[str, int] = {}
    by_role = {v.member.role: v for v in versions}
    runtime = by_role.get("runtime")
    if runtime is not None:
        for declaration in parse_report(bytes(runtime.content).decode()).declarations:
            match = NUMBERED.match(declaration.record_id)
            kind, number = match["kind"], int(match["number"])
            last[kind] = max(last.get(kind, 0), number)
            CanonicalRecord.objects.create(
                run=run, canonical_id=f"{kind}-{number}", kind=kind, number=number, label=declaration.label,
                text=declaration.body, origin=CanonicalRecord.Origin.RUNTIME, source_record_id=declaration.record_id,
            )
    for version in versions:
        if version.member.role == "runtime":
            continue
        report = parse_report(bytes(version.content).decode())
        for declaration in report.declarations:
            kind = declaration.kind
            last[kind] = last.get(kind, 0) + 1
            target = f"{kind}-{last[kind]}"
            mapping = Mapping.objects.create(
                run=run, source=declaration.record_id, relation=Mapping.Relation.NEW, target=target,
                origin=Mapping.Origin.SUGGESTED, proposed_by="app", state=state,
                rationale="a record of its own" if decided else "", decided_by="user:reviewer-1" if decided else "",
            )
            _decided_as_audited(run, "mapping", mapping, decided)
            if decided:
                CanonicalRecord.objects.create(
                    run=run, canonical_id=target, kind=kind, number=last[kind], label=declaration.label,
                    text=declaration.body, origin=CanonicalRecord.Origin.MAPPING, source_record_id=declaration.record_id,
                )
        for index, paragraph in enumerate(report.amendments, start=1):
            amendment = AmendmentDecision.objects.create(
                run=run, member_version=version, index=index, kind=paragraph.kind, text=paragraph.text,
                line=paragraph.line, references=list(paragraph.references),
                content_sha256=amendment_sha256(paragraph.kind, paragraph.text),
                state=AmendmentDecision.State.ACCEPTED if decided else AmendmentDecision.State.PROPOSED,
                rationale="read against both records" if decided else "",
                decided_by="user:reviewer-1" if decided else "",
            )
            _decided_as_audited(run, "amendment_decision", amendment, decided)
        for issue in report.integration_issues:
            row = IntegrationIssue.objects.create(
                run=run, member_version=version, index=issue.index, text=issue.text,
                references=list(issue.references), line=issue.line,
                content_sha256=hashlib.sha256(issue.text.encode()).hexdigest(),
            )
            decision = IssueDecision.objects.create(
                run=run, issue=row, state=IssueDecision.State.ACCEPTED if decided else IssueDecision.State.PROPOSED,
                rationale="checked against the runtime routes" if decided else "",
                decided_by="user:reviewer-1" if decided else "",
            )
            _decided_as_audited(run, "issue_decision", decision, decided)


# The event a reviewer's acceptance writes of each kind of row (reconcile.services.decisions): approval
# and finalization replay the decisions from the signed trail (DESIGN §8), so a decided row needs its event.
_ACCEPTED = {"mapping": (Action.MAPPING_ACCEPTED, mapping_snapshot),
             "issue_decision": (Action.ISSUE_ACCEPTED, issue_snapshot),
             "amendment_decision": (Action.AMENDMENT_ACCEPTED, amendment_snapshot)}


def _decided_as_audited(run: Run, object_type: str, row, decided: bool) -> None:
    if decided:
        audit_decision(run, row, _ACCEPTED[object_type][0])


def audit_decision(run: Run, row, action: Action) -> None:
    """The event the decision service writes when it leaves `row` as it is now (a test that sets a row's
    decision directly writes it too: approval reads the decisions from the trail)."""
    object_type = {Mapping: "mapping", IssueDecision: "issue_decision", AmendmentDecision: "amendment_decision"}[type(row)]
    row.refresh_from_db()
    record_event(run=run, actor=REVIEWER, action=action, object_type=object_type, object_id=row.pk,
                 after=_ACCEPTED[object_type][1](row))


def corpus_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.md"))}


def finalize_sends(callbacks) -> list:
    """The on-commit callbacks that queue finalization (the event feed's wake-ups are others')."""
    return [cb for cb in callbacks if getattr(getattr(cb, "func", None), "__self__", None) is services.FINALIZE]


@pytest.fixture
def ready_run(run_factory):
    """The dynamic-cheatsheet corpus run, validated without errors and fully reconciled, in review."""
    run = run_factory(**CHEATSHEET_FIELDS)
    files = corpus_files(CHEATSHEET)
    versions = store_members(run, files)
    mark_validated(run, files, warnings=1)
    reconcile_rows(run, versions)
    return run


@pytest.fixture
def undecided_run(run_factory):
    run = run_factory(**CHEATSHEET_FIELDS)
    files = corpus_files(CHEATSHEET)
    versions = store_members(run, files)
    mark_validated(run, files)
    reconcile_rows(run, versions, decided=False)
    return run


# --- approve_run ---------------------------------------------------------------


def test_it_approves_a_reconciled_run_and_records_its_manifest(ready_run, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        approval = approve_run(run=ready_run, note="Read every mapping against the runtime routes.", actor=REVIEWER)
    ready_run.refresh_from_db()
    assert ready_run.status == Run.Status.APPROVED
    assert approval.approved_by == "user:reviewer-1"
    assert approval.manifest_sha256 == ready_run.manifest_sha256
    assert hashlib.sha256(approval.manifest.encode()).hexdigest() == approval.manifest_sha256
    assert "runtime.md:" in approval.manifest
    assert len(finalize_sends(callbacks)) == 1  # finalization queued after commit


def test_it_writes_one_run_approved_event_with_the_manifest_and_note(ready_run, django_capture_on_commit_callbacks):
    before = AuditEvent.objects.filter(run=ready_run).count()
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=ready_run, note="Checked hashes and decisions.", actor=REVIEWER)
    events = list(AuditEvent.objects.filter(run=ready_run).order_by("seq"))
    assert len(events) == before + 1
    event = events[-1]
    assert event.action == "run.approved"
    assert event.actor == "user:reviewer-1"
    assert event.before == {"status": "in_review"}
    assert event.after["status"] == "approved"
    assert event.after["manifest_sha256"] == ready_run.manifest_sha256
    assert event.after["note"] == "Checked hashes and decisions."
    assert verify_chain(ready_run).ok


def test_it_refuses_an_approval_without_a_note(ready_run):
    with pytest.raises(NoteRequired):
        approve_run(run=ready_run, note="   ", actor=REVIEWER)
    ready_run.refresh_from_db()
    assert ready_run.status == Run.Status.IN_REVIEW
    assert not Approval.objects.filter(run=ready_run).exists()


def test_it_lists_undecided_mappings_and_issues_with_counts(undecided_run):
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=undecided_run, note="Tried too early.", actor=REVIEWER)
    codes = [b.code for b in blocked.value.blockers]
    records = {m.source for m in Mapping.objects.filter(run=undecided_run)}
    issues = IntegrationIssue.objects.filter(run=undecided_run).count()
    # One blocker per record without a disposition and per undecided issue, each naming it.
    assert codes.count("open_disposition") == len(records)
    assert codes.count("open_issue") == issues
    assert {b.record for b in blocked.value.blockers if b.code == "open_disposition"} == records
    assert "Memory integration issue 1 is undecided: accept or reject it" in blocked.value.reasons
    undecided_run.refresh_from_db()
    assert undecided_run.status == Run.Status.IN_REVIEW


def test_it_counts_a_stale_mapping_as_undecided(ready_run):
    mapping = Mapping.objects.filter(run=ready_run).first()
    Mapping.objects.filter(pk=mapping.pk).update(state=Mapping.State.STALE)
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=ready_run, note="n", actor=REVIEWER)
    [blocker] = blocked.value.blockers
    assert (blocker.code, blocker.record) == ("open_disposition", mapping.source)
    assert f"accept or reject {mapping.source} → {mapping.target} (new), stale since the record changed" in blocker.message
    assert blocker.link.startswith(f"/runs/{ready_run.run_id}/reconcile/?member=") and blocker.link.endswith(f"#pair-{mapping.pk}")


def test_it_counts_an_issue_without_a_decision_row_as_undecided(ready_run):
    IssueDecision.objects.filter(run=ready_run, issue__index=2).delete()
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=ready_run, note="n", actor=REVIEWER)
    assert blocked.value.reasons == ["Memory integration issue 2 is undecided: accept or reject it"]


def test_it_is_blocked_by_validation_errors_naming_the_first(ready_run):
    report = ValidationReport.objects.get(run=ready_run)
    ValidationReport.objects.filter(pk=report.pk).update(errors=2)
    Finding.objects.create(report=report, member="memory", code="unresolved-reference", severity="error",
                           record_id="RT-OBJ-9", line=3, message="not declared")
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=ready_run, note="n", actor=REVIEWER)
    assert blocked.value.reasons == [
        "Validation error unresolved-reference in memory at RT-OBJ-9 line 3: not declared",
        "… and 1 more validation errors.",
    ]
    assert {b.code for b in blocked.value.blockers} == {"validation_error"}


def test_it_is_blocked_when_validation_is_stale(ready_run):
    version = MemberVersion.objects.get(member__run=ready_run, member__role="memory")
    new = MemberVersion.objects.create(
        member=version.member, version=2, filename="memory.md", content=b"# changed\n",
        sha256=hashlib.sha256(b"# changed\n").hexdigest(), size=10, uploaded_by="token:agent-1",
    )
    MemberReport.objects.filter(pk=version.member_id).update(current_version=new)
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=ready_run, note="n", actor=REVIEWER)
    assert len(blocked.value.reasons) == 1
    assert blocked.value.reasons[0].startswith("Validation is stale")


def test_it_refuses_bytes_altered_after_validation_naming_both_manifests(ready_run):
    from reconcile.blockers import run_standing

    MemberVersion.objects.filter(member__run=ready_run, member__role="memory").update(content=b"# altered\n")
    assert run_standing(ready_run).blockers == ()  # the standing reads the recorded hashes, not the bytes
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=ready_run, note="n", actor=REVIEWER)
    [blocker] = blocked.value.blockers
    assert blocker.code == "validation_stale"
    assert ready_run.manifest_sha256 in blocker.message and "no longer matches its recorded SHA-256" in blocker.message
    assert Run.objects.get(pk=ready_run.pk).status == Run.Status.IN_REVIEW


def test_it_is_blocked_when_the_manifest_was_never_validated(ready_run):
    ValidationReport.objects.filter(run=ready_run).delete()
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=ready_run, note="n", actor=REVIEWER)
    assert blocked.value.reasons == [
        "The current member versions have not been validated yet; wait for validation to finish."
    ]


def test_it_refuses_to_approve_a_run_that_is_not_in_review(ready_run):
    Run.objects.filter(pk=ready_run.pk).update(status=Run.Status.VALIDATING)
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=ready_run, note="n", actor=REVIEWER)
    assert blocked.value.reasons[0] == "The run is validating; only a run in review can be approved."


def test_it_refuses_a_second_approval(ready_run, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=ready_run, note="first", actor=REVIEWER)
    with pytest.raises(ApprovalBlocked):
        approve_run(run=ready_run, note="second", actor=REVIEWER)
    assert Approval.objects.filter(run=ready_run).count() == 1


# --- reopen_run ----------------------------------------------------------------


def test_it_reopens_an_approved_run_and_withdraws_the_approval(ready_run, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        approval = approve_run(run=ready_run, note="ok", actor=REVIEWER)
    reopen_run(run=ready_run, reason="A mapping target was wrong.", actor=REVIEWER)
    ready_run.refresh_from_db()
    approval.refresh_from_db()
    assert ready_run.status == Run.Status.IN_REVIEW
    assert approval.withdrawn_at is not None
    assert approval.withdrawn_reason == "A mapping target was wrong."
    event = AuditEvent.objects.filter(run=ready_run).order_by("-seq").first()
    assert event.action == "run.reopened"
    assert event.after["reason"] == "A mapping target was wrong."
    assert services.current_approval(ready_run) is None


def test_it_refuses_to_reopen_without_a_reason(ready_run, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=ready_run, note="ok", actor=REVIEWER)
    with pytest.raises(NoteRequired):
        reopen_run(run=ready_run, reason="", actor=REVIEWER)
    ready_run.refresh_from_db()
    assert ready_run.status == Run.Status.APPROVED


def test_it_refuses_to_reopen_a_run_in_review(ready_run):
    with pytest.raises(ApprovalBlocked):
        reopen_run(run=ready_run, reason="why not", actor=REVIEWER)


def test_it_can_approve_again_after_reopening(ready_run, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=ready_run, note="first", actor=REVIEWER)
    reopen_run(run=ready_run, reason="look again", actor=REVIEWER)
    with django_capture_on_commit_callbacks(execute=False):
        second = approve_run(run=ready_run, note="second look", actor=REVIEWER)
    assert services.current_approval(ready_run) == second
    assert Approval.objects.filter(run=ready_run).count() == 2


# --- the approval panel and its forms --------------------------------------------


def login(persona):
    from django.test import Client

    client = Client()
    client.force_login(persona.user)
    return client


def test_the_panel_lists_blockers_and_disables_approve(undecided_run, reviewer):
    html = login(reviewer).get(f"/runs/{undecided_run.run_id}/approve/").content.decode()
    assert "Not approvable yet:" in html
    assert "14 blockers." in html or "blockers." in html
    assert 'data-code="open_disposition"' in html and "… and 11 more" in html  # 12 shown, the API lists all
    assert '<button type="submit" disabled>Approve</button>' in html


def test_the_panel_offers_approve_to_a_reviewer_and_nothing_to_an_agent(ready_run, reviewer, agent):
    assert 'name="note"' in login(reviewer).get(f"/runs/{ready_run.run_id}/approve/").content.decode()
    assert 'name="note"' not in login(agent).get(f"/runs/{ready_run.run_id}/approve/").content.decode()


def test_the_panel_fragment_for_htmx_sends_the_forms_back_to_the_page_it_sits_on(ready_run, reviewer):
    html = login(reviewer).get(f"/runs/{ready_run.run_id}/approve/", HTTP_HX_REQUEST="true",
                               HTTP_HX_CURRENT_URL=f"http://testserver/runs/{ready_run.run_id}/reconcile/").content.decode()
    assert not html.lstrip().startswith("<!doctype")
    assert f'name="next" value="/runs/{ready_run.run_id}/reconcile/"' in html


def test_approving_in_the_browser_redirects_with_a_message(ready_run, reviewer, django_capture_on_commit_callbacks):
    browser = login(reviewer)
    with django_capture_on_commit_callbacks(execute=False):
        response = browser.post(f"/runs/{ready_run.run_id}/approve/",
                                {"note": "Checked each mapping.", "next": f"/runs/{ready_run.run_id}/reconcile/"})
    assert response.status_code == 302
    assert response["Location"] == f"/runs/{ready_run.run_id}/reconcile/"
    ready_run.refresh_from_db()
    assert ready_run.status == Run.Status.APPROVED
    page = browser.get(f"/runs/{ready_run.run_id}/result/")
    assert "Approved; a worker is rendering the final result." in page.content.decode()


def test_a_blocked_approval_in_the_browser_says_why(undecided_run, reviewer):
    browser = login(reviewer)
    response = browser.post(f"/runs/{undecided_run.run_id}/approve/", {"note": "too early", "next": "https://evil.example/"})
    assert response["Location"] == f"/runs/{undecided_run.run_id}/"  # never redirected off-site
    page = browser.get(f"/runs/{undecided_run.run_id}/result/").content.decode()
    assert "Not approved: 23 blockers (the list is on this page): " in page and "has no place yet" in page


def test_an_agent_cannot_approve_in_the_browser(ready_run, agent):
    response = login(agent).post(f"/runs/{ready_run.run_id}/approve/", {"note": "sneaky"})
    assert response.status_code == 403
    ready_run.refresh_from_db()
    assert ready_run.status == Run.Status.IN_REVIEW
    assert AuditEvent.objects.filter(run=ready_run, action="permission.denied").exists()


def test_reopening_in_the_browser(ready_run, reviewer, django_capture_on_commit_callbacks):
    browser = login(reviewer)
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=ready_run, note="ok", actor=REVIEWER)
    assert "Why the run goes back to review" in browser.get(f"/runs/{ready_run.run_id}/approve/").content.decode()
    response = browser.post(f"/runs/{ready_run.run_id}/reopen/", {"reason": "Second look at issue 2."})
    assert response.status_code == 302
    ready_run.refresh_from_db()
    assert ready_run.status == Run.Status.IN_REVIEW


def test_the_approve_form_needs_csrf(ready_run, reviewer):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(reviewer.user)
    assert browser.post(f"/runs/{ready_run.run_id}/approve/", {"note": "x"}).status_code == 403

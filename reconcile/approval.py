"""Approval, finalization and the final result of a run (DESIGN §3, §6 hashing, §7).

Services here follow the house rule: keyword-only verbs, each state change
under a row lock on the run and written to the audit trail in the same
transaction. The result is rendered by the pure `reconcile.rendering` from
plain data gathered here, from the stored member bytes re-read and re-hashed
at finalization (never from anything derived from them earlier), and from
the reviewers' decisions.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from records import archives, snapshots
from records.document import ParsedReport
from records import parsed as parse_cache
from records.models import IntegrationIssue, MemberVersion
from records.validation import ERROR, WARNING, MemberInput, RunFacts, validate_set
from reviews.audit import Actor, lock_run, record_event
from reviews.models import AuditEvent, Run

from . import bundles, dispositions, rendering, selfcheck
from . import services as reconcile_services
from . import blockers
from .blockers import run_standing
from .models import AmendmentDecision as AmendmentDecisionRow
from .models import Approval, CanonicalRecord, Mapping, Result
from .models import IssueDecision as IssueDecisionRow

logger = logging.getLogger(__name__)

RESULT_DISPOSITIONS = ("complete", "blocked", "out-of-scope")
# Sections of a member that the result carries elsewhere, not as verbatim prose.
NOT_PROSE = {
    "shared records",
    "integration issues",
    "annotations",
    "reconciliation",
    "source register",
    "boundary and evidence",
}
BOUNDARY_SECTION = "boundary and evidence"


class ApprovalBlocked(Exception):
    """The run cannot be approved (or reopened, or retried) now; `reasons` says what blocks, one line
    each, and `blockers` (for approval) the same as `{code, record, message, link}` items."""

    def __init__(self, reasons: list[str], blockers: list[dispositions.Blocker] | tuple = (), code: str = ""):
        super().__init__(" ".join(reasons))
        self.reasons = reasons
        self.blockers = list(blockers)
        self.code = code  # the API's error code when the state itself says it (`run_final`)


# An approval note or reopening reason is prose a reviewer writes, carried into the result and
# the audit trail: a megabyte of it is a mistake or an attack, refused before anything is stored.
MAX_NOTE_CHARS = 20_000


def _check_note_length(name: str, text: str) -> None:
    if len(text) > MAX_NOTE_CHARS:
        raise NoteRequired(f"{name}: {len(text)} characters; it may hold at most {MAX_NOTE_CHARS}.")


class NoteRequired(ValueError):
    """An approval without a note, or a reopening without a reason."""


class FinalizationRefused(Exception):
    """The stored bytes or their validation no longer support the approved result."""


# --- the run's current member set -------------------------------------------


def current_versions(run: Run) -> list[MemberVersion]:
    """The current version of every member of the run, by role, with its bytes (approval hashes them)."""
    return blockers.current_versions(run, content=True)


def member_name(version: MemberVersion) -> str:
    return archives.member_filename(version.member.role)


def member_files(versions: list[MemberVersion]) -> dict[str, bytes]:
    return {member_name(v): bytes(v.content) for v in versions}


def run_manifest(versions: list[MemberVersion]) -> tuple[str, str]:
    """The §1 ARTIFACT.yaml text of the current member versions (hashed from their bytes) and its SHA-256."""
    text = archives.build_manifest(archives.pins_of(member_files(versions)))
    return text, archives.manifest_sha256(text)


def approval_blockers(run: Run, versions: list[MemberVersion] | None = None) -> list[dispositions.Blocker]:
    """Everything that stops `run` from being approved now ([] when it can be), from the one place
    that says so (`reconcile.blockers.run_standing`)."""
    return list(run_standing(run, versions).blockers)


# --- approval and reopening -------------------------------------------------


def _move(locked: Run, *, status: str, actor: Actor, action: str, reason: str = "", after: dict | None = None) -> None:
    """Transition the locked run and write the one audit event of the change."""
    old = locked.transition_to(status, reason=reason)
    locked.save(update_fields=Run.STATUS_FIELDS)
    record_event(
        run=locked,
        actor=actor,
        action=action,
        object_type="run",
        object_id=locked.run_id,
        before={"status": old},
        after={"status": status, **({"reason": reason} if reason else {}), **(after or {})},
    )


def _sync(run: Run, locked: Run) -> None:
    run.status, run.status_reason, run.failed_from, run.updated_at = (
        locked.status, locked.status_reason, locked.failed_from, locked.updated_at,
    )


def approve_run(*, run: Run, note: str, actor: Actor) -> Approval:
    """Sign the run off on its current manifest and queue finalization after commit.

    Preconditions (else ApprovalBlocked naming each): in review, validation of
    the current manifest has run and found no error, every mapping and every
    integration issue decided. The caller has checked the reviewer role.
    """
    note = (note or "").strip()
    if not note:
        raise NoteRequired("note: say what you checked and how; the note is carried into the result.")
    _check_note_length("note", note)
    with transaction.atomic():
        locked = lock_run(run)
        if locked.status == Run.Status.FINAL:
            raise ApprovalBlocked(["The run is final and closed for good; revise it to change it."], code="run_final")
        versions = current_versions(locked)
        blockers = approval_blockers(locked, versions)
        if blockers:
            raise ApprovalBlocked([b.message for b in blockers], blockers)
        manifest, digest = run_manifest(versions)  # from the stored bytes, hashed now
        if digest != locked.manifest_sha256:
            stale = dispositions.Blocker(
                dispositions.VALIDATION_STALE, locked.run_id,
                f"The stored member bytes hash to manifest {digest}, not the validated {locked.manifest_sha256}: "
                "a member no longer matches its recorded SHA-256. Upload the members again.", f"/runs/{locked.run_id}/")
            raise ApprovalBlocked([stale.message], [stale])
        approval = Approval.objects.create(
            run=locked, note=note, approved_by=actor.label, manifest=manifest, manifest_sha256=digest,
        )
        _move(locked, status=Run.Status.APPROVED, actor=actor, action="run.approved",
              after={"manifest_sha256": digest, "note": note, "approval": approval.pk})
        transaction.on_commit(lambda: _queue_finalize(locked.pk))
    _sync(run, locked)
    return approval


def _queue_finalize(run_pk: int) -> None:
    """Hand finalization to a worker; a broker that is down loses nothing (the run stays approved
    or finalizing, and `retry_finalize` or a redelivery picks it up)."""
    from .tasks import finalize_run as finalize_task

    try:
        finalize_task.apply_async(args=[run_pk], retry=True,
                                  retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.2})
    except Exception:  # noqa: BLE001 — whatever the transport raises, the committed approval is safe
        logger.warning("could not queue finalize_run(%s)", run_pk, exc_info=True)


def finalization_failed(run: Run) -> bool:
    """The run failed while finalizing: it can be retried, or reopened like an approved run."""
    return run.status == Run.Status.FAILED and run.failed_from == Run.Status.FINALIZING


def current_approval(run: Run) -> Approval | None:
    return Approval.objects.filter(run=run, withdrawn_at__isnull=True).order_by("-approved_at", "-id").first()


def reopen_run(*, run: Run, reason: str, actor: Actor) -> Run:
    """Move an approved run (or one whose finalization failed) back to review; the approval is withdrawn."""
    reason = (reason or "").strip()
    if not reason:
        raise NoteRequired("reason: say why the run goes back to review.")
    _check_note_length("reason", reason)
    with transaction.atomic():
        locked = lock_run(run)
        if locked.status == Run.Status.FINAL:
            raise ApprovalBlocked(["The run is final and closed for good; revise it to change it."], code="run_final")
        if locked.status != Run.Status.APPROVED and not finalization_failed(locked):
            raise ApprovalBlocked([f"The run is {locked.status}; only an approved run that is not final can be reopened."])
        approval = current_approval(locked)
        if approval is not None:
            approval.withdrawn_at = timezone.now()
            approval.withdrawn_reason = reason
            approval.save(update_fields=["withdrawn_at", "withdrawn_reason"])
        _move(locked, status=Run.Status.IN_REVIEW, actor=actor, action="run.reopened", reason=reason,
              after={"approval": approval.pk if approval else None})
    _sync(run, locked)
    return locked


# --- finalization -------------------------------------------------------------


@dataclass(frozen=True)
class _Member:
    version: MemberVersion
    data: bytes
    report: ParsedReport

    @property
    def name(self) -> str:
        return member_name(self.version)

    @property
    def role(self) -> str:
        return self.version.member.role

    @property
    def shown_name(self) -> str:
        """The file name the run page and the API show (the uploaded name), which the result uses too;
        `name` is the set layout's name that manifests pin."""
        return self.version.filename or self.name


def finalize_run(*, run: Run, actor: Actor) -> Result | None:
    """Render and store the run's result once; idempotent.

    Returns the stored Result (the same row on every later call), or None
    when the run is not (or no longer) waiting for finalization. A member
    whose stored bytes no longer match their SHA-256, or a set that no longer
    validates, moves the run to failed with the reason; `retry_finalize`
    tries again.
    """
    with transaction.atomic():
        locked = lock_run(run)
        existing = Result.objects.filter(run=locked).first()
        if existing is not None:
            return existing
        if locked.status == Run.Status.APPROVED:
            _move(locked, status=Run.Status.FINALIZING, actor=actor, action="run.finalizing")
        elif locked.status != Run.Status.FINALIZING:
            # Reopened, failed or never approved: nothing to do (a late or duplicate task).
            _sync(run, locked)
            return None
    approval = current_approval(locked)
    try:
        if approval is None:
            raise FinalizationRefused("no current approval for this run")
        markdown, data = _render(locked, approval)
    except FinalizationRefused as refused:
        _fail(run, reason=str(refused), actor=actor)
        return None
    digest = archives.sha256_hex(markdown.encode("utf-8"))
    try:
        with transaction.atomic():
            locked = lock_run(run)
            existing = Result.objects.filter(run=locked).first()
            if existing is not None:
                return existing
            if locked.status != Run.Status.FINALIZING:
                _sync(run, locked)
                return None
            result = Result.objects.create(
                run=locked, approval=approval, markdown=markdown, data=data, sha256=digest,
                manifest=approval.manifest, manifest_sha256=approval.manifest_sha256,
            )
            _move(locked, status=Run.Status.FINAL, actor=actor, action="run.finalized",
                  after={"result_sha256": digest, "manifest_sha256": approval.manifest_sha256})
    except IntegrityError:
        # Another worker stored it first (Result is one per run): theirs is the result.
        return Result.objects.get(run=run)
    _sync(run, locked)
    return result


def _fail(run: Run, *, reason: str, actor: Actor) -> None:
    with transaction.atomic():
        locked = lock_run(run)
        if locked.status == Run.Status.FINALIZING:
            _move(locked, status=Run.Status.FAILED, actor=actor, action="run.finalize_failed", reason=reason)
    _sync(run, locked)


def retry_finalize(*, run: Run, actor: Actor) -> Run:
    """failed (during finalization) → finalizing again, and queue the work after commit."""
    with transaction.atomic():
        locked = lock_run(run)
        if not finalization_failed(locked):
            raise ApprovalBlocked([
                f"The run is {locked.status}; only a run whose finalization failed can be retried."
            ])
        if current_approval(locked) is None:
            raise ApprovalBlocked(["The run has no current approval; reopen it and approve again."])
        _move(locked, status=Run.Status.FINALIZING, actor=actor, action="run.finalize_retried",
              after={"previous_reason": locked.status_reason})
        transaction.on_commit(lambda: _queue_finalize(locked.pk))
    _sync(run, locked)
    return locked


def sweep_unfinished_finalizations(*, older_than_seconds: int, actor: Actor) -> dict[str, int]:
    """Re-queue finalization of runs it never reached (DESIGN §10): `approved` for longer than
    `older_than_seconds` (the message was lost, e.g. the broker was down at approval) and
    `finalizing` untouched that long (the worker died mid-task). `finalize_run` is idempotent and
    resumes a `finalizing` claim, so a redundant re-queue costs one no-op task. Each re-queue is
    audited and touches `updated_at`, so a run whose worker stays away is retried once per period,
    not on every sweep."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=older_than_seconds)
    candidates = list(
        Run.objects.filter(updated_at__lt=cutoff)
        .filter(Q(status=Run.Status.FINALIZING)
                | Q(status=Run.Status.APPROVED, approvals__withdrawn_at__isnull=True, approvals__approved_at__lt=cutoff))
        .distinct().order_by("pk").values_list("pk", flat=True)
    )
    requeued = {Run.Status.APPROVED: 0, Run.Status.FINALIZING: 0}
    for pk in candidates:
        with transaction.atomic():
            locked = Run.objects.select_for_update().get(pk=pk)
            if locked.status not in requeued or locked.updated_at >= cutoff:
                continue  # finalized, reopened or touched since the query
            approval = current_approval(locked)
            if approval is None or approval.approved_at >= cutoff:
                continue
            idle = locked.updated_at
            locked.updated_at = now
            locked.save(update_fields=["updated_at"])
            record_event(run=locked, actor=actor, action="run.finalize_requeued", object_type="run",
                         object_id=locked.run_id, before={"status": locked.status, "updated_at": idle},
                         after={"status": locked.status, "approval": approval.pk})
            transaction.on_commit(partial(_queue_finalize, locked.pk))
        requeued[locked.status] += 1
    return {"approved": requeued[Run.Status.APPROVED], "finalizing": requeued[Run.Status.FINALIZING]}


def _verified_members(run: Run, approval: Approval) -> list[_Member]:
    """Re-read and re-hash every stored current member version; refuse on any mismatch."""
    members = []
    for version in current_versions(run):
        data = bytes(version.content)
        actual = archives.sha256_hex(data)
        if actual != version.sha256:
            raise FinalizationRefused(
                f"{member_name(version)} (version {version.version}) no longer matches its hash: "
                f"recorded SHA-256 {version.sha256}, stored bytes hash to {actual}"
            )
        try:
            data.decode("utf-8")  # a result is rendered only from text
        except UnicodeDecodeError as exc:
            raise FinalizationRefused(f"{member_name(version)} is not UTF-8 text ({exc})") from None
        # The parse of exactly these bytes (hashed just above), kept by the parse task when this process ran it.
        members.append(_Member(version=version, data=data, report=parse_cache.report_of(actual, lambda: data)))
    if not members:
        raise FinalizationRefused("the run has no member reports")
    digest = archives.manifest_sha256(archives.build_manifest(archives.pins_of({m.name: m.data for m in members})))
    if digest != approval.manifest_sha256:
        raise FinalizationRefused(
            f"the member set changed since approval: approved manifest SHA-256 {approval.manifest_sha256}, "
            f"current manifest SHA-256 {digest}"
        )
    return members


def _render(run: Run, approval: Approval) -> tuple[str, dict]:
    members = _verified_members(run, approval)
    canonical = list(CanonicalRecord.objects.filter(run=run).order_by("kind", "number", "canonical_id"))
    mappings = list(Mapping.objects.filter(run=run).order_by("source", "id"))
    active_ids = [c.canonical_id for c in canonical if c.state == CanonicalRecord.State.ACTIVE]
    accepted = [m for m in mappings if m.state == Mapping.State.ACCEPTED]
    inputs = [MemberInput(name=m.name, role=m.role, report=m.report) for m in members]
    findings = validate_set(
        inputs,
        RunFacts(run_id=run.run_id, reviewed_boundary=run.reviewed_boundary,
                 revises=run.revised_run_ids()),
        canonical_ids=active_ids,
        extra_mappings=[(m.source, m.relation, m.target) for m in accepted],
    )
    # The quotations of the re-hashed bytes, checked again against the stored snapshot: the result's
    # counts are the run page's, and a quotation that no longer holds refuses the result.
    findings = snapshots.recheck_quotations(run=run, inputs=inputs, found=findings)
    errors = [f for f in findings if f.severity == ERROR]
    if errors:
        first = "; ".join(f"{f.code} in {f.member or 'the set'}: {f.message}" for f in errors[:3])
        raise FinalizationRefused(
            f"re-validation of the stored member bytes found {len(errors)} error(s): {first}"
        )
    warnings = sum(1 for f in findings if f.severity == WARNING)
    standing = run_standing(run)
    # Every blocker about the decisions (an open issue included); the run's status and its validation
    # are what this finalization re-checks itself above (re-hashed, re-validated).
    checked_here = (dispositions.RUN_STATUS, dispositions.NO_MEMBERS, dispositions.VALIDATION_PENDING,
                    dispositions.VALIDATION_STALE, dispositions.VALIDATION_ERROR)
    late = [b for b in standing.blockers if b.code not in checked_here]
    if late:
        raise FinalizationRefused("the decisions no longer support approval: " + "; ".join(b.message for b in late[:3]))
    data = gather_result_input(
        run=run, approval=approval, members=members, canonical=canonical, mappings=mappings, warnings=warnings,
        standing=standing,
    )
    try:
        markdown = rendering.render_result(data)
    except ValueError as exc:
        raise FinalizationRefused(f"the result cannot be rendered: {exc}") from None
    problems = selfcheck.check_result(
        markdown,
        member_records={(m.role, d.record_id) for m in members if m.role not in reconcile_services.SEEDING_ROLES
                        for d in m.report.declarations},
        accepted={(m.source, m.relation, m.target or "") for m in accepted},
    )
    if problems:
        raise FinalizationRefused("the rendered result failed its self-check: " + "; ".join(problems[:5])
                                  + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))
    return markdown, rendering.result_json(data)


# --- gathering plain data for the renderer ------------------------------------


def _top_sections(report: ParsedReport):
    sections = list(report.sections)
    if sum(1 for s in sections if s.level == 1) > 1:
        top = 1
    else:
        levels = [s.level for s in sections if s.level > 1]
        top = min(levels) if levels else 1
    return [s for s in sections if s.level == top]


def _norm(title: str) -> str:
    return re.sub(r"\s+", " ", title).strip().lower()


def _section_body(report: ParsedReport, section) -> str:
    lines = report.text.splitlines(keepends=True)
    return "".join(lines[section.line_start:section.line_end]).strip("\n")


def _prose_and_boundary(member: _Member) -> tuple[tuple[tuple[str, str], ...], str]:
    prose, boundary = [], ""
    for section in _top_sections(member.report):
        title = _norm(section.title)
        if title == BOUNDARY_SECTION:
            boundary = _section_body(member.report, section)
        elif title not in NOT_PROSE and member.role != "result":
            prose.append((section.title, _section_body(member.report, section)))
    return tuple(prose), boundary


def _aliases(canonical: list[CanonicalRecord], accepted: list[Mapping]) -> dict[str, str]:
    """Every ID a member may have used for a canonical record → its canonical ID."""
    active = {c.canonical_id for c in canonical if c.state == CanonicalRecord.State.ACTIVE}
    aliases = {c.source_record_id: c.canonical_id for c in canonical
               if c.canonical_id in active and c.source_record_id}
    for m in accepted:
        if m.target in active and m.relation in (Mapping.Relation.SAME, Mapping.Relation.NEW):
            aliases.setdefault(m.source, m.target)
    aliases.update({cid: cid for cid in active})
    return aliases


def _declaration(members: list[_Member], record_id: str) -> tuple[str | None, str]:
    """(the declaration's body, the shown name of the member declaring it), or (None, "")."""
    for member in members:
        for declaration in member.report.declarations:
            if declaration.record_id == record_id:
                return declaration.body, member.shown_name
    return None, ""


def _decision_word(state: str) -> str:
    return {"accepted": "accept", "rejected": "reject", "carried": "carry"}.get(state, state)


def gather_result_input(
    *, run: Run, approval: Approval, members: list[_Member], canonical: list[CanonicalRecord],
    mappings: list[Mapping], warnings: int, standing: dispositions.Standing,
) -> rendering.ResultInput:
    """The renderer's input for a set that re-validated without errors (any error refuses finalization)."""
    accepted = [m for m in mappings if m.state == Mapping.State.ACCEPTED]
    aliases = _aliases(canonical, accepted)

    annotations: dict[str, list[rendering.AnnotationEntry]] = {}
    for member in members:
        for annotation in member.report.annotations:
            canonical_id = aliases.get(annotation.target)
            if canonical_id is not None:
                annotations.setdefault(canonical_id, []).append(
                    rendering.AnnotationEntry(member=member.shown_name, target=annotation.target, text=annotation.body)
                )

    records = []
    for c in canonical:
        if c.state != CanonicalRecord.State.ACTIVE:
            continue
        declared_as = c.source_record_id or c.canonical_id
        body, declared_in = _declaration(members, declared_as)
        renamed = declared_as != c.canonical_id and body is not None  # RT-OBJ-2 entered as OBJ-2
        records.append(rendering.CanonicalEntry(
            canonical_id=c.canonical_id, kind=c.kind, label=c.label, text=c.text if body is None else body,
            annotations=tuple(annotations.get(c.canonical_id, ())),
            declared_as=declared_as if renamed else "", declared_in=declared_in if renamed else "",
        ))

    member_entries, sources, seen_sources = [], [], set()
    for member in members:
        prose, boundary = _prose_and_boundary(member)
        member_entries.append(rendering.MemberEntry(
            name=member.shown_name, role=member.role, version=member.version.version, sha256=member.version.sha256,
            boundary_text=boundary, prose_sections=prose,
        ))
        for row in member.report.sources:
            if row.source_id not in seen_sources:
                seen_sources.add(row.source_id)
                sources.append(rendering.SourceEntry(source_id=row.source_id, columns=row.columns))

    issue_entries, rejected = [], []
    issues = (IntegrationIssue.objects.filter(member_version__in=[m.version for m in members])
              .select_related("member_version__member", "decision").order_by("member_version__member__role", "index"))
    for issue in issues:
        decision = getattr(issue, "decision", None)
        role = issue.member_version.member.role
        state = decision.state if decision is not None else "proposed"
        issue_entries.append(rendering.IssueDecision(
            member=role, index=issue.index, text=issue.text, decision=_decision_word(state),
            rationale=decision.rationale if decision is not None else "", decided_by=decision.decided_by if decision else "",
        ))
        if state == IssueDecisionRow.State.REJECTED:
            rejected.append(rendering.RejectedItem(
                item=f"integration issue {issue.index} of the {role} report",
                consequence="the refinement or conflict it states is not carried into the shared records",
                rationale=decision.rationale,
            ))
    # A rejected mapping is not a limitation by itself: its record either has another, accepted place
    # (the rejection is an alternative not taken, in Reconciliation) or has none (disposition
    # `rejected`, in Limitations), as `standing` says.
    for c in canonical:
        if c.state == CanonicalRecord.State.REJECTED:
            rejected.append(rendering.RejectedItem(
                item=f"canonical record {c.canonical_id}",
                consequence=f"{c.canonical_id} ({c.label or c.kind}) is not part of the shared records",
                rationale=c.rationale,
            ))

    amendments, conflicts = _amendment_entries(members, aliases)

    fronts = [m.report.front_matter for m in members if isinstance(m.report.front_matter, dict)]
    disposition = next((f.get("result-disposition") for f in fronts
                        if f.get("result-disposition") in RESULT_DISPOSITIONS), "complete")
    profile = next((m.report.front_matter["memory-comparison"] for m in members
                    if isinstance(m.report.front_matter, dict)
                    and isinstance(m.report.front_matter.get("memory-comparison"), dict)), None)

    return rendering.ResultInput(
        run_id=run.run_id, system=run.system, title=run.title, run_date=_iso(run.run_date),
        result_disposition=disposition, target_class=run.target_class, boundary_kind=run.boundary_kind,
        reviewed_boundary=run.reviewed_boundary, evidence_tier=run.evidence_tier,
        analysis_cutoff=_iso(run.analysis_cutoff),
        verification=rendering.Verification(
            approval_note=approval.note, approved_by=approval.approved_by,
            approved_at=approval.approved_at.isoformat(timespec="seconds"),
            errors=0, warnings=warnings, manifest_sha256=approval.manifest_sha256,
            quotations=snapshots.verification_statement(run),
            checks=(
                f"SHA-256 of every stored member version recomputed and matched ({len(members)} members)",
                "run manifest recomputed from the stored member bytes and matched the approved manifest",
                "record contract (DESIGN §6) re-validated on the parse of the re-hashed member bytes, per member "
                "and across the set",
                *(("every quotation of the re-hashed member bytes re-checked against the stored source snapshot",)
                  if snapshots.current_snapshot(run) is not None else ()),
                "every mapping, integration issue, amendment and unresolved conflict decided before approval",
            ),
        ),
        memory_comparison=_plain_json(profile),
        members=tuple(member_entries),
        sources=tuple(sources),
        canonical_records=tuple(records),
        mappings=tuple(rendering.MappingEntry(source=m.source, relation=m.relation, target=m.target or "")
                       for m in accepted),
        integration_issues=tuple(issue_entries),
        amendments=tuple(amendments),
        unresolved_conflicts=tuple(conflicts),
        rejected_items=tuple(rejected),
        dispositions=tuple(rendering.DispositionEntry(
            member=d.member, record=d.record, disposition=d.disposition, relation=d.relation, target=d.target,
            rationale=d.rationale, alternatives=d.alternatives) for d in standing.dispositions),
    )


def _amended_records(paragraph, aliases: dict[str, str]) -> tuple[str, ...]:
    """The canonical records whose shared text a value amendment changes: those the paragraph opens
    with (`EPI-OBJ-3 supersedes `Part of: …` with …`, `RTE-2 and RTE-3's … statements are narrowed …`),
    through the aliases; none for a supersession (its mapping says it) or a paragraph opening otherwise."""
    if reconcile_services.superseded_pairs(paragraph.text):
        return ()
    opening = _OPENING_IDS.match(paragraph.text)
    if opening is None:
        return ()
    found = (aliases.get(record_id) for record_id in re.findall(_ID, opening.group(0)))
    return tuple(dict.fromkeys(c for c in found if c))


_ID = r"(?:[A-Z]+-)?(?:CMP|OBJ|RTE|CLM|ABS|BAP)-(?:\d+|[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*)"
_ONE = rf"[`*]*{_ID}[`*]*(?:'s)?"
# The subject: one ID, or several joined by commas and "and" (`RTE-2 and RTE-3's …`).
_OPENING_IDS = re.compile(rf"^\s*{_ONE}(?:\s*(?:,|and|,\s*and)\s+{_ONE})*(?![\w-])")


def _amendment_entries(members: list[_Member], aliases: dict[str, str]) -> tuple[list, list]:
    """(amendments, unresolved conflicts) of the re-hashed members, each with the reviewer's
    decision on it (a supersession's follows its mapping) and, for a value amendment, the canonical
    record it amends. A paragraph without a decision on exactly its text refuses finalization:
    approval waits for every one."""
    rows = {(r.member_version_id, r.index): r
            for r in AmendmentDecisionRow.objects.filter(member_version__in=[m.version for m in members])}
    amendments, conflicts = [], []
    for member in members:
        for index, paragraph in enumerate(member.report.amendments, start=1):
            row = rows.get((member.version.pk, index))
            if (row is None or row.is_open
                    or row.content_sha256 != reconcile_services.amendment_sha256(paragraph.kind, paragraph.text)):
                raise FinalizationRefused(
                    f"{member.shown_name} line {paragraph.line}: the {paragraph.kind} there has no decision on its "
                    f"current text ({row.state if row is not None else 'none recorded'})")
            entry = rendering.AmendmentDecision(
                text=paragraph.text, decision=_decision_word(row.state), rationale=row.rationale,
                member=member.shown_name, line=paragraph.line, decided_by=row.decided_by,
                amends=_amended_records(paragraph, aliases)
                if paragraph.kind == AmendmentDecisionRow.Kind.AMENDMENT else (),
            )
            (conflicts if paragraph.kind == AmendmentDecisionRow.Kind.UNRESOLVED_CONFLICT else amendments).append(entry)
    return amendments, conflicts


def _iso(value) -> str:
    return value.isoformat() if value else ""


def _plain_json(value):
    """Front matter values as JSON data (YAML may give dates)."""
    if value is None:
        return None
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


# --- export -------------------------------------------------------------------


def audit_json(run: Run) -> bytes:
    """The run's audit events, oldest first, with their chain hashes."""
    events = [
        {
            "seq": e.seq, "actor": e.actor, "action": e.action, "object_type": e.object_type,
            "object_id": e.object_id, "before": e.before, "after": e.after,
            "created_at": e.created_at.isoformat(timespec="microseconds"),
            "prev_hash": e.prev_hash, "hash": e.hash,
        }
        for e in AuditEvent.objects.filter(run=run).order_by("seq")
    ]
    return (json.dumps({"run": run.run_id, "events": events}, indent=2, ensure_ascii=False,
                       cls=DjangoJSONEncoder) + "\n").encode("utf-8")


def export_bundle(*, run: Run) -> bytes:
    """The run as a zip in the set layout: pins, current members, result, audit, MANIFEST.json."""
    versions = current_versions(run)
    result = Result.objects.filter(run=run).first()
    entries = bundles.export_entries(
        member_files(versions), audit_json=audit_json(run),
        result_md=result.markdown.encode("utf-8") if result is not None else None,
        source=snapshots.export_source(run, bundles.source_entries),
    )
    return bundles.write_export_zip(entries)

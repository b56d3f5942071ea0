"""Finalization (DESIGN §6 hashing, §7): the stored member bytes re-read and re-hashed, the set
re-validated, the result rendered by the pure `results.rendering`, self-checked and stored once;
and the sweep that re-queues finalizations a lost message or a killed worker left behind (§10)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from reconcile import approval_rules
from reconcile.blockers import run_standing
from reconcile.models import CanonicalRecord, Mapping
from reconcile.services import SEEDING_ROLES
from reconcile.trail_replay import trail_blockers
from records import manifests as archives
from records import parsed as parse_cache
from records.services import current_versions, judge_member_set, member_name, quotations
from records.validation import ERROR, WARNING, MemberInput
from reviews.actions import Action
from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run

from .. import rendering, selfcheck
from ..models import Approval, Result
from ..signing import SigningKeyError, load_signing_key
from .approval import ApprovalBlocked, current_approval
from .attest import attest_result
from .jobs import FINALIZE
from .result_input import FinalizationRefused, VerifiedMember, gather_result_input
from .run_status import copy_status, finalization_failed, move_run


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
            move_run(locked, status=Run.Status.FINALIZING, actor=actor, action=Action.RUN_FINALIZING)
        elif locked.status != Run.Status.FINALIZING:
            # Reopened, failed or never approved: nothing to do (a late or duplicate task).
            copy_status(run, locked)
            return None
    approval = current_approval(locked)
    try:
        if approval is None:
            raise FinalizationRefused("no current approval for this run")
        # The decisions as the signed trail says them (DESIGN §8): a row changed behind the services fails the run.
        rendered = render_approved(locked, approval, trail=trail_blockers(locked))
        key = load_signing_key()
    except SigningKeyError as error:
        _fail(run, reason=f"the result cannot be signed: {error}", actor=actor)
        return None
    except FinalizationRefused as refused:
        _fail(run, reason=str(refused), actor=actor)
        return None
    markdown, data = rendered.markdown, rendered.data
    digest = archives.sha256_hex(markdown.encode("utf-8"))
    try:
        with transaction.atomic():
            locked = lock_run(run)
            existing = Result.objects.filter(run=locked).first()
            if existing is not None:
                return existing
            if locked.status != Run.Status.FINALIZING:
                copy_status(run, locked)
                return None
            result = Result.objects.create(
                run=locked, approval=approval, markdown=markdown, data=data, sha256=digest,
                manifest=approval.manifest, manifest_sha256=approval.manifest_sha256,
            )
            move_run(locked, status=Run.Status.FINAL, actor=actor, action=Action.RUN_FINALIZED,
                     after={"result_sha256": digest, "manifest_sha256": approval.manifest_sha256,
                            "keyid": key.keyid})
            # Signed in the transaction that wrote run.finalized, so the statement's chain head is that event.
            attest_result(locked=locked, result=result, members=rendered.members, key=key,
                          warnings=rendered.warnings)
    except IntegrityError:
        # Another worker stored it first (Result is one per run): theirs is the result.
        return Result.objects.get(run=run)
    copy_status(run, locked)
    return result


def _fail(run: Run, *, reason: str, actor: Actor) -> None:
    with transaction.atomic():
        locked = lock_run(run)
        if locked.status == Run.Status.FINALIZING:
            move_run(locked, status=Run.Status.FAILED, actor=actor, action=Action.RUN_FINALIZE_FAILED, reason=reason)
    copy_status(run, locked)


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
        move_run(locked, status=Run.Status.FINALIZING, actor=actor, action=Action.RUN_FINALIZE_RETRIED,
              after={"previous_reason": locked.status_reason})
        FINALIZE.after_commit(locked.pk)
    copy_status(run, locked)
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
            record_event(run=locked, actor=actor, action=Action.RUN_FINALIZE_REQUEUED, object_type="run",
                         object_id=locked.run_id, before={"status": locked.status, "updated_at": idle},
                         after={"status": locked.status, "approval": approval.pk})
            FINALIZE.after_commit(locked.pk)
        requeued[locked.status] += 1
    return {"approved": requeued[Run.Status.APPROVED], "finalizing": requeued[Run.Status.FINALIZING]}


def _verified_members(run: Run, approval: Approval) -> list[VerifiedMember]:
    """Re-read and re-hash every stored current member version; refuse on any mismatch."""
    members = []
    for version in current_versions(run, content=True):
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
        members.append(VerifiedMember(version=version, data=data, report=parse_cache.report_of(actual, lambda: data)))
    if not members:
        raise FinalizationRefused("the run has no member reports")
    digest = archives.manifest_sha256(archives.build_manifest(archives.pins_of({m.name: m.data for m in members})))
    if digest != approval.manifest_sha256:
        raise FinalizationRefused(
            f"the member set changed since approval: approved manifest SHA-256 {approval.manifest_sha256}, "
            f"current manifest SHA-256 {digest}"
        )
    return members


@dataclass(frozen=True)
class Rendered:
    """What finalization stores and signs: the result's bytes and data, the member bytes re-hashed."""

    markdown: str
    data: dict
    members: dict[str, bytes]  # member file name (as ARTIFACT.yaml pins it) -> bytes
    warnings: int


def render_approved(run: Run, approval: Approval, trail: list | tuple = ()) -> Rendered:
    """The result of `run` as `approval` signed it off; FinalizationRefused naming what stops it, `trail`
    included (the rows that differ from the signed trail's replay: `reconcile.trail_replay.trail_blockers`)."""
    members = _verified_members(run, approval)
    canonical = list(CanonicalRecord.objects.filter(run=run).order_by("kind", "number", "canonical_id"))
    mappings = list(Mapping.objects.filter(run=run).order_by("source", "id"))
    accepted = [m for m in mappings if m.state == Mapping.State.ACCEPTED]
    # Named and ordered as the run's validation names them, so the findings are the ones approval read.
    inputs = [MemberInput(name=m.role, role=m.role, report=m.report) for m in sorted(members, key=lambda m: m.role)]
    findings = judge_member_set(run=run, inputs=inputs)
    # The quotations of the re-hashed bytes, checked again against the stored snapshot: the result's
    # counts are the run page's, and a quotation that no longer holds refuses the result.
    findings = quotations.recheck_quotations(run=run, inputs=inputs, found=findings)
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
    checked_here = approval_rules.codes_of(approval_rules.run_status, approval_rules.no_members,
                                           approval_rules.validation)
    late = [b for b in standing.blockers if b.code not in checked_here]
    if late or trail:
        reasons = [f"the decisions no longer support approval: {'; '.join(b.message for b in late[:3])}"] if late else []
        if trail:
            reasons.append("the decisions differ from the signed audit trail: "
                           + " ".join(b.message for b in trail[:3])
                           + (f" (and {len(trail) - 3} more)" if len(trail) > 3 else ""))
        raise FinalizationRefused("; ".join(reasons))
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
        member_records={(m.role, d.record_id) for m in members if m.role not in SEEDING_ROLES
                        for d in m.report.declarations},
        accepted={(m.source, m.relation, m.target or "") for m in accepted},
    )
    if problems:
        raise FinalizationRefused("the rendered result failed its self-check: " + "; ".join(problems[:5])
                                  + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))
    return Rendered(markdown, rendering.result_json(data), {m.name: m.data for m in members}, warnings)

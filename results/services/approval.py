"""Approval and reopening of a run (DESIGN §3): each change under the run's row lock, written to the
audit trail in the same transaction, finalization queued after commit."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from reconcile import approval_rules, dispositions
from reconcile.trail_replay import trail_blockers
from reconcile.blockers import run_standing
from records.services import current_versions, run_manifest
from records.models import MemberVersion
from reviews.actions import Action
from reviews.audit import Actor, chain_head, lock_run
from reviews.free_text import MAX_TEXT_CHARS, too_long
from reviews.models import Run

from ..models import Approval
from .jobs import FINALIZE
from .run_status import copy_status, finalization_failed, move_run


class ApprovalBlocked(Exception):
    """The run cannot be approved (or reopened, or retried) now; `reasons` says what blocks, one line
    each, and `blockers` (for approval) the same as `{code, record, message, link}` items."""

    def __init__(self, reasons: list[str], blockers: list[dispositions.Blocker] | tuple = (), code: str = ""):
        super().__init__(" ".join(reasons))
        self.reasons = reasons
        self.blockers = list(blockers)
        self.code = code  # the API's error code when the state itself says it (`run_final`)


class NoteRequired(ValueError):
    """An approval without a note, or a reopening without a reason."""


# An approval note or reopening reason is prose a reviewer writes, carried into the result and
# the audit trail: a megabyte of it is a mistake or an attack, refused before anything is stored.
MAX_NOTE_CHARS = MAX_TEXT_CHARS  # the one limit on a caller's text (reviews.free_text)


def _required_text(name: str, text: str, missing: str) -> str:
    text = (text or "").strip()
    if not text:
        raise NoteRequired(f"{name}: {missing}")
    if refusal := too_long(name, text):
        raise NoteRequired(refusal)
    return text


def _lock_unless_final(run: Run) -> Run:
    locked = lock_run(run)
    if locked.status == Run.Status.FINAL:
        raise ApprovalBlocked(["The run is final and closed for good; revise it to change it."], code="run_final")
    return locked


def approval_blockers(run: Run, versions: list[MemberVersion] | None = None) -> list[dispositions.Blocker]:
    """Everything that stops `run` from being approved now ([] when it can be), from the one place
    that says so (`reconcile.blockers.run_standing`)."""
    return list(run_standing(run, versions).blockers)


def approve_run(*, run: Run, note: str, actor: Actor) -> Approval:
    """Sign the run off on its current manifest and queue finalization after commit.

    Preconditions (else ApprovalBlocked naming each): in review, validation of
    the current manifest has run and found no error, every mapping and every
    integration issue decided. The caller has checked the reviewer role.
    """
    note = _required_text("note", note, "say what you checked and how; the note is carried into the result.")
    with transaction.atomic():
        locked = _lock_unless_final(run)
        versions = list(current_versions(locked, content=True))
        standing = run_standing(locked, versions)
        # The decisions as the signed trail says them (DESIGN §8): a row changed behind the services is named.
        blockers = [*trail_blockers(locked), *standing.blockers]
        if blockers:
            raise ApprovalBlocked([b.message for b in blockers], blockers)
        manifest, digest = run_manifest(versions, rehash=True)  # from the stored bytes, hashed now
        stale = approval_rules.stored_bytes_blockers(standing.parts.facts, digest)
        if stale:
            raise ApprovalBlocked([b.message for b in stale], stale)
        seen_seq, seen_hash = chain_head(locked)  # the trail the reviewer signed off, before this event
        approval = Approval.objects.create(
            run=locked, note=note, approved_by=actor.label, manifest=manifest, manifest_sha256=digest,
            audit_head_seq=seen_seq, audit_head_hash=seen_hash,
        )
        move_run(locked, status=Run.Status.APPROVED, actor=actor, action=Action.RUN_APPROVED,
                 after={"manifest_sha256": digest, "note": note, "approval": approval.pk,
                        "audit_head": {"seq": seen_seq, "hash": seen_hash}})
        FINALIZE.after_commit(locked.pk)
    copy_status(run, locked)
    return approval



def current_approval(run: Run) -> Approval | None:
    return Approval.objects.filter(run=run, withdrawn_at__isnull=True).order_by("-approved_at", "-id").first()


def reopen_run(*, run: Run, reason: str, actor: Actor) -> Run:
    """Move an approved run (or one whose finalization failed) back to review; the approval is withdrawn."""
    reason = _required_text("reason", reason, "say why the run goes back to review.")
    with transaction.atomic():
        locked = _lock_unless_final(run)
        if locked.status != Run.Status.APPROVED and not finalization_failed(locked):
            raise ApprovalBlocked([f"The run is {locked.status}; only an approved run that is not final can be reopened."])
        approval = current_approval(locked)
        if approval is not None:
            approval.withdrawn_at = timezone.now()
            approval.withdrawn_reason = reason
            approval.save(update_fields=["withdrawn_at", "withdrawn_reason"])
        move_run(locked, status=Run.Status.IN_REVIEW, actor=actor, action=Action.RUN_REOPENED, reason=reason,
              after={"approval": approval.pk if approval else None})
    copy_status(run, locked)
    return locked

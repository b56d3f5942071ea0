"""Validation of a run's current member set, requested once per burst of uploads (DESIGN §6, §10)."""
from __future__ import annotations

import logging
from typing import Sequence

from django.db import connection, transaction
from django.utils import timezone

from reviews.actions import Action
from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run

from .. import parsed as parse_cache
from ..models import Finding, MemberVersion, ValidationReport, ValidationRequest
from ..validation import MemberInput, RunFacts, validate_set
from .current import current_versions, run_manifest
from .jobs import RUN_VALIDATED, VALIDATE
from .quotations import check_quotations
from .rows import insert_rows

logger = logging.getLogger(__name__)


def request_validation(run: Run) -> bool:
    """Ask for one validation of the run's latest state, in the caller's transaction (the run's lock held).

    A burst of uploads queues at most one pending validation: only the request
    that creates the run's ValidationRequest queues `validate_run`; the task
    claims it (see `validate_requested`). True when this call queued the task.
    """
    table = ValidationRequest._meta.db_table
    with connection.cursor() as cursor:  # one statement: create it unless one is pending
        cursor.execute(f'INSERT INTO "{table}" (run_id, requested_at) VALUES (%s, %s) ON CONFLICT (run_id) DO NOTHING',
                       [run.pk, timezone.now()])
        created = cursor.rowcount == 1
    if created:
        VALIDATE.after_commit(run.pk)
    return created


def validate_requested(*, run: Run, actor: Actor) -> tuple[ValidationReport | None, str]:
    """The validate task's entry: claim the run's pending request and validate its latest state.

    A redelivered or duplicate task finds no request and leaves a validated run
    alone; a run still in validating (the sweep queued it) is validated anyway.
    """
    with transaction.atomic():
        locked = lock_run(run)
        claimed, _ = ValidationRequest.objects.filter(run=locked).delete()
        if not claimed and locked.status != Run.Status.VALIDATING:
            return None, "no validation pending"
        report = validate_locked(locked, actor=actor)
    run.status, run.status_reason, run.manifest_sha256 = locked.status, locked.status_reason, locked.manifest_sha256
    if report is None:
        return None, "waiting for parses"
    return report, f"{report.errors} errors, {report.warnings} warnings"


def validate_run(
    *,
    run: Run,
    actor: Actor,
) -> ValidationReport | None:
    """Validate the run's current member set, keep the findings per manifest, move the run on.

    Returns None while a current version still waits for its parse (that
    parse asks for validation again). Rerunning on the same manifest replaces
    that report's findings. The run goes validating → in_review even with
    errors (reviewers must see them; approval is what errors block), or to
    failed when a current member failed to parse; that move is part of the
    one `run.validated` event (`after.run_status`). Members are not parsed
    again: their reports come from `records.parsed` (kept by the parse task).
    """
    with transaction.atomic():
        locked_run = lock_run(run)
        report = validate_locked(locked_run, actor=actor)
    if report is not None:
        run.status, run.status_reason, run.manifest_sha256 = (locked_run.status, locked_run.status_reason,
                                                              locked_run.manifest_sha256)
        run.failed_from = locked_run.failed_from
    return report


def judge_member_set(*, run: Run, inputs: Sequence[MemberInput]) -> list:
    """The findings of the set's own rules on `inputs` (parsed member reports), before the quotation check.

    The one judge of a member set (issue 24 item 7): the run's validation stores these findings, which
    approval's blockers read, and finalization calls this again on the bytes it has just re-hashed; the
    decisions (mappings, issues, amendments) are judged by `reconcile.blockers.run_standing` for both.
    So an approved run can fail finalization's re-validation only when its bytes changed.
    """
    facts = RunFacts(run_id=run.run_id, reviewed_boundary=run.reviewed_boundary, revises=run.revised_run_ids())
    return validate_set(inputs, facts)


def validate_locked(locked_run: Run, *, actor: Actor) -> ValidationReport | None:
    """`validate_run` on a run whose row lock the caller holds (in its transaction)."""
    versions = sorted(current_versions(locked_run), key=lambda v: v.member.role)
    waiting = {MemberVersion.Status.RECEIVED, MemberVersion.Status.PARSING}
    if any(v.status in waiting for v in versions):
        return None
    usable = [v for v in versions if v.status in (MemberVersion.Status.PARSED, MemberVersion.Status.VALIDATED)]
    failed = [v for v in versions if v.status == MemberVersion.Status.FAILED]
    inputs = [MemberInput(name=v.member.role, role=v.member.role, report=parse_cache.version_report(v))
              for v in usable]
    found = judge_member_set(run=locked_run, inputs=inputs)
    found, quotations = check_quotations(run=locked_run, versions=usable, inputs=inputs, found=found)
    _manifest_text, digest = run_manifest(versions)
    report = _store_findings(locked_run, versions, digest, found)
    locked_run.manifest_sha256 = digest
    fields = ["manifest_sha256"]
    move = None
    if failed and locked_run.status in (Run.Status.VALIDATING, Run.Status.IN_REVIEW):
        reason = "; ".join(f"{v.member.role} v{v.version} failed: {v.status_reason}" for v in failed)
        move = {"before": locked_run.transition_to(Run.Status.FAILED, reason=reason), "after": Run.Status.FAILED,
                "reason": reason}
    elif not failed and locked_run.status == Run.Status.VALIDATING:
        move = {"before": locked_run.transition_to(Run.Status.IN_REVIEW), "after": Run.Status.IN_REVIEW,
                "reason": ""}
    if move:
        fields += Run.STATUS_FIELDS
    MemberVersion.objects.filter(pk__in=[v.pk for v in usable], status=MemberVersion.Status.PARSED).update(
        status=MemberVersion.Status.VALIDATED)
    after = {"errors": report.errors, "warnings": report.warnings, "manifest_sha256": digest,
             "members": {v.member.role: v.sha256 for v in versions}}
    if move:
        after["run_status"] = move
    if quotations is not None:  # the quotation check's rows changed: its snapshot and totals per status
        after["quotations"] = quotations
    # The run's manifest and move are saved by the statement that writes its event.
    record_event(run=locked_run, actor=actor, action=Action.RUN_VALIDATED, object_type="run",
                 object_id=locked_run.run_id, after=after, run_fields=fields)
    RUN_VALIDATED.after_commit(locked_run.pk)
    return report


def _store_findings(run: Run, versions, digest: str, found) -> ValidationReport:
    """The report on this manifest with exactly these findings (a rerun replaces them)."""
    errors = sum(1 for f in found if f.severity == Finding.Severity.ERROR)
    report, created = _report_on(run, digest, errors=errors, warnings=len(found) - errors)
    by_role = {v.member.role: v.pk for v in versions}
    if not created:
        report.findings.all().delete()
    insert_rows(Finding, FINDING_FIELDS, [
        (report.pk, by_role.get(f.member), f.member[:40], f.code[:80], f.severity, f.record_id[:120], max(f.line, 0),
         f.message)
        for f in found
    ])
    return report


FINDING_FIELDS = ("report_id", "member_version_id", "member", "code", "severity", "record_id", "line", "message")


def _report_on(run: Run, digest: str, *, errors: int, warnings: int) -> tuple[ValidationReport, bool]:
    """The run's report on `digest` with these totals, and whether it is new. The caller holds the run's
    lock, so nobody else creates it meanwhile; on PostgreSQL one upsert (issue 23 item 7: statements per
    upload), elsewhere a read and an insert or update."""
    if connection.vendor != "postgresql":
        report = ValidationReport.objects.filter(run=run, manifest_sha256=digest).first()
        if report is None:
            return ValidationReport.objects.create(run=run, manifest_sha256=digest, errors=errors,
                                                   warnings=warnings), True
        report.errors, report.warnings = errors, warnings
        report.save(update_fields=["errors", "warnings"])
        return report, False
    table = ValidationReport._meta.db_table
    with connection.cursor() as cursor:
        # xmax is 0 on a row this statement inserted, and set on one it updated.
        cursor.execute(f'INSERT INTO "{table}" ("run_id", "manifest_sha256", "errors", "warnings", "created_at") '
                       'VALUES (%s, %s, %s, %s, %s) ON CONFLICT ("run_id", "manifest_sha256") DO UPDATE '
                       'SET "errors" = EXCLUDED."errors", "warnings" = EXCLUDED."warnings" '
                       'RETURNING "id", "created_at", (xmax = 0)', [run.pk, digest, errors, warnings, timezone.now()])
        pk, created_at, created = cursor.fetchone()
    report = ValidationReport(pk=pk, run=run, manifest_sha256=digest, errors=errors, warnings=warnings,
                              created_at=created_at)
    report._state.adding, report._state.db = False, connection.alias
    return report, created


def latest_validation(run: Run) -> ValidationReport | None:
    """The report on the run's current manifest, else the newest one."""
    reports = ValidationReport.objects.filter(run=run)
    return (reports.filter(manifest_sha256=run.manifest_sha256).first() if run.manifest_sha256 else None) \
        or reports.first()

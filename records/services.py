"""Member reports through the pipeline: upload → parse → validate → hash (DESIGN §3, §6, §10).

Each verb writes its audit event in its own transaction and queues the next
step only after commit. A queued step that never runs (broker down, worker
killed) is found by `sweep_stuck_members` and queued again; every step
claims its work first, so running one twice changes nothing.
"""
from __future__ import annotations

import codecs
import dataclasses
import json
import logging
import os
import re
from datetime import timedelta
from typing import Any, Collection, Sequence

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run

from . import archives
from . import parsed as parse_cache
from .document import ParsedReport
from .ids import parse_id
from .limits import overlong_id
from .models import (Finding, IntegrationIssue, MemberReport, MemberVersion, Record, Role, ValidationReport,
                     ValidationRequest)
from .parsing import parse_report_strict
from .validation import MemberInput, RunFacts, validate_set

logger = logging.getLogger(__name__)

RECONCILE_SYNC_TASK = "reconcile.tasks.sync_run"


# --- refusals -------------------------------------------------------------


class UploadRefused(Exception):
    """Input the pipeline will not take; the message says what is wrong and what to do."""

    code = "invalid_upload"

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class EmptyReport(UploadRefused):
    code = "empty_report"


class ReportTooLarge(UploadRefused):
    code = "too_large"


class NotText(UploadRefused):
    code = "not_utf8_text"


class UnknownRole(UploadRefused):
    code = "unknown_role"


class RunClosed(UploadRefused):
    code = "run_not_accepting_uploads"


class RunFinal(RunClosed):
    """A final run is closed for good (DESIGN §3): nothing reopens it; a revision starts its successor."""

    code = "run_final"


def refuse_closed_run(run: Run, what: str) -> RunClosed:
    """The refusal for `what` (an upload, a source snapshot) on a run that takes none, saying what to do."""
    if run.status == Run.Status.FINAL:
        return RunFinal(f"run {run.run_id} is final and closed for good; {what} is refused. To change the analysis, "
                        f"revise it (POST /api/runs/{run.run_id}/revise/) and upload to the new run",
                        details={"status": run.status})
    return RunClosed(f"run {run.run_id} is {run.status}; {what} is refused once a run is approved; "
                     f"reopen it first", details={"status": run.status})


class BundleRefused(UploadRefused):
    code = "bundle_refused"


class BundleTooLarge(BundleRefused):
    code = "too_large"


_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_FILENAME_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def check_role(role: str) -> str:
    if role not in Role.values:
        raise UnknownRole(f"unknown role {role!r}; use one of: {', '.join(Role.values)}",
                          details={"roles": list(Role.values)})
    return role


def check_report_bytes(content: bytes) -> str:
    """The report's text, or a refusal: empty, too large, binary, not UTF-8."""
    if not content or not content.strip():
        raise EmptyReport("the report is empty; upload the report's UTF-8 text")
    if len(content) > settings.MAX_UPLOAD_BYTES:
        raise ReportTooLarge(f"the report is {len(content)} bytes; the limit is {settings.MAX_UPLOAD_BYTES} bytes",
                             details={"size": len(content), "limit": settings.MAX_UPLOAD_BYTES})
    if content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise NotText("UTF-16 text (it starts with a UTF-16 byte-order mark); save the report as UTF-8",
                      details={"offset": 0})
    nul = content.find(b"\x00")
    if nul != -1:
        raise NotText(f"binary content: a NUL byte at byte offset {nul}; reports are UTF-8 text",
                      details={"offset": nul})
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotText(f"not UTF-8: byte 0x{content[error.start]:02x} at byte offset {error.start} is invalid; "
                      "save the report as UTF-8", details={"offset": error.start}) from None
    controls = len(_CONTROL_RE.findall(text))
    if controls > max(16, len(text) // 20):
        raise NotText(f"binary content: {controls} control characters in {len(text)}; reports are UTF-8 text",
                      details={"control_characters": controls})
    return text


def _clean_filename(filename: str | None, role: str) -> str:
    name = os.path.basename((filename or "").replace("\\", "/"))
    name = _FILENAME_CONTROL_RE.sub("", name).strip()  # no CR/LF/tab either: it goes into headers
    return (name or archives.member_filename(role))[:255]


def _version_label(role: str, number: int) -> str:
    return f"{role}/v{number}"


# --- queueing -------------------------------------------------------------


def _send(task, *args) -> None:
    """Hand a task to the broker. A broker that is down loses nothing: the sweep re-queues (DESIGN §10)."""
    try:
        task.apply_async(args=args, retry=True,
                         retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.2})
    except Exception:  # noqa: BLE001 — whatever the transport raises, the committed row is safe
        logger.warning("could not queue %s%r; the sweep will re-queue it", task.name, args, exc_info=True)


def _queue_after_commit(task_name: str, *args) -> None:
    from . import tasks

    transaction.on_commit(lambda: _send(getattr(tasks, task_name), *args))


def _queue_reconcile_sync(run_pk: int) -> None:
    """Reconcile's sync, by name: records never imports reconcile."""
    from config.celery import app

    def send() -> None:
        task = app.tasks.get(RECONCILE_SYNC_TASK)
        if task is not None:
            _send(task, run_pk)
        elif not app.conf.task_always_eager:
            try:
                app.send_task(RECONCILE_SYNC_TASK, args=[run_pk])
            except Exception:  # noqa: BLE001
                logger.warning("could not queue %s(%s)", RECONCILE_SYNC_TASK, run_pk, exc_info=True)

    transaction.on_commit(send)


# --- upload ---------------------------------------------------------------


def ingest_member_report(
    *, run: Run | str, role: str, filename: str | None, content: bytes, actor: Actor
) -> tuple[MemberVersion, bool]:
    """Store the bytes as the member's next version and queue its parse; `created` is False for identical bytes.

    `run` is the Run, or its run_id: the upload API passes the ID so that the
    run is read once, by its row lock (Run.DoesNotExist when there is none).

    One audit event per upload: `member.uploaded` (or `member.reupload_identical`),
    carrying the run's status move (open/in_review/failed → validating) when the
    upload causes one, instead of a second `run.status_changed` event.

    Refuses (UploadRefused subclasses): unknown role, empty, too large,
    binary or non-UTF-8 bytes, a run that no longer takes uploads.
    """
    check_role(role)
    check_report_bytes(content)
    sha256 = archives.sha256_hex(content)
    filename = _clean_filename(filename, role)
    with transaction.atomic():
        locked_run = lock_run(run) if isinstance(run, Run) else Run.objects.select_for_update().get(run_id=run)
        if not locked_run.accepts_uploads:
            raise refuse_closed_run(locked_run, "an upload")
        member = _locked_member(locked_run, role)
        if member.current_sha256 == sha256:
            version, created = _current_version(member), False
            queued = _retry_if_failed(version)
            action = "member.reupload_identical"
            after = {"role": role, "version": version.version, "sha256": sha256, "filename": filename,
                     "retried": queued}
        else:
            version = _new_version(member=member, filename=filename, content=content, sha256=sha256, actor=actor)
            created = queued = True
            action = "member.uploaded"
            after = {"role": role, "version": version.version, "sha256": sha256, "size": len(content),
                     "filename": filename}
        if queued:
            move = _start_validating(locked_run, reason=f"{role} v{version.version} uploaded")
            if move:
                after["run_status"] = move
        record_event(run=locked_run, actor=actor, action=action, object_type="member_version",
                     object_id=_version_label(role, version.version), after=after)
    if isinstance(run, Run):
        run.status, run.status_reason, run.failed_from = (locked_run.status, locked_run.status_reason,
                                                          locked_run.failed_from)
    return version, created


def _locked_member(run: Run, role: str) -> MemberReport:
    """The run's member for `role`, row-locked, with the number and SHA-256 of its current version
    (`current_number`, `current_sha256`: None before its first); created on its first upload (the run's lock
    is held, so nobody else creates it meanwhile).

    A raw statement because it was the upload's dearest: compiling this join through the ORM (select_related,
    defer, FOR UPDATE OF) took about four times the CPU of running it.
    """
    lock = " FOR UPDATE OF m" if connection.features.has_select_for_update_of else ""
    member = next(iter(MemberReport.objects.raw(
        f"SELECT m.*, v.version AS current_number, v.sha256 AS current_sha256 "
        f"FROM {MemberReport._meta.db_table} m LEFT JOIN {MemberVersion._meta.db_table} v "
        f"ON v.id = m.current_version_id WHERE m.run_id = %s AND m.role = %s{lock}", [run.pk, role])), None)
    if member is None:
        member = MemberReport.objects.create(run=run, role=role)
        member.current_number = member.current_sha256 = None
    return member


def _current_version(member: MemberReport) -> MemberVersion:
    """The member's current version, without its bytes or parser output (what an upload answers with)."""
    version = MemberVersion.objects.defer("content", "parsed").get(pk=member.current_version_id)
    version.member = member
    return version


def _start_validating(run: Run, *, reason: str) -> dict | None:
    """Move the locked run to validating when it is open, in review or failed; the move, for the upload's event."""
    if run.status not in (Run.Status.OPEN, Run.Status.IN_REVIEW, Run.Status.FAILED):
        return None
    old = run.transition_to(Run.Status.VALIDATING, reason=reason)
    run.save(update_fields=Run.STATUS_FIELDS)
    return {"before": old, "after": Run.Status.VALIDATING, "reason": reason}


def _new_version(*, member: MemberReport, filename: str, content: bytes, sha256: str,
                 actor: Actor) -> MemberVersion:
    # Versions are only made here and each becomes current, so the current one holds the highest number.
    number = member.current_number + 1 if member.current_version_id else 1
    version = MemberVersion.objects.create(
        member=member, version=number, filename=filename, content=content, sha256=sha256, size=len(content),
        uploaded_by=actor.label, queued_at=timezone.now(),
    )
    member.current_version = version
    member.save(update_fields=["current_version"])
    _queue_after_commit("parse_member_version", version.pk)
    return version


def _retry_if_failed(version: MemberVersion) -> bool:
    """Same bytes again: the same version. A version whose parse failed is queued again (a retry); True then."""
    if version.status != MemberVersion.Status.FAILED:
        return False
    version.status, version.status_reason, version.queued_at = MemberVersion.Status.RECEIVED, "", timezone.now()
    version.save(update_fields=["status", "status_reason", "queued_at"])
    _queue_after_commit("parse_member_version", version.pk)
    return True


# --- parse ----------------------------------------------------------------


def _fields_json(fields) -> list[dict]:
    return [{"label": f.label, "value": f.value, "line": f.line, "bullet": f.bullet} for f in fields]


def _unique(ids) -> list[str]:
    return list(dict.fromkeys(ids))


def _kind_and_prefix(record_id: str) -> tuple[str, str]:
    parsed = parse_id(record_id)
    if parsed is None:
        return "", ""
    return parsed[1], parsed[0]


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _parsed_json(report: ParsedReport) -> dict:
    def plain(items) -> list:
        return [dataclasses.asdict(item) for item in items]

    return _json_safe({
        "title": report.title,
        "front_matter_error": report.front_matter_error,
        "sections": plain(report.sections),
        "sources": [dataclasses.asdict(row) | {"revision": row.revision} for row in report.sources],
        "mappings": plain(report.mappings),
        "amendments": plain(report.amendments),
        "quotations": plain(report.quotations),
        "ranges": plain(report.ranges),
    })


def _rows(run: Run, version: MemberVersion, report: ParsedReport) -> tuple[list[Record], list[IntegrationIssue]]:
    records = []
    for decl in report.declarations:
        records.append(Record(
            run=run, member_version=version, ordinal=len(records) + 1, record_type=Record.Type.DECLARATION,
            record_id=decl.record_id, kind=decl.kind, prefix=decl.prefix, label=decl.label, text=decl.text,
            body=decl.body, fields=_fields_json(decl.fields), references=_unique(r.record_id for r in decl.references),
            line_start=decl.line_start, line_end=decl.line_end, form=decl.form,
            content_sha256=archives.sha256_hex(decl.text.encode("utf-8")),
        ))
    for note in report.annotations:
        kind, prefix = _kind_and_prefix(note.target)
        records.append(Record(
            run=run, member_version=version, ordinal=len(records) + 1, record_type=Record.Type.ANNOTATION,
            record_id=note.target, kind=kind, prefix=prefix, label=note.label, text=note.text, body=note.body,
            fields=_fields_json(note.fields), references=_unique(r.record_id for r in note.references),
            line_start=note.line_start, line_end=note.line_end, form="annotation",
            content_sha256=archives.sha256_hex(note.text.encode("utf-8")),
        ))
    issues = [
        IntegrationIssue(run=run, member_version=version, index=issue.index, text=issue.text,
                         references=list(issue.references), line=issue.line,
                         content_sha256=archives.sha256_hex(issue.text.encode("utf-8")))
        for issue in report.integration_issues
    ]
    return records, issues


def parse_member_version(*, version_pk: int, actor: Actor) -> MemberVersion | None:
    """Parse one stored version into Record/IntegrationIssue rows; None when there is nothing to claim.

    Claims the version with a conditional UPDATE (received, or parsing with a
    claim older than PIPELINE_STUCK_AFTER_SECONDS, as a killed worker leaves
    it), so a duplicate delivery does nothing and a rerun replaces the rows.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.PIPELINE_STUCK_AFTER_SECONDS)
    claimed = (
        MemberVersion.objects.filter(pk=version_pk)
        .filter(Q(status=MemberVersion.Status.RECEIVED) | Q(status=MemberVersion.Status.PARSING, claimed_at__lt=stale))
        .update(status=MemberVersion.Status.PARSING, claimed_at=now, attempts=F("attempts") + 1)
    )
    if not claimed:
        return None
    version = MemberVersion.objects.select_related("member__run").defer("parsed").get(pk=version_pk)
    content = bytes(version.content)
    actual = archives.sha256_hex(content)
    if actual != version.sha256:
        return _fail_version(version=version, claimed_at=now, actor=actor,
                             reason=f"stored bytes hash to {actual}, not the recorded {version.sha256}")
    try:
        # The strict parser surfaces a parser bug as an exception instead of a degraded report.
        report = parse_report_strict(content.decode("utf-8"))
    except Exception as error:  # noqa: BLE001 — any parser failure is recorded on the version
        logger.exception("parser failed on member version %s", version_pk)
        return _fail_version(version=version, claimed_at=now, actor=actor,
                             reason=f"parser error: {type(error).__name__}: {error}")
    if (problem := overlong_id(report)) is not None:  # refused whole rather than failing in the database
        return _fail_version(version=version, claimed_at=now, actor=actor, reason=problem)
    parse_cache.remember(version.sha256, report, len(content))  # validation, sync and finalization read this parse again
    run = version.member.run
    records, issues = _rows(run, version, report)
    outcome = {"counts": report.counts(), "front_matter": _json_safe(report.front_matter),
              "doc_type": report.doc_type[:200], "generation": report.generation[:30],
              "parsed": _parsed_json(report), "status": MemberVersion.Status.PARSED, "status_reason": "",
              "parsed_at": now}
    with transaction.atomic():
        run = lock_run(run)  # always the run first: one lock order for every writer of this run
        # Written only while this parse's claim still holds (the UPDATE locks the row and re-checks it).
        claim_holds = MemberVersion.objects.filter(pk=version_pk, status=MemberVersion.Status.PARSING,
                                                   claimed_at=now).update(**outcome)
        if not claim_holds:
            return None  # a later claim took the work over
        if version.attempts > 1:
            # Only a parse commits rows, and every parse claims first (attempts + 1): on the first claim there
            # are none to replace, which spares the delete's two reads of its dependents.
            Record.objects.filter(member_version=version).delete()
            IntegrationIssue.objects.filter(member_version=version).delete()
        Record.objects.bulk_create(records)
        IntegrationIssue.objects.bulk_create(issues)
        for field, value in outcome.items():
            setattr(version, field, value)
        record_event(run=run, actor=actor, action="member.parsed", object_type="member_version",
                     object_id=_version_label(version.member.role, version.version),
                     after={"counts": version.counts, "sha256": version.sha256, "generation": version.generation})
        _validate_after_parse(run, actor=actor)
    return version


def _validate_after_parse(run: Run, *, actor: Actor) -> None:
    """Validate the run in the parse's own transaction (its lock held) once no current member waits for a parse.

    The last parse of a burst validates the run's latest state; earlier ones find
    a member still waiting and leave it to that one. A pending request (from a
    snapshot upload, say) is claimed too, so its task finds nothing to do. If
    validation itself fails (a bug, not bad content), the parse still commits and
    the run's validation is queued as its own task instead.
    """
    try:
        with transaction.atomic():  # a savepoint: a failing validation must not take the parse with it
            if _validate_locked(run, actor=actor) is not None:  # None: a member still waits for its parse
                ValidationRequest.objects.filter(run=run).delete()  # what a pending request asked is done
    except Exception:  # noqa: BLE001 — logged; validate_run retries it apart and records its outcome
        logger.exception("validation after the parse failed on run %s; queued apart", run.run_id)
        request_validation(run)


def _fail_version(*, version: MemberVersion, claimed_at, actor: Actor, reason: str) -> MemberVersion | None:
    """Record the failure on `version` (loaded with member__run) if the claim taken at `claimed_at` still holds."""
    with transaction.atomic():
        run = lock_run(version.member.run)
        locked = MemberVersion.objects.select_for_update().get(pk=version.pk)
        if locked.status != MemberVersion.Status.PARSING or locked.claimed_at != claimed_at:
            return None
        locked.status, locked.status_reason = MemberVersion.Status.FAILED, reason
        locked.save(update_fields=MemberVersion.STATUS_FIELDS)
        record_event(run=run, actor=actor, action="member.parse_failed", object_type="member_version",
                     object_id=_version_label(version.member.role, locked.version),
                     before={"status": MemberVersion.Status.PARSING}, after={"status": "failed", "reason": reason})
        # Validation decides the run's status, failed members included.
        request_validation(run)
    return locked


# --- validate -------------------------------------------------------------


def current_versions(run: Run):
    """The run's current member versions, without their bytes (read them through `records.parsed`)."""
    return MemberVersion.objects.filter(
        pk__in=MemberReport.objects.filter(run=run).values("current_version")
    ).select_related("member").defer("content", "parsed")


def run_manifest(versions) -> tuple[str, str]:
    """The run's ARTIFACT.yaml text for these member versions, and its SHA-256."""
    text = archives.build_manifest({archives.member_filename(v.member.role): v.sha256 for v in versions})
    return text, archives.manifest_sha256(text)


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
        _queue_after_commit("validate_run", run.pk)
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
        report = _validate_locked(locked, actor=actor)
    run.status, run.status_reason, run.manifest_sha256 = locked.status, locked.status_reason, locked.manifest_sha256
    if report is None:
        return None, "waiting for parses"
    return report, f"{report.errors} errors, {report.warnings} warnings"


def validate_run(
    *,
    run: Run,
    actor: Actor,
    canonical_ids: Collection[str] = (),
    extra_mappings: Sequence[tuple[str, str, str]] = (),
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
        report = _validate_locked(locked_run, actor=actor, canonical_ids=canonical_ids,
                                  extra_mappings=extra_mappings)
    if report is not None:
        run.status, run.status_reason, run.manifest_sha256 = (locked_run.status, locked_run.status_reason,
                                                              locked_run.manifest_sha256)
        run.failed_from = locked_run.failed_from
    return report


def _validate_locked(locked_run: Run, *, actor: Actor, canonical_ids: Collection[str] = (),
                     extra_mappings: Sequence[tuple[str, str, str]] = ()) -> ValidationReport | None:
    """`validate_run` on a run whose row lock the caller holds (in its transaction)."""
    versions = sorted(current_versions(locked_run), key=lambda v: v.member.role)
    waiting = {MemberVersion.Status.RECEIVED, MemberVersion.Status.PARSING}
    if any(v.status in waiting for v in versions):
        return None
    usable = [v for v in versions if v.status in (MemberVersion.Status.PARSED, MemberVersion.Status.VALIDATED)]
    failed = [v for v in versions if v.status == MemberVersion.Status.FAILED]
    inputs = [MemberInput(name=v.member.role, role=v.member.role, report=parse_cache.version_report(v))
              for v in usable]
    facts = RunFacts(run_id=locked_run.run_id, reviewed_boundary=locked_run.reviewed_boundary,
                     revises=locked_run.revised_run_ids())
    found = validate_set(inputs, facts, canonical_ids=canonical_ids, extra_mappings=extra_mappings)
    from .snapshots import check_quotations  # quotations against the source snapshot (records/snapshots.py)
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
    locked_run.save(update_fields=fields)
    MemberVersion.objects.filter(pk__in=[v.pk for v in usable], status=MemberVersion.Status.PARSED).update(
        status=MemberVersion.Status.VALIDATED)
    after = {"errors": report.errors, "warnings": report.warnings, "manifest_sha256": digest,
             "members": {v.member.role: v.sha256 for v in versions}}
    if move:
        after["run_status"] = move
    if quotations is not None:  # the quotation check's rows changed: its snapshot and totals per status
        after["quotations"] = quotations
    record_event(run=locked_run, actor=actor, action="run.validated", object_type="run",
                 object_id=locked_run.run_id, after=after)
    _queue_reconcile_sync(locked_run.pk)
    return report


def _store_findings(run: Run, versions, digest: str, found) -> ValidationReport:
    """The report on this manifest with exactly these findings (a rerun replaces them)."""
    errors = sum(1 for f in found if f.severity == Finding.Severity.ERROR)
    # The caller holds the run's lock, so nobody else creates this report meanwhile: a read and an insert,
    # without get_or_create's savepoint.
    report = ValidationReport.objects.filter(run=run, manifest_sha256=digest).first()
    created = report is None
    if created:
        report = ValidationReport.objects.create(run=run, manifest_sha256=digest, errors=errors,
                                                 warnings=len(found) - errors)
    by_role = {v.member.role: v for v in versions}
    if not created:
        report.findings.all().delete()
        report.errors, report.warnings = errors, len(found) - errors
        report.save(update_fields=["errors", "warnings"])
    Finding.objects.bulk_create([
        Finding(report=report, member_version=by_role.get(f.member), member=f.member[:40], code=f.code[:80],
                severity=f.severity, record_id=f.record_id[:120], line=max(f.line, 0), message=f.message)
        for f in found
    ])
    return report


def latest_validation(run: Run) -> ValidationReport | None:
    """The report on the run's current manifest, else the newest one."""
    reports = ValidationReport.objects.filter(run=run)
    return (reports.filter(manifest_sha256=run.manifest_sha256).first() if run.manifest_sha256 else None) \
        or reports.first()


# --- recovery -------------------------------------------------------------


def sweep_stuck_members(*, older_than_seconds: int, actor: Actor | None = None) -> dict[str, int]:
    """Re-queue parses that never ran or whose worker died, and validations of runs stuck in validating."""
    actor = actor or Actor.worker("sweep_stuck_members")
    now = timezone.now()
    cutoff = now - timedelta(seconds=older_than_seconds)
    stuck = (
        MemberVersion.objects
        # Last touched: claimed by a worker, queued, or created (whichever is latest).
        .annotate(touched=Greatest(Coalesce("claimed_at", "created_at"), Coalesce("queued_at", "created_at")))
        .filter(status__in=[MemberVersion.Status.RECEIVED, MemberVersion.Status.PARSING], touched__lt=cutoff)
        .select_related("member__run")
    )
    versions = 0
    for version in stuck:
        with transaction.atomic():
            lock_run(version.member.run)
            # Release the dead claim so the queued task can take it; only if nobody touched it meanwhile.
            released = MemberVersion.objects.filter(pk=version.pk, status=version.status,
                                                    claimed_at=version.claimed_at).update(
                status=MemberVersion.Status.RECEIVED, queued_at=now)
            if not released:
                continue
            record_event(run=version.member.run, actor=actor, action="member.requeued", object_type="member_version",
                         object_id=_version_label(version.member.role, version.version),
                         before={"status": version.status, "claimed_at": version.claimed_at},
                         after={"status": MemberVersion.Status.RECEIVED, "attempts": version.attempts})
            _queue_after_commit("parse_member_version", version.pk)
        versions += 1
    runs = 0
    waiting = MemberVersion.objects.filter(
        status__in=[MemberVersion.Status.RECEIVED, MemberVersion.Status.PARSING],
        pk__in=MemberReport.objects.values("current_version"),
    ).values("member__run")
    stuck_runs = (Run.objects.filter(Q(status=Run.Status.VALIDATING, updated_at__lt=cutoff)
                                     | Q(validation_request__requested_at__lt=cutoff))
                  .exclude(pk__in=waiting).distinct())
    for run_pk in stuck_runs.values_list("pk", flat=True):
        with transaction.atomic():
            _queue_after_commit("validate_run", run_pk)
        runs += 1
    return {"versions": versions, "runs": runs}


# --- bundles --------------------------------------------------------------


def read_bundle(archive: bytes) -> tuple[dict[str, bytes], dict, dict[str, str], dict[str, str]]:
    """(files, manifest, pins, roles) of a run directory archive whose every pin holds; raises
    BundleTooLarge or BundleRefused (naming the file) otherwise."""
    try:
        files = archives.read_archive(archive, max_bytes=settings.MAX_BUNDLE_BYTES)
        manifest = archives.read_manifest(files)
        pins = archives.check_pins(files)
        return files, manifest, pins, archives.members_of(pins)
    except archives.BundleTooLarge as error:
        raise BundleTooLarge(error.message, details={"problems": error.problems}) from None
    except archives.BundleError as error:
        raise BundleRefused(error.message, details={"problems": error.problems}) from None


def import_bundle(*, run: Run, archive: bytes, actor: Actor) -> list[tuple[MemberVersion, bool]]:
    """Ingest every member of a run directory (zip or tar.gz) whose pins all hold, or none of them."""
    return ingest_bundle(run=run, bundle=read_bundle(archive), actor=actor)


def ingest_bundle(*, run: Run, bundle, actor: Actor) -> list[tuple[MemberVersion, bool]]:
    """`import_bundle` of a run directory already read by `read_bundle` (the archive is unpacked once)."""
    files, manifest, pins, roles = bundle
    if not roles:
        raise BundleRefused(f"{archives.MANIFEST_NAME}: pins no member file", details={"problems": []})
    for name in sorted(roles):
        try:
            check_report_bytes(files[name])
        except UploadRefused as error:
            raise type(error)(f"{name}: {error.message}", details={"file": name, **(error.details or {})}) from None
    results = []
    with transaction.atomic():
        for name in sorted(roles):
            results.append(ingest_member_report(run=run, role=roles[name], filename=name, content=files[name],
                                                actor=actor))
        record_event(run=run, actor=actor, action="bundle.imported", object_type="run", object_id=run.run_id,
                     after={"manifest": _json_safe(manifest),
                            "members": {name: {"role": roles[name], "sha256": pins[name], "version": v.version,
                                               "created": created}
                                        for name, (v, created) in zip(sorted(roles), results)}})
    return results

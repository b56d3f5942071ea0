"""Parse: a stored member version read into records, issues and the parser output (DESIGN §1, §2)."""
from __future__ import annotations

import dataclasses
import json
import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, Q
from django.utils import timezone

from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run

from .. import archives
from .. import parsed as parse_cache
from ..document import ParsedReport
from ..ids import parse_id
from ..limits import overlong_id
from ..models import IntegrationIssue, MemberVersion, Record, ValidationRequest
from ..parsing import parse_report_strict
from .current import version_label
from .validate import request_validation, validate_locked

logger = logging.getLogger(__name__)


def _fields_json(fields) -> list[dict]:
    return [{"label": f.label, "value": f.value, "line": f.line, "bullet": f.bullet} for f in fields]


def _unique(ids) -> list[str]:
    return list(dict.fromkeys(ids))


def _kind_and_prefix(record_id: str) -> tuple[str, str]:
    parsed = parse_id(record_id)
    if parsed is None:
        return "", ""
    return parsed[1], parsed[0]


def json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _parsed_json(report: ParsedReport) -> dict:
    def plain(items) -> list:
        return [dataclasses.asdict(item) for item in items]

    return json_safe({
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


def parse_member_version(*, version_pk: int, actor: Actor, reclaim: datetime | None = None) -> MemberVersion | None:
    """Parse one stored version into Record/IntegrationIssue rows; None when there is nothing to claim.

    Claims the version with a conditional UPDATE (received, or parsing with a
    claim older than PIPELINE_STUCK_AFTER_SECONDS, as a killed worker leaves
    it), so a duplicate delivery does nothing and a rerun replaces the rows.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.PIPELINE_STUCK_AFTER_SECONDS)
    claimed = (
        MemberVersion.objects.filter(pk=version_pk)
        .filter(Q(status=MemberVersion.Status.RECEIVED) | Q(status=MemberVersion.Status.PARSING, claimed_at__lt=stale)
                | (Q(status=MemberVersion.Status.PARSING, claimed_at=reclaim) if reclaim else Q(pk__in=[])))
        .update(status=MemberVersion.Status.PARSING, claimed_at=now, attempts=F("attempts") + 1)
    )
    if not claimed:
        return None
    try:
        return _parse_claimed(version_pk=version_pk, now=now, actor=actor)
    except (OperationalError, InterfaceError) as error:
        error.claimed_at = now
        raise


def _parse_claimed(*, version_pk: int, now: datetime, actor: Actor) -> MemberVersion | None:
    """The parse of a version this worker has just claimed (at `now`)."""
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
    outcome = {"counts": report.counts(), "front_matter": json_safe(report.front_matter),
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
                     object_id=version_label(version.member.role, version.version),
                     after={"counts": version.counts, "sha256": version.sha256, "generation": version.generation},
                     head_known=True)  # `run` is lock_run's, above, and nothing since wrote an event
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
            if validate_locked(run, actor=actor) is not None:  # None: a member still waits for its parse
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
                     object_id=version_label(version.member.role, locked.version),
                     before={"status": MemberVersion.Status.PARSING}, after={"status": "failed", "reason": reason})
        # Validation decides the run's status, failed members included.
        request_validation(run)
    return locked

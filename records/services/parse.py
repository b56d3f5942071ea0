"""Parse: a stored member version read into records, issues and the parser output (DESIGN §1, §2)."""
from __future__ import annotations

import dataclasses
import json
import logging
from collections import namedtuple
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from reviews.actions import Action
from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run

from .. import manifests
from .. import parsed as parse_cache
from ..document import ParsedReport
from ..ids import parse_id
from ..member_page import count_kinds
from ..models import IntegrationIssue, MemberReport, MemberVersion, Record, ValidationRequest
from ..parsing import parse_report_strict
from ..validation.id_length import overlong_id
from .collector import collector_paused
from .current import version_label
from .rows import insert_rows
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


def _field_values(item: Any) -> Any:
    """json.dumps' `default` for the parse's items: a dataclass as the dict of its fields, as
    dataclasses.asdict gives it (json reads the fields' own tuples and dataclasses in turn); anything
    else as its str, as json_safe does. asdict copied every value of 10,000 items of a 2 MB report first."""
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        names = _FIELD_NAMES.get(type(item))
        if names is None:
            names = _FIELD_NAMES[type(item)] = [f.name for f in dataclasses.fields(item)]
        return {name: getattr(item, name) for name in names}
    return str(item)


_FIELD_NAMES: dict[type, list[str]] = {}


def parsed_json(report: ParsedReport) -> dict:
    return json.loads(json.dumps({
        "title": report.title,
        "front_matter_error": report.front_matter_error,
        "sections": report.sections,
        "sources": [dataclasses.asdict(row) | {"revision": row.revision} for row in report.sources],
        "mappings": report.mappings,
        "amendments": report.amendments,
        "quotations": report.quotations,
        "ranges": report.ranges,
    }, default=_field_values))


RECORD_FIELDS = ("run_id", "member_version_id", "ordinal", "record_type", "record_id", "kind", "prefix", "label",
                 "text", "body", "fields", "references", "line_start", "line_end", "form", "content_sha256")
ISSUE_FIELDS = ("run_id", "member_version_id", "index", "text", "references", "line", "content_sha256")
# A Record row with its values named: count_kinds reads record_type, kind and ordinal of each.
RecordRow = namedtuple("RecordRow", RECORD_FIELDS)


def _rows(run: Run, version: MemberVersion, report: ParsedReport) -> tuple[list[RecordRow], list[tuple]]:
    """The parse's Record rows (values of RECORD_FIELDS) and IntegrationIssue rows (ISSUE_FIELDS)."""
    records = []
    for decl in report.declarations:
        records.append(RecordRow(
            run.pk, version.pk, len(records) + 1, Record.Type.DECLARATION.value, decl.record_id, decl.kind, decl.prefix,
            decl.label, decl.text, decl.body, _fields_json(decl.fields), _unique(r.record_id for r in decl.references),
            decl.line_start, decl.line_end, decl.form, manifests.sha256_hex(decl.text.encode("utf-8")),
        ))
    for note in report.annotations:
        kind, prefix = _kind_and_prefix(note.target)
        records.append(RecordRow(
            run.pk, version.pk, len(records) + 1, Record.Type.ANNOTATION.value, note.target, kind, prefix, note.label,
            note.text, note.body, _fields_json(note.fields), _unique(r.record_id for r in note.references),
            note.line_start, note.line_end, "annotation", manifests.sha256_hex(note.text.encode("utf-8")),
        ))
    issues = [
        (run.pk, version.pk, issue.index, issue.text, list(issue.references), issue.line,
         manifests.sha256_hex(issue.text.encode("utf-8")))
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
    version = _claim(version_pk=version_pk, now=now, stale=stale, reclaim=reclaim)
    if version is None:
        return None
    try:
        with collector_paused():  # the parse and the run's validation make no reference cycles
            return _parse_claimed(version=version, now=now, actor=actor)
    except (OperationalError, InterfaceError) as error:
        error.claimed_at = now
        raise


def _claim(*, version_pk: int, now: datetime, stale: datetime, reclaim: datetime | None) -> MemberVersion | None:
    """Claim the version (received, or parsing under a stale claim or the `reclaim` one) with a conditional
    UPDATE; the claimed version (its `parsed` deferred) with its member and run, or None. On PostgreSQL the
    UPDATE returns the version and its member's role and run (issue 23 item 7: statements per upload)."""
    claimable = (Q(status=MemberVersion.Status.RECEIVED) | Q(status=MemberVersion.Status.PARSING, claimed_at__lt=stale)
                 | (Q(status=MemberVersion.Status.PARSING, claimed_at=reclaim) if reclaim else Q(pk__in=[])))
    if connection.vendor != "postgresql":
        claimed = MemberVersion.objects.filter(claimable, pk=version_pk).update(
            status=MemberVersion.Status.PARSING, claimed_at=now, attempts=F("attempts") + 1)
        return MemberVersion.objects.select_related("member__run").defer("parsed").get(pk=version_pk)\
            if claimed else None
    table, members = MemberVersion._meta.db_table, MemberReport._meta.db_table
    columns = ", ".join(f'v."{f.column}"' for f in MemberVersion._meta.concrete_fields if f.name != "parsed")
    sql = (f'UPDATE "{table}" AS v SET "status" = %s, "claimed_at" = %s, "attempts" = v."attempts" + 1 '
           f'FROM "{members}" AS m WHERE m."id" = v."member_id" AND v."id" = %s AND (v."status" = %s '
           f'OR (v."status" = %s AND v."claimed_at" < %s) OR (v."status" = %s AND v."claimed_at" = %s)) '
           f'RETURNING {columns}, m."role" AS "member_role", m."run_id" AS "member_run_id"')
    parsing = MemberVersion.Status.PARSING
    rows = list(MemberVersion.objects.raw(sql, [parsing, now, version_pk, MemberVersion.Status.RECEIVED, parsing,
                                                stale, parsing, reclaim]))
    if not rows:
        return None
    version = rows[0]
    # The run as lock_run and the rows need it (its pk): lock_run reads it whole, under its lock.
    version.member = MemberReport(pk=version.member_id, role=version.member_role,
                                  run=Run(pk=version.member_run_id))
    return version


def _parse_claimed(*, version: MemberVersion, now: datetime, actor: Actor) -> MemberVersion | None:
    """The parse of a version this worker has just claimed (at `now`)."""
    version_pk = version.pk
    content = bytes(version.content)
    actual = manifests.sha256_hex(content)
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
    try:
        return _commit_parse(version=version, report=report, now=now, actor=actor, validate=True)
    except _ValidationFailed:
        # Validation itself failed (a bug, not bad content) and took the transaction with it: the parse
        # commits alone, and the run's validation is queued as its own task.
        logger.exception("validation after the parse failed on run %s; queued apart", version.member.run_id)
        return _commit_parse(version=version, report=report, now=now, actor=actor, validate=False)


class _ValidationFailed(Exception):
    """The run's validation failed inside the parse's transaction (see _commit_parse)."""


def _commit_parse(*, version: MemberVersion, report: ParsedReport, now: datetime, actor: Actor,
                  validate: bool) -> MemberVersion | None:
    """Write the parse of `version` (claimed at `now`) under the run's lock; then, with `validate`, validate
    the run in the same transaction once no current member waits for a parse.

    The last parse of a burst validates the run's latest state; earlier ones find a member still waiting
    and leave it to that one. A pending request (from a snapshot upload, say) is claimed too, so its task
    finds nothing to do. No savepoint around the validation (two statements per upload, issue 23 item 7):
    a validation that raises rolls everything back as _ValidationFailed, and the caller commits the
    parse again without it (`validate=False`), queueing the validation apart.
    """
    run = version.member.run
    records, issues = _rows(run, version, report)
    outcome = {"counts": report.counts(), "kind_counts": count_kinds(records),
               "front_matter": json_safe(report.front_matter),
               "doc_type": report.doc_type[:200], "generation": report.generation[:30],
               "parsed": parsed_json(report), "status": MemberVersion.Status.PARSED, "status_reason": "",
               "parsed_at": now}
    with transaction.atomic():
        run = lock_run(run)  # always the run first: one lock order for every writer of this run
        # Written only while this parse's claim still holds (the UPDATE locks the row and re-checks it).
        claim_holds = MemberVersion.objects.filter(pk=version.pk, status=MemberVersion.Status.PARSING,
                                                   claimed_at=now).update(**outcome)
        if not claim_holds:
            return None  # a later claim took the work over
        if version.attempts > 1:
            # Only a parse commits rows, and every parse claims first (attempts + 1): on the first claim there
            # are none to replace, which spares the delete's two reads of its dependents.
            Record.objects.filter(member_version=version).delete()
            IntegrationIssue.objects.filter(member_version=version).delete()
        insert_rows(Record, RECORD_FIELDS, records)
        insert_rows(IntegrationIssue, ISSUE_FIELDS, issues)
        for field, value in outcome.items():
            setattr(version, field, value)
        record_event(run=run, actor=actor, action=Action.MEMBER_PARSED, object_type="member_version",
                     object_id=version_label(version.member.role, version.version),
                     after={"counts": version.counts, "sha256": version.sha256, "generation": version.generation},
                     head_known=True)  # `run` is lock_run's, above, and nothing since wrote an event
        if not validate:
            request_validation(run)
        else:
            try:
                if validate_locked(run, actor=actor) is not None:  # None: a member still waits for its parse
                    ValidationRequest.objects.filter(run=run).delete()  # what a pending request asked is done
            except Exception as error:  # noqa: BLE001 — the caller logs it and commits the parse alone
                raise _ValidationFailed() from error
    return version


def _fail_version(*, version: MemberVersion, claimed_at, actor: Actor, reason: str) -> MemberVersion | None:
    """Record the failure on `version` (loaded with member__run) if the claim taken at `claimed_at` still holds."""
    with transaction.atomic():
        run = lock_run(version.member.run)
        locked = MemberVersion.objects.select_for_update().get(pk=version.pk)
        if locked.status != MemberVersion.Status.PARSING or locked.claimed_at != claimed_at:
            return None
        locked.status, locked.status_reason = MemberVersion.Status.FAILED, reason
        locked.save(update_fields=MemberVersion.STATUS_FIELDS)
        record_event(run=run, actor=actor, action=Action.MEMBER_PARSE_FAILED, object_type="member_version",
                     object_id=version_label(version.member.role, locked.version),
                     before={"status": MemberVersion.Status.PARSING}, after={"status": "failed", "reason": reason})
        # Validation decides the run's status, failed members included.
        request_validation(run)
    return locked

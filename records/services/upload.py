"""Upload: a member report's bytes stored as its next version, its parse queued (DESIGN §3, §4)."""
from __future__ import annotations

import functools
import logging
import os
import re

from django.db import connection, transaction
from django.db.models.sql import InsertQuery
from django.utils import timezone

from reviews.access import ADMIN, roles_of
from reviews.actions import Action
from reviews.audit import Actor, WithEvent, carries_changes, lock_run, record_event
from reviews.binding import cursor_for
from reviews.models import Run

from .. import manifests
from ..models import MemberReport, MemberVersion
from .current import version_label
from .answering import ANSWERS
from .jobs import PARSE
from .refusals import NotParticipant, check_report_bytes, known_role, refuse_closed_run

logger = logging.getLogger(__name__)

_FILENAME_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def _clean_filename(filename: str | None, role: str) -> str:
    name = os.path.basename((filename or "").replace("\\", "/"))
    name = _FILENAME_CONTROL_RE.sub("", name).strip()  # no CR/LF/tab either: it goes into headers
    return (name or manifests.member_filename(role))[:255]


def ingest_member_report(
    *, run: Run | str, role: str, filename: str | None, content: bytes, actor: Actor, answers=None, uploader=None
) -> tuple[MemberVersion, bool]:
    """Store the bytes as the member's next version and queue its parse; `created` is False for identical bytes.

    `run` is the Run, or its run_id: the upload API passes the ID so that the
    run is read once, by its row lock (Run.DoesNotExist when there is none).
    `uploader` (the upload API's user): when given, it must be an admin or one of the run's participants
    (DESIGN §9), judged on that locked row; NotParticipant otherwise, before anything is stored.

    One audit event per upload: `member.uploaded` (or `member.reupload_identical`),
    carrying the run's status move (open/in_review/failed → validating) when the
    upload causes one, instead of a second `run.status_changed` event.

    `answers` (the upstream `- corrected: …` / `- declined: …` list, or a JSON list) answer the correction
    requests open against the member (records.services.answering); the event names those it answered.

    Refuses (UploadRefused subclasses): unknown role, empty, too large,
    binary or non-UTF-8 bytes, a run that no longer takes uploads, answers that do not match the
    member's open requests or a corrected version that drops a declared ID; nothing is stored then.
    """
    known_role(role)
    text = check_report_bytes(content)
    sha256 = manifests.sha256_hex(content)
    filename = _clean_filename(filename, role)
    with transaction.atomic():
        locked_run = lock_run(run)
        if uploader is not None and ADMIN not in roles_of(uploader) and not locked_run.has_participant(uploader):
            raise NotParticipant(locked_run.run_id)
        if not locked_run.accepts_uploads:
            raise refuse_closed_run(locked_run, "an upload")
        member = _locked_member(locked_run, role)
        plan = ANSWERS.check(run=locked_run, role=role, text=text, answers=answers,
                             current_version_id=member.current_version_id, identical=member.current_sha256 == sha256,
                             open_ids=member.open_request_ids)
        carried = None
        if member.current_sha256 == sha256:
            version, created = _current_version(member), False
            queued = _retry_if_failed(version)
            action = Action.MEMBER_REUPLOAD_IDENTICAL
            after = {"role": role, "version": version.version, "sha256": sha256, "filename": filename,
                     "retried": queued}
        else:
            version = _new_version(member=member, filename=filename, content=content, sha256=sha256, actor=actor)
            created = queued = True
            action = Action.MEMBER_UPLOADED
            after = {"role": role, "version": version.version, "sha256": sha256, "size": len(content),
                     "filename": filename}
            # Stored by the event's own statement, unless the answers need its row first (or on SQLite).
            carried = _version_with_event(member, version) if plan is None and carries_changes(locked_run) else None
            if carried is None:
                _store_version(member, version)
        answered = ANSWERS.apply(plan, version=version)
        if answered:
            after["answered"] = answered
        move = _start_validating(locked_run, reason=f"{role} v{version.version} uploaded") if queued else None
        if move:
            after["run_status"] = move
        # The run's move is saved by the statement that writes its event.
        record_event(run=locked_run, actor=actor, action=action, object_type="member_version",
                     object_id=version_label(role, version.version), after=after, head_known=True,
                     run_fields=Run.STATUS_FIELDS if move else (), with_event=carried)
        if carried is not None:
            _stored(member, version, carried.value)
        if created:
            PARSE.after_commit(version.pk)
    if isinstance(run, Run):
        run.status, run.status_reason, run.failed_from = (locked_run.status, locked_run.status_reason,
                                                          locked_run.failed_from)
    return version, created


def _locked_member(run: Run, role: str) -> MemberReport:
    """The run's member for `role`, row-locked, with the number and SHA-256 of its current version
    (`current_number`, `current_sha256`: None before its first) and the ids of the correction requests open
    against it (`open_request_ids`, oldest first, read by the same statement when the app that keeps them
    says how: records.services.answering; None when not read); created on its first upload (the run's lock
    is held, so nobody else creates it meanwhile).

    A raw statement because it was the upload's dearest: compiling this join through the ORM (select_related,
    defer, FOR UPDATE OF) took about four times the CPU of running it.
    """
    lock = " FOR UPDATE OF m" if connection.features.has_select_for_update_of else ""
    open_ids = ANSWERS.open_ids_sql() if connection.vendor == "postgresql" else None
    column, params = (f", {open_ids[0]} AS open_request_ids", open_ids[1]) if open_ids else ("", [])
    member = next(iter(MemberReport.objects.raw(
        f"SELECT m.*, v.version AS current_number, v.sha256 AS current_sha256{column} "
        f"FROM {MemberReport._meta.db_table} m LEFT JOIN {MemberVersion._meta.db_table} v "
        f"ON v.id = m.current_version_id WHERE m.run_id = %s AND m.role = %s{lock}", [*params, run.pk, role])),
        None)
    if member is None:
        member = MemberReport.objects.create(run=run, role=role)
        member.current_number = member.current_sha256 = member.open_request_ids = None
    elif not open_ids:
        member.open_request_ids = None
    return member


def _current_version(member: MemberReport) -> MemberVersion:
    """The member's current version, without its bytes or parser output (what an upload answers with)."""
    version = MemberVersion.objects.defer("content", "parsed").get(pk=member.current_version_id)
    version.member = member
    return version


def _start_validating(run: Run, *, reason: str) -> dict | None:
    """Move the locked run to validating when it is open, in review or failed; the move, for the upload's event
    (which saves it: record_event's run_fields)."""
    if run.status not in (Run.Status.OPEN, Run.Status.IN_REVIEW, Run.Status.FAILED):
        return None
    old = run.transition_to(Run.Status.VALIDATING, reason=reason)
    return {"before": old, "after": Run.Status.VALIDATING, "reason": reason}


def _new_version(*, member: MemberReport, filename: str, content: bytes, sha256: str,
                 actor: Actor) -> MemberVersion:
    """The member's next version, not stored yet (_store_version, or the upload's event: _version_with_event)."""
    # Versions are only made here and each becomes current, so the current one holds the highest number.
    number = member.current_number + 1 if member.current_version_id else 1
    return MemberVersion(
        member=member, version=number, filename=filename, content=content, sha256=sha256, size=len(content),
        uploaded_by=actor.label, queued_at=timezone.now(),
    )


def _store_version(member: MemberReport, version: MemberVersion) -> None:
    """Insert `version` and make it the member's current one, by statements of their own."""
    if connection.vendor == "postgresql":
        params = [*_version_params(version), member.pk]
        with cursor_for(params) as cursor:  # the bytes travel as they are
            cursor.execute(_insert_as_current_sql(), params)
            _stored(member, version, cursor.fetchone()[0])
    else:
        version.save(force_insert=True)
        member.current_version = version
        member.save(update_fields=["current_version"])


def _version_with_event(member: MemberReport, version: MemberVersion) -> WithEvent:
    """Insert `version` and make it the member's current one in the statement that writes the upload's event
    (reviews.audit.WithEvent): one round trip for the three rows and the run's chain head, where they took
    three, then two (DESIGN §11 "uploads"). The member's foreign key to the new row is checked at commit
    (Django's constraints are deferred)."""
    ctes, returning = _version_ctes()
    return WithEvent(ctes=ctes, params=[*_version_params(version), member.pk], returning=returning)


def _stored(member: MemberReport, version: MemberVersion, pk: int) -> None:
    version.pk = pk
    version._state.adding, version._state.db = False, connection.alias
    member.current_version = version


_VERSION_FIELDS = [f for f in MemberVersion._meta.local_concrete_fields if not f.primary_key]


def _version_params(version: MemberVersion) -> list:
    """The insert's parameters, prepared as the ORM's compiler prepares them (pre_save, then get_db_prep_save)."""
    return [f.get_db_prep_save(f.pre_save(version, True), connection) for f in _VERSION_FIELDS]


@functools.cache
def _version_ctes() -> tuple[str, str]:
    """The version's insert and the member's move to it as data-modifying CTEs (PostgreSQL), and the expression
    that reads the new version's id: compiled by the ORM once per process, since its text does not depend on
    the values (compiling it on every upload cost more CPU than running it)."""
    query = InsertQuery(MemberVersion)
    query.insert_values(_VERSION_FIELDS, [MemberVersion(member_id=0, version=0, sha256="", size=0)])
    [(insert, _params)] = query.get_compiler(connection=connection).as_sql()
    pk = MemberVersion._meta.pk.column
    return (f'"version" AS ({insert} RETURNING "{pk}"), "current" AS (UPDATE "{MemberReport._meta.db_table}" '
            f'SET "current_version_id" = (SELECT "{pk}" FROM "version") WHERE "id" = %s '
            f'RETURNING "current_version_id")', '(SELECT "current_version_id" FROM "current")')


@functools.cache
def _insert_as_current_sql() -> str:
    """_version_ctes as a statement of its own (an upload whose answers need the version's row first)."""
    ctes, returning = _version_ctes()
    return f"WITH {ctes} SELECT {returning}"


def _retry_if_failed(version: MemberVersion) -> bool:
    """Same bytes again: the same version. A version whose parse failed is queued again (a retry); True then."""
    if version.status != MemberVersion.Status.FAILED:
        return False
    version.status, version.status_reason, version.queued_at = MemberVersion.Status.RECEIVED, "", timezone.now()
    version.save(update_fields=["status", "status_reason", "queued_at"])
    PARSE.after_commit(version.pk)
    return True

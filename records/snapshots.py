"""The run's frozen source snapshot, and its quotations checked against it (DESIGN §4, §6).

`upload_source_snapshot` stores an archive of the reviewed commit's files in
the database, each file's bytes once per SHA-256 (`SourceBlob`), so a worker
on any host reads them; the same archive again is no new work. It queues the
run's validation, which calls `check_quotations`: every citation of every
current member is checked (`records.quotes`) against the current snapshot,
the per-citation results are kept (`QuotationCheck`) and their findings join
the run's validation findings, so errors block approval.
"""
from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Sequence
from typing import BinaryIO

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run
from reviews.services import set_run_status

from . import archives, quotes
from .models import (
    MemberReport,
    MemberVersion,
    QuotationCheck,
    SourceBlob,
    SourceFile,
    SourceSnapshot,
)
from .services import UploadRefused, current_versions, refuse_closed_run, request_validation
from .validation import Finding, MemberInput, current_form

logger = logging.getLogger(__name__)

# An export bundle carries the snapshot's archive up to this size; above it, only its hash.
BUNDLE_ARCHIVE_MAX_BYTES = 10 * 1024 * 1024
MAX_PATH_LENGTH = 1024  # SourceFile.path


class SourceRefused(UploadRefused):
    code = "source_refused"


class SourceTooLarge(SourceRefused):
    code = "too_large"


class SourceCommitMismatch(SourceRefused):
    code = "commit_mismatch"


def current_snapshot(run: Run) -> SourceSnapshot | None:
    return SourceSnapshot.objects.filter(run=run).order_by("-activated_at", "-id").first()


def _sha256_of(stream: BinaryIO) -> tuple[str, int]:
    stream.seek(0)
    digest = hashlib.sha256()
    size = 0
    while chunk := stream.read(archives.CHUNK_SIZE):
        digest.update(chunk)
        size += len(chunk)
    stream.seek(0)
    return digest.hexdigest(), size


def read_source_archive(archive: bytes | BinaryIO) -> dict[str, bytes]:
    """`{path: bytes}` of a source archive within the configured limits; SourceRefused naming the entry."""
    try:
        files = archives.read_archive(archive, max_bytes=settings.MAX_SOURCE_BYTES,
                                      max_files=settings.MAX_SOURCE_FILES, strip_root=False)
    except archives.BundleError as error:
        raise SourceRefused(error.message, details={"problems": error.problems}) from None
    for path in files:
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            name = path.encode("utf-8", "backslashreplace").decode("ascii", "replace")
            raise SourceRefused(f"{name}: refused, the file name is not UTF-8", details={"problems": [name]}) from None
        if len(path) > MAX_PATH_LENGTH:
            raise SourceRefused(f"{path[:80]}…: refused, a path longer than {MAX_PATH_LENGTH} characters",
                                details={"problems": [path]})
    return files


def _store_blobs(contents: dict[str, bytes]) -> dict[str, SourceBlob]:
    """`{sha256: blob}`, creating only the blobs the database does not hold yet."""
    wanted = set(contents)
    existing = {b.sha256: b for b in SourceBlob.objects.filter(sha256__in=wanted).only("pk", "sha256", "size")}
    missing = [SourceBlob(sha256=sha, size=len(data), content=data) for sha, data in contents.items()
               if sha not in existing]
    # Another upload may store the same bytes meanwhile; the unique hash keeps one row either way.
    SourceBlob.objects.bulk_create(missing, batch_size=200, ignore_conflicts=True)
    if missing:
        existing |= {b.sha256: b for b in SourceBlob.objects.filter(sha256__in=[m.sha256 for m in missing])
                     .only("pk", "sha256", "size")}
    return existing


def upload_source_snapshot(
    *, run: Run, archive: bytes | BinaryIO, commit: str | None, actor: Actor
) -> tuple[SourceSnapshot, bool]:
    """Store the archive as the run's current snapshot and queue the check; `created` is False for the same archive.

    Refuses (UploadRefused subclasses): a `commit` other than the run's
    reviewed boundary, an unsafe or over-limit archive (naming the entry),
    a run that no longer takes uploads.
    """
    stream = io.BytesIO(archive) if isinstance(archive, (bytes, bytearray)) else archive
    if commit and not quotes.same_commit(commit, run.reviewed_boundary):
        raise SourceCommitMismatch(
            f"commit: {commit} is not the run's reviewed boundary {run.reviewed_boundary}; upload the source "
            "at the reviewed commit", details={"field": "commit", "reviewed_boundary": run.reviewed_boundary})
    archive_sha256, size = _sha256_of(stream)
    if size > settings.MAX_SOURCE_BYTES:
        raise SourceTooLarge(f"file: {size} bytes; the limit is {settings.MAX_SOURCE_BYTES} bytes",
                             details={"size": size, "limit": settings.MAX_SOURCE_BYTES})
    known = SourceSnapshot.objects.filter(run=run, archive_sha256=archive_sha256).exists()
    files = None if known else read_source_archive(stream)  # read before taking the run's lock
    with transaction.atomic():
        locked_run = lock_run(run)
        if not locked_run.accepts_uploads:
            raise refuse_closed_run(locked_run, "a source snapshot")
        snapshot = SourceSnapshot.objects.filter(run=locked_run, archive_sha256=archive_sha256).first()
        if snapshot is not None:
            return _reupload(run=locked_run, snapshot=snapshot, actor=actor), False
        if files is None:
            files = read_source_archive(stream)
        snapshot = _new_snapshot(run=locked_run, stream=stream, archive_sha256=archive_sha256, commit=commit or "",
                                 files=files, actor=actor)
        _revalidate(locked_run, actor, reason="source snapshot uploaded")
    run.status, run.status_reason = locked_run.status, locked_run.status_reason
    return snapshot, True


def _new_snapshot(*, run: Run, stream: BinaryIO, archive_sha256: str, commit: str, files: dict[str, bytes],
                  actor: Actor) -> SourceSnapshot:
    hashes = {path: archives.sha256_hex(data) for path, data in files.items()}
    stream.seek(0)
    archive_bytes = stream.read()
    blobs = _store_blobs({sha: files[path] for path, sha in hashes.items()} | {archive_sha256: archive_bytes})
    total = sum(len(data) for data in files.values())
    now = timezone.now()
    snapshot = SourceSnapshot.objects.create(
        run=run, archive=blobs[archive_sha256], archive_sha256=archive_sha256, commit=commit,
        file_count=len(files), total_bytes=total, uploaded_by=actor.label, created_at=now, activated_at=now)
    SourceFile.objects.bulk_create(
        [SourceFile(snapshot=snapshot, path=path, blob=blobs[hashes[path]], sha256=hashes[path],
                    size=len(files[path])) for path in sorted(files)], batch_size=500)
    record_event(run=run, actor=actor, action="source.uploaded", object_type="source_snapshot",
                 object_id=archive_sha256,
                 after={"archive_sha256": archive_sha256, "archive_size": len(archive_bytes), "commit": commit,
                        "file_count": len(files), "total_bytes": total})
    return snapshot


def carry_snapshot(*, source_run: Run, target_run: Run) -> SourceSnapshot | None:
    """Give `target_run` (a revision, same boundary) the current snapshot of `source_run`, sharing its blobs.

    Part of the caller's flow and its audit event (revising a run names the snapshot it carried).
    """
    snapshot = current_snapshot(source_run)
    if snapshot is None:
        return None
    copy = SourceSnapshot.objects.create(
        run=target_run, archive=snapshot.archive, archive_sha256=snapshot.archive_sha256, commit=snapshot.commit,
        file_count=snapshot.file_count, total_bytes=snapshot.total_bytes, uploaded_by=snapshot.uploaded_by)
    SourceFile.objects.bulk_create([
        SourceFile(snapshot=copy, path=f.path, blob_id=f.blob_id, sha256=f.sha256, size=f.size)
        for f in snapshot.files.all()])
    return copy


def _reupload(*, run: Run, snapshot: SourceSnapshot, actor: Actor) -> SourceSnapshot:
    """The same archive again: nothing to do when it is current; an older one becomes current again."""
    current = current_snapshot(run)
    reactivated = current is not None and current.pk != snapshot.pk
    if reactivated:
        snapshot.activated_at = timezone.now()
        snapshot.save(update_fields=["activated_at"])
        _revalidate(run, actor, reason="source snapshot re-activated")
    record_event(run=run, actor=actor, action="source.reupload_identical", object_type="source_snapshot",
                 object_id=snapshot.archive_sha256,
                 after={"archive_sha256": snapshot.archive_sha256, "reactivated": reactivated})
    return snapshot


def _revalidate(run: Run, actor: Actor, *, reason: str) -> None:
    """Ask for the run's validation (which checks the quotations), as a member upload does: through its
    pending ValidationRequest, which the validate task claims in any status, a failed run's included."""
    if not MemberReport.objects.filter(run=run).exists():
        return  # nothing to check yet: each member upload queues the validation
    if run.status == Run.Status.IN_REVIEW:
        set_run_status(run=run, status=Run.Status.VALIDATING, actor=actor, reason=reason)
    request_validation(run)


# --- the check (called by validation, inside its transaction) -------------


def _snapshot_files(snapshot: SourceSnapshot, cited: set[str]) -> quotes.SnapshotFiles:
    """The snapshot's files that `cited` paths name, decoded, with every path of the snapshot indexed."""
    paths = quotes.SnapshotPaths(snapshot.files.values_list("path", flat=True))
    wanted = {resolved for path in cited if (resolved := paths.resolve(path)) is not None}
    loaded = {f.path: quotes.SourceText(bytes(f.blob.content).decode("utf-8", errors="replace"))
              for f in snapshot.files.filter(path__in=wanted).select_related("blob")}
    return quotes.SnapshotFiles(loaded, paths)


def _rows(run: Run, version: MemberVersion, snapshot: SourceSnapshot | None,
          results: Sequence[quotes.CheckResult]) -> list[QuotationCheck]:
    return [
        QuotationCheck(
            run=run, member_version=version, snapshot=snapshot, ordinal=ordinal, kind=r.citation.kind,
            line=max(r.citation.line, 0), text=r.citation.text, path=r.citation.path[:1024],
            lines=r.citation.lines[:60], commit=r.citation.commit[:64], status=r.status, message=r.message,
            source_lines=[list(line) for line in r.source_lines], candidates=list(r.candidates))
        for ordinal, r in enumerate(results, start=1)
    ]


def _signature(rows) -> list[tuple]:
    return sorted((r.member_version_id, r.ordinal, r.snapshot_id, r.kind, r.line, r.path, r.lines, r.commit,
                   r.status, r.message, r.text) for r in rows)


def check_quotations(
    *, run: Run, versions: Sequence[MemberVersion], inputs: Sequence[MemberInput], found: Sequence[Finding],
) -> tuple[list[Finding], dict | None]:
    """Check every citation of `inputs` (parsed `versions`, in the same order) against the current snapshot.

    Keeps one QuotationCheck per citation of the current versions (rows of
    older versions are dropped). Returns `found` with the check's findings,
    and what changed for the validation's audit event (`run.validated`'s
    `after.quotations`): the snapshot and the totals per status, or None when
    the same members and snapshot left the rows as they were. A failure of
    the check itself (a bug, not bad content) leaves the rows as they were and
    becomes one error finding, so the run's validation still completes and
    approval waits.
    """
    change = None
    try:
        with transaction.atomic():  # a savepoint: a failed check rolls back only its own writes
            quote_findings, change = _check(run=run, versions=versions, inputs=inputs)
    except Exception as error:  # noqa: BLE001 — recorded as a finding; the traceback goes to the log
        logger.exception("quotation check failed on run %s", run.run_id)
        quote_findings = [Finding("quote-check-failed", "error", "", "", 0,
                                  f"The quotation check failed ({type(error).__name__}: {error}); quotations are "
                                  "unchecked. Upload the snapshot again or report this to an administrator.")]
    return quotes.merge_findings(found, quote_findings), change


def _results(run: Run, inputs: Sequence[MemberInput]):
    """(snapshot, each member's check results, the findings) of `inputs` against the current snapshot; no writes."""
    snapshot = current_snapshot(run)
    citations = [quotes.citations_of(member.report) for member in inputs]
    files = None
    if snapshot is not None:
        files = _snapshot_files(snapshot, {c.path for cited in citations for c in cited})
    current = current_form(inputs)  # validation's rule of generations, asked of validation
    per_member, quote_findings = [], []
    for member, cited in zip(inputs, citations):
        results = [quotes.check_citation(c, files, run_commit=run.reviewed_boundary) for c in cited]
        per_member.append(results)
        quote_findings += quotes.findings_for(member.name, results, current=current[member.name])
    return snapshot, per_member, quote_findings


def recheck_quotations(*, run: Run, inputs: Sequence[MemberInput], found: Sequence[Finding]) -> list[Finding]:
    """`found` with the quotation findings of `inputs` checked afresh against the stored snapshot, writing
    nothing: finalization re-verifies the quotations of the bytes it has just re-hashed."""
    return quotes.merge_findings(found, _results(run, inputs)[2])


def _check(*, run: Run, versions: Sequence[MemberVersion],
           inputs: Sequence[MemberInput]) -> tuple[list[Finding], dict | None]:
    snapshot, per_member, quote_findings = _results(run, inputs)
    rows: list[QuotationCheck] = []
    for version, results in zip(versions, per_member):
        rows += _rows(run, version, snapshot, results)
    existing = QuotationCheck.objects.filter(run=run)
    if _signature(existing) == _signature(rows):
        return quote_findings, None
    existing.delete()
    QuotationCheck.objects.bulk_create(rows, batch_size=500)
    change = {"snapshot_sha256": snapshot.archive_sha256 if snapshot else None,
              "quotations": quotes.totals([r.status for r in rows if r.kind == QuotationCheck.Kind.QUOTATION]),
              "anchors": quotes.totals([r.status for r in rows if r.kind == QuotationCheck.Kind.ANCHOR])}
    return quote_findings, change


def quotation_summary(run: Run) -> dict:
    """The snapshot and the totals per status of the run's current quotations (for pages and the result)."""
    snapshot = current_snapshot(run)
    checks = QuotationCheck.objects.filter(run=run, kind=QuotationCheck.Kind.QUOTATION,
                                           member_version__in=current_versions(run))
    statuses = list(checks.values_list("status", flat=True))
    counts = quotes.totals(statuses)
    return {"snapshot": snapshot, "snapshot_sha256": snapshot.archive_sha256 if snapshot else None,
            "totals": counts, "total": len(statuses), "verified": counts[quotes.VERIFIED]}


def export_source(run: Run, make_entries):
    """The export's source files, `make_entries(archive_sha256=, commit=, file_count=, total_bytes=, archive=)`
    for the current snapshot (its archive only up to BUNDLE_ARCHIVE_MAX_BYTES); None without a snapshot."""
    snapshot = current_snapshot(run)
    if snapshot is None:
        return None
    archive = bytes(snapshot.archive.content) if snapshot.archive.size <= BUNDLE_ARCHIVE_MAX_BYTES else None
    return make_entries(archive_sha256=snapshot.archive_sha256, commit=snapshot.commit,
                        file_count=snapshot.file_count, total_bytes=snapshot.total_bytes, archive=archive)


def verification_statement(run: Run) -> str:
    """"N of M quotations verified against snapshot <sha256>" (or that no snapshot was uploaded)."""
    summary = quotation_summary(run)
    if summary["snapshot"] is None:
        return (f"0 of {summary['total']} quotations verified: no source snapshot was uploaded "
                "(quotations unverified).")
    return (f"{summary['verified']} of {summary['total']} quotations verified against snapshot "
            f"{summary['snapshot_sha256']}.")

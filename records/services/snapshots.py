"""The run's frozen source snapshot: uploaded once per archive, carried to a revision (DESIGN §4)."""
from __future__ import annotations

import hashlib
import io
import logging
from typing import BinaryIO

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from reviews.actions import Action
from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run
from reviews.services import set_run_status

from .. import archive_reading, manifests
from ..models import MemberReport, SourceBlob, SourceFile, SourceSnapshot
from ..validation import quotes
from .quotations import current_snapshot
from .refusals import UploadRefused, refuse_closed_run
from .validate import request_validation

logger = logging.getLogger(__name__)

# An export bundle carries the snapshot's archive up to this size; above it, only its hash.
MAX_PATH_LENGTH = 1024  # SourceFile.path


class SourceRefused(UploadRefused):
    code = "source_refused"


class SourceTooLarge(SourceRefused):
    code = "too_large"


class SourceCommitMismatch(SourceRefused):
    code = "commit_mismatch"




def _sha256_of(stream: BinaryIO) -> tuple[str, int]:
    stream.seek(0)
    digest = hashlib.sha256()
    size = 0
    while chunk := stream.read(archive_reading.CHUNK_SIZE):
        digest.update(chunk)
        size += len(chunk)
    stream.seek(0)
    return digest.hexdigest(), size


def read_source_archive(archive: bytes | BinaryIO) -> dict[str, bytes]:
    """`{path: bytes}` of a source archive within the configured limits; SourceRefused naming the entry."""
    try:
        files = archive_reading.read_archive(archive, max_bytes=settings.MAX_SOURCE_BYTES,
                                      max_files=settings.MAX_SOURCE_FILES, strip_root=False)
    except archive_reading.BundleError as error:
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
    hashes = {path: manifests.sha256_hex(data) for path, data in files.items()}
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
    record_event(run=run, actor=actor, action=Action.SOURCE_UPLOADED, object_type="source_snapshot",
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
    record_event(run=run, actor=actor, action=Action.SOURCE_REUPLOAD_IDENTICAL, object_type="source_snapshot",
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

"""Export bundles: a run in the set layout, and checking one offline (DESIGN §1, §4).

Pure: bytes in, bytes or plain data out; no ORM. Reading archives
(`records.archive_reading`), the `ARTIFACT.yaml` manifest and pin checking
(`records.manifests`) live in records (records imports run directories with
them); this module adds only what exporting needs.

Export layout (what `export_entries` builds and `write_export_zip` writes):

    ARTIFACT.yaml   the §1 manifest pinning every member file (our pins)
    <member files>  the current version of every member, exact bytes
    result.md       the final result, when there is one
    result.json     the result as data, exactly the bytes signed (once final)
    audit.json      the run's audit trail: every event's content and hash, and the run's chain head
    attestation.dsse.json   the signed statement (DSSE envelope), once final
    public-key.pem  the public half of the key that signed it
    MANIFEST.json   {"files": {name: sha256}} for EVERY other file in the
                    bundle, ARTIFACT.yaml included (not itself: a document's
                    digest never sits inside its own bytes)
    source/SNAPSHOT.json     the run's source snapshot, when it has one:
                             {"archive_sha256", "archive", "commit", "file_count",
                             "total_bytes"}; `archive` names the file below or is
                             null when the archive was over the carried size limit
    source/snapshot.tar.gz   (or .zip) that archive's exact bytes

`ARTIFACT.yaml` pins members only, so an export stays in the same format as
the sets analysts keep; re-importing it works because `records.manifests`
checks the export extras against `MANIFEST.json`. A member named like an
export extra cannot be exported (`export_entries` refuses it).
"""
from __future__ import annotations

import hashlib
import io
import json
import stat
import zipfile
from collections.abc import Mapping

from records.archive_reading import BundleError, read_archive, safe_path
from records.manifests import (
    AUDIT_NAME,
    EXPORT_EXTRAS,
    ENVELOPE_NAME,
    EXPORT_MANIFEST_NAME,
    MANIFEST_NAME,
    PUBLIC_KEY_NAME,
    RESULT_JSON_NAME,
    RESULT_NAME,
    SET_TYPE,
    SOURCE_ARCHIVE_NAMES,
    SOURCE_SNAPSHOT_NAME,
    build_manifest,
    pin_problems,
    pins_of,
)

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
SOURCE_MAX_FILES = 100_000  # a carried source archive is read back whole to check its file count
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def _check_entry_name(name: str) -> None:
    if safe_path(name) != name:
        raise BundleError(f"{name}: not a clean relative path for an archive entry")


def export_entries(
    members: Mapping[str, bytes],
    *,
    audit_json: bytes,
    result_md: bytes | None = None,
    doc_type: str = SET_TYPE,
    source: Mapping[str, bytes] | None = None,
    result_json: bytes | None = None,
    envelope: bytes | None = None,
    public_key_pem: bytes | None = None,
) -> dict[str, bytes]:
    """Every file of an export bundle (layout in the module docstring); `source` from `source_entries`."""
    reserved = {MANIFEST_NAME, *EXPORT_EXTRAS}
    for name in members:
        _check_entry_name(name)
        if name in reserved:
            raise BundleError(f"{name}: a member cannot take a name reserved for the export")
    entries = dict(members)
    entries[MANIFEST_NAME] = build_manifest(pins_of(members), doc_type=doc_type).encode("utf-8")
    if result_md is not None:
        entries[RESULT_NAME] = result_md
    entries[AUDIT_NAME] = audit_json
    for name, data in ((RESULT_JSON_NAME, result_json), (ENVELOPE_NAME, envelope), (PUBLIC_KEY_NAME, public_key_pem)):
        if data is not None:
            entries[name] = data
    entries.update(source or {})
    listing = pins_of(entries)
    entries[EXPORT_MANIFEST_NAME] = (json.dumps({"files": listing}, indent=2, sort_keys=True) + "\n").encode("utf-8")
    return entries


def write_export_zip(entries: Mapping[str, bytes]) -> bytes:
    """A deterministic zip: sorted names, fixed 1980-01-01 times, fixed modes. Files are stored, not
    deflated: each lies in the bundle as the exact bytes its pin names, and the auditor's check costs the
    hashes it must compute, not an inflate of every file first (DESIGN §11: about 5x a bare hash of the
    deflated bundle, 2.7x of the stored one). The bundle is larger by what deflate saved (reports deflate
    2.6x-3.5x; the source snapshot is a compressed archive already). Bundles exported deflated
    still verify: readers take either."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(entries):
            _check_entry_name(name)
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            archive.writestr(info, entries[name])
    return buffer.getvalue()


def verify_export(data: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> list[str]:
    """Problems with an export bundle, each naming its file; [] means it checks out."""
    try:
        files = read_archive(data, max_bytes=max_bytes)
    except BundleError as exc:
        return list(exc.problems)
    problems = []
    if EXPORT_MANIFEST_NAME not in files:
        problems.append(f"{EXPORT_MANIFEST_NAME}: missing from the bundle")
    if AUDIT_NAME not in files:
        problems.append(f"{AUDIT_NAME}: missing from the bundle")
    else:
        try:
            json.loads(files[AUDIT_NAME].decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            problems.append(f"{AUDIT_NAME}: malformed, not UTF-8 JSON")
    _pins, pin_found = pin_problems(files)
    problems += [problem for problem in pin_found if problem not in problems]
    problems += source_problems(files)
    return problems


def source_entries(*, archive_sha256: str, commit: str, file_count: int, total_bytes: int,
                   archive: bytes | None) -> dict[str, bytes]:
    """The export's `source/` files for a snapshot: its description, and the archive unless it is None."""
    name = None
    if archive is not None:
        name = SOURCE_ARCHIVE_NAMES[1] if archive[:2] == b"PK" else SOURCE_ARCHIVE_NAMES[0]
    description = {"archive_sha256": archive_sha256, "archive": name, "commit": commit,
                   "file_count": file_count, "total_bytes": total_bytes}
    entries = {SOURCE_SNAPSHOT_NAME: (json.dumps(description, indent=2, sort_keys=True) + "\n").encode("utf-8")}
    if archive is not None:
        entries[name] = archive
    return entries


def source_problems(files: Mapping[str, bytes]) -> list[str]:
    """The carried snapshot checked: its archive's bytes hash to the recorded SHA-256 and hold the recorded files."""
    archives_carried = [name for name in SOURCE_ARCHIVE_NAMES if name in files]
    if SOURCE_SNAPSHOT_NAME not in files:
        return [f"{name}: a source archive without {SOURCE_SNAPSHOT_NAME}" for name in archives_carried]
    try:
        description = json.loads(files[SOURCE_SNAPSHOT_NAME].decode("utf-8"))
        digest, name = description["archive_sha256"], description["archive"]
        counts = (description["file_count"], description["total_bytes"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        return [f"{SOURCE_SNAPSHOT_NAME}: malformed, expected archive_sha256, archive, file_count and total_bytes"]
    if name is None:
        return [f"{other}: carried, but {SOURCE_SNAPSHOT_NAME} says the archive is not" for other in archives_carried]
    if name not in files:
        return [f"{name}: named in {SOURCE_SNAPSHOT_NAME} but missing from the bundle"]
    actual = hashlib.sha256(files[name]).hexdigest()
    if actual != digest:
        return [f"{name}: SHA-256 mismatch, {SOURCE_SNAPSHOT_NAME} records {digest}, the archive hashes to {actual}"]
    try:
        contents = read_archive(files[name], max_bytes=DEFAULT_MAX_BYTES, max_files=SOURCE_MAX_FILES,
                                strip_root=False)
    except BundleError as exc:
        return [f"{name}: {problem}" for problem in exc.problems]
    if (len(contents), sum(len(data) for data in contents.values())) != tuple(counts):
        return [(f"{name}: holds {len(contents)} files, {sum(map(len, contents.values()))} bytes; "
                 f"{SOURCE_SNAPSHOT_NAME} records {counts[0]} files, {counts[1]} bytes")]
    return []

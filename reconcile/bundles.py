"""Export bundles: a run in the set layout, and checking one offline (DESIGN §1, §4).

Pure: bytes in, bytes or plain data out; no ORM. Reading archives, the
`ARTIFACT.yaml` manifest and pin checking live in `records.archives`
(records imports run directories with them); this module adds only what
exporting needs.

Export layout (what `export_entries` builds and `write_export_zip` writes):

    ARTIFACT.yaml   the §1 manifest pinning every member file (our pins)
    <member files>  the current version of every member, exact bytes
    result.md       the final result, when there is one
    audit.json      the run's audit trail
    MANIFEST.json   {"files": {name: sha256}} for EVERY other file in the
                    bundle, ARTIFACT.yaml included (not itself: a document's
                    digest never sits inside its own bytes)

`ARTIFACT.yaml` pins members only, so an export stays in the same format as
the sets analysts keep; re-importing it works because `records.archives`
checks the export extras against `MANIFEST.json`. A member named like an
export extra cannot be exported (`export_entries` refuses it).
"""
from __future__ import annotations

import io
import json
import stat
import zipfile
from collections.abc import Mapping

from records.archives import (
    AUDIT_NAME,
    EXPORT_EXTRAS,
    EXPORT_MANIFEST_NAME,
    MANIFEST_NAME,
    RESULT_NAME,
    SET_TYPE,
    BundleError,
    build_manifest,
    pin_problems,
    pins_of,
    read_archive,
    safe_path,
)

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
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
) -> dict[str, bytes]:
    """Every file of an export bundle (layout in the module docstring)."""
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
    listing = pins_of(entries)
    entries[EXPORT_MANIFEST_NAME] = (json.dumps({"files": listing}, indent=2, sort_keys=True) + "\n").encode("utf-8")
    return entries


def write_export_zip(entries: Mapping[str, bytes]) -> bytes:
    """A deterministic zip: sorted names, fixed 1980-01-01 times, fixed modes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(entries):
            _check_entry_name(name)
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            archive.writestr(info, entries[name], compresslevel=9)
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
    return problems

"""Run directories as archives: manifests, pins, import and export (DESIGN §1, §4, §6).

Pure: bytes in, bytes or plain data out; no ORM, no Django.

Import: `read_archive` turns a zip or tar.gz into `{path: bytes}` (refusing
anything unsafe), then `check_pins` checks the `ARTIFACT.yaml` manifest
against those bytes and returns the pins. Only pinned files are members.

Export layout (what `export_entries` builds and `write_export_zip` writes):

    ARTIFACT.yaml   the §1 manifest pinning every member file (our pins)
    <member files>  the current version of every member, exact bytes
    result.md       the final result, when there is one
    audit.json      the run's audit trail
    MANIFEST.json   {"files": {name: sha256}} for EVERY other file in the
                    bundle, ARTIFACT.yaml included (not itself: a document's
                    digest never sits inside its own bytes)

`ARTIFACT.yaml` pins members only, so an export stays in the same format as
the sets analysts keep. Re-importing our own export works: when a bundle
carries `MANIFEST.json`, the export extras (`result.md`, `audit.json`,
`MANIFEST.json`) are not members unless `ARTIFACT.yaml` pins them, and
`check_pins` verifies them against `MANIFEST.json` instead, so a tampered
export is refused on import too. Without `MANIFEST.json`, every file other
than `ARTIFACT.yaml` is a member and must be pinned. A member named like an
export extra cannot be exported (`export_entries` refuses it).
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Mapping
from typing import BinaryIO

import yaml

SET_TYPE = "agentic-systems/types/agentic-system-analysis-set.md"
MANIFEST_NAME = "ARTIFACT.yaml"
EXPORT_MANIFEST_NAME = "MANIFEST.json"
RESULT_NAME = "result.md"
AUDIT_NAME = "audit.json"
EXPORT_EXTRAS = (RESULT_NAME, AUDIT_NAME, EXPORT_MANIFEST_NAME)
MAX_ARCHIVE_FILES = 10_000
CHUNK_SIZE = 64 * 1024
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)

_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
_PLAIN_YAML_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$")
_DRIVE = re.compile(r"^[A-Za-z]:")
# Operating-system litter that archivers add; never a member.
_LITTER_DIRS = ("__MACOSX",)
_LITTER_FILES = (".DS_Store", "Thumbs.db")


class BundleError(Exception):
    """An archive or manifest that cannot be accepted; the message names the file."""

    def __init__(self, message: str, *, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems if problems is not None else [message]


# --- hashing --------------------------------------------------------------


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_stream(fileobj: BinaryIO, *, chunk_size: int = CHUNK_SIZE) -> str:
    """SHA-256 of everything left in `fileobj`, read in chunks."""
    digest = hashlib.sha256()
    while chunk := fileobj.read(chunk_size):
        digest.update(chunk)
    return digest.hexdigest()


# --- the ARTIFACT.yaml manifest -------------------------------------------


def _yaml_key(name: str) -> str:
    if _PLAIN_YAML_KEY.match(name) and yaml.safe_load(name) == name:
        return name
    # A JSON string is a valid YAML double-quoted scalar.
    return json.dumps(name, ensure_ascii=False)


def build_manifest(members: Mapping[str, bytes], *, doc_type: str = SET_TYPE) -> str:
    """`ARTIFACT.yaml` text pinning each member by the SHA-256 of its bytes, names sorted."""
    lines = [f"type: {_yaml_key(doc_type)}", "members:"]
    for name in sorted(members):
        lines.append(f"  {_yaml_key(name)}:")
        lines.append(f"    sha256: {sha256_hex(members[name])}")
    if not members:
        lines[-1] = "members: {}"
    return "\n".join(lines) + "\n"


def manifest_sha256(text: str) -> str:
    """The run's manifest hash: SHA-256 of the manifest's UTF-8 bytes."""
    return sha256_hex(text.encode("utf-8"))


def _read_pins(files: Mapping[str, bytes]) -> tuple[dict[str, str], list[str], set[str]]:
    """Pins from ARTIFACT.yaml, every problem with the manifest itself, and every name it mentions."""
    if MANIFEST_NAME not in files:
        return {}, [f"{MANIFEST_NAME}: missing from the bundle"], set()
    try:
        document = yaml.safe_load(files[MANIFEST_NAME].decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {}, [f"{MANIFEST_NAME}: malformed, not readable as UTF-8 YAML ({reason})"], set()
    if not isinstance(document, dict):
        return {}, [f"{MANIFEST_NAME}: malformed, expected a mapping with `type` and `members`"], set()
    members = document.get("members")
    if not isinstance(members, dict):
        return {}, [f"{MANIFEST_NAME}: malformed, `members` must be a mapping of file names to pins"], set()
    doc_type = document.get("type")
    problems = []
    if doc_type is not None and not isinstance(doc_type, str):
        problems.append(f"{MANIFEST_NAME}: malformed, `type` must be a string")
    pins: dict[str, str] = {}
    named = {str(name) for name in members}
    for name, pin in members.items():
        if not isinstance(name, str) or not name:
            problems.append(f"{MANIFEST_NAME}: malformed pin name {name!r}")
            continue
        digest = pin.get("sha256") if isinstance(pin, dict) else None
        if not isinstance(digest, str) or not _SHA256_HEX.match(digest):
            problems.append(
                f"{name}: malformed pin in {MANIFEST_NAME}, expected `sha256:` with 64 lower-case hex digits"
            )
            continue
        pins[name] = digest
    return pins, problems, named


def _read_export_manifest(files: Mapping[str, bytes]) -> tuple[dict[str, str], list[str]]:
    try:
        document = json.loads(files[EXPORT_MANIFEST_NAME].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}, [f"{EXPORT_MANIFEST_NAME}: malformed, not UTF-8 JSON"]
    listed = document.get("files") if isinstance(document, dict) else None
    if not isinstance(listed, dict):
        return {}, [f"{EXPORT_MANIFEST_NAME}: malformed, expected {{\"files\": {{name: sha256}}}}"]
    hashes: dict[str, str] = {}
    problems = []
    for name, digest in listed.items():
        if not isinstance(digest, str) or not _SHA256_HEX.match(digest):
            problems.append(f"{name}: malformed entry in {EXPORT_MANIFEST_NAME}")
        else:
            hashes[name] = digest
    return hashes, problems


def _export_manifest_problems(files: Mapping[str, bytes]) -> list[str]:
    hashes, problems = _read_export_manifest(files)
    if problems and not hashes:
        return problems
    for name in sorted(files):
        if name == EXPORT_MANIFEST_NAME:
            continue
        if name not in hashes:
            problems.append(f"{name}: not listed in {EXPORT_MANIFEST_NAME}")
        elif sha256_hex(files[name]) != hashes[name]:
            problems.append(
                f"{name}: SHA-256 mismatch, {EXPORT_MANIFEST_NAME} lists {hashes[name]}, "
                f"the file's bytes hash to {sha256_hex(files[name])}"
            )
    for name in sorted(hashes):
        if name not in files:
            problems.append(f"{name}: listed in {EXPORT_MANIFEST_NAME} but missing from the bundle")
    return problems


def pin_problems(files: Mapping[str, bytes]) -> tuple[dict[str, str], list[str]]:
    """Every pin problem of a bundle, each naming its file; see the module docstring."""
    pins, problems, named = _read_pins(files)
    is_export = EXPORT_MANIFEST_NAME in files
    if problems and not named:
        # Without a readable manifest, "not pinned" would be said of every file.
        return pins, problems + (_export_manifest_problems(files) if is_export else [])
    for name in sorted(pins):
        if name not in files:
            problems.append(f"{name}: pinned in {MANIFEST_NAME} but missing from the bundle")
        elif sha256_hex(files[name]) != pins[name]:
            problems.append(
                f"{name}: SHA-256 mismatch, {MANIFEST_NAME} pins {pins[name]}, "
                f"the file's bytes hash to {sha256_hex(files[name])}"
            )
    for name in sorted(files):
        if name == MANIFEST_NAME or name in named:
            continue
        if is_export and name in EXPORT_EXTRAS:
            continue
        problems.append(f"{name}: member file not pinned in {MANIFEST_NAME}")
    if is_export:
        problems += _export_manifest_problems(files)
    return pins, problems


def check_pins(files: Mapping[str, bytes]) -> dict[str, str]:
    """The pins `{name: sha256}` of a bundle whose every file checks out.

    Raises BundleError (all problems in `.problems`, each naming its file) for:
    ARTIFACT.yaml missing or malformed, a malformed pin, a pinned file
    missing, a member file not pinned, a SHA-256 mismatch, and in an export
    a MANIFEST.json that does not match the bytes.
    """
    pins, problems = pin_problems(files)
    if problems:
        raise BundleError("; ".join(problems), problems=problems)
    return pins


# --- reading archives -----------------------------------------------------


def _safe_path(raw: str) -> str | None:
    """The normalized relative path, None for a directory entry; refuses escapes."""
    if "\x00" in raw:
        raise BundleError(f"{raw!r}: refused, NUL in file name")
    name = raw.replace("\\", "/")
    if name.startswith("/") or _DRIVE.match(name):
        raise BundleError(f"{raw}: refused, absolute path in archive")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BundleError(f"{raw}: refused, path escapes the archive")
    if not parts or name.endswith("/"):
        return None
    return "/".join(parts)


def _is_litter(path: str) -> bool:
    parts = path.split("/")
    return parts[0] in _LITTER_DIRS or parts[-1] in _LITTER_FILES


class _Budget:
    """Counts uncompressed bytes actually produced, refusing past the limit."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def take(self, name: str, amount: int) -> None:
        self.used += amount
        if self.used > self.max_bytes:
            raise BundleError(
                f"{name}: refused, the archive uncompresses to more than {self.max_bytes} bytes"
            )


def _read_chunks(name: str, stream: BinaryIO, budget: _Budget) -> bytes:
    parts = []
    while chunk := stream.read(CHUNK_SIZE):
        budget.take(name, len(chunk))
        parts.append(chunk)
    return b"".join(parts)


def _add(files: dict[str, bytes], path: str, data: bytes) -> None:
    if path in files:
        raise BundleError(f"{path}: refused, the archive holds this file twice")
    if len(files) >= MAX_ARCHIVE_FILES:
        raise BundleError(f"{path}: refused, more than {MAX_ARCHIVE_FILES} files in the archive")
    files[path] = data


def _read_zip(data: bytes, max_bytes: int) -> dict[str, bytes]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise BundleError(f"archive: not a readable zip ({exc})") from exc
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ARCHIVE_FILES:
            raise BundleError(f"archive: refused, more than {MAX_ARCHIVE_FILES} entries")
        declared = 0
        entries = []
        for info in infos:
            path = _safe_path(info.filename)
            mode = info.external_attr >> 16
            file_type = stat.S_IFMT(mode)
            if info.create_system == 3 and file_type not in (0, stat.S_IFREG, stat.S_IFDIR):
                kind = "symlink" if stat.S_ISLNK(mode) else "special file"
                raise BundleError(f"{info.filename}: refused, a {kind} in the archive")
            if path is None or info.is_dir() or file_type == stat.S_IFDIR:
                continue
            declared += info.file_size
            if declared > max_bytes:
                raise BundleError(
                    f"{info.filename}: refused, the archive declares more than {max_bytes} bytes uncompressed"
                )
            entries.append((info, path))
        budget = _Budget(max_bytes)
        files: dict[str, bytes] = {}
        for info, path in entries:
            if _is_litter(path):
                continue
            try:
                with archive.open(info) as stream:
                    content = _read_chunks(info.filename, stream, budget)
            except BundleError:
                raise
            except (zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError, EOFError, OSError) as exc:
                raise BundleError(f"{info.filename}: unreadable in the zip ({exc})") from exc
            _add(files, path, content)
        return files


class _LimitedReader(io.RawIOBase):
    """A decompressed stream that refuses to produce more than `limit` bytes."""

    def __init__(self, stream: BinaryIO, limit: int) -> None:
        self.stream = stream
        self.limit = limit
        self.used = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:
        chunk = self.stream.read(len(buffer))
        self.used += len(chunk)
        if self.used > self.limit:
            raise BundleError(
                f"archive: refused, the tar stream uncompresses to more than {self.limit} bytes"
            )
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _read_tar(data: bytes, max_bytes: int, *, compressed: bool) -> dict[str, bytes]:
    raw: BinaryIO = gzip.GzipFile(fileobj=io.BytesIO(data)) if compressed else io.BytesIO(data)
    # Headers and padding add at most ~1.5 KiB a file on top of the contents.
    stream = io.BufferedReader(_LimitedReader(raw, 2 * max_bytes + 1536 * MAX_ARCHIVE_FILES))
    files: dict[str, bytes] = {}
    declared = 0
    budget = _Budget(max_bytes)
    count = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for member in archive:
                count += 1
                if count > MAX_ARCHIVE_FILES:
                    raise BundleError(f"archive: refused, more than {MAX_ARCHIVE_FILES} entries")
                path = _safe_path(member.name)
                if member.isdir():
                    continue
                if not member.isfile() or member.issparse():
                    kind = "symlink or link" if (member.issym() or member.islnk()) else "special file"
                    raise BundleError(f"{member.name}: refused, a {kind} in the archive")
                if path is None:
                    continue
                declared += member.size
                if declared > max_bytes:
                    raise BundleError(
                        f"{member.name}: refused, the archive declares more than {max_bytes} bytes uncompressed"
                    )
                extracted = archive.extractfile(member)
                content = _read_chunks(member.name, extracted, budget) if extracted else b""
                if _is_litter(path):
                    continue
                _add(files, path, content)
    except BundleError:
        raise
    except (tarfile.TarError, gzip.BadGzipFile, zlib.error, EOFError, OSError) as exc:
        raise BundleError(f"archive: not a readable tar{'.gz' if compressed else ''} ({exc})") from exc
    return files


def _strip_single_folder(files: dict[str, bytes]) -> dict[str, bytes]:
    tops = {path.split("/", 1)[0] for path in files}
    if len(tops) != 1 or any("/" not in path for path in files):
        return files
    return {path.split("/", 1)[1]: content for path, content in files.items()}


def read_archive(data: bytes, *, max_bytes: int) -> dict[str, bytes]:
    """`{relative path: bytes}` of a zip, tar.gz or tar, detected by magic bytes.

    Refuses (BundleError naming the entry) paths that are absolute or escape
    with `..`, symlinks, hard links and devices, files named twice, and
    archives whose contents exceed `max_bytes` uncompressed, judged both by
    the declared sizes and by counting the bytes actually produced (zip and
    gzip bombs). Directory entries and OS litter (`__MACOSX/`, `.DS_Store`)
    are skipped; one top-level folder holding everything is stripped.
    """
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        files = _read_zip(data, max_bytes)
    elif data[:2] == b"\x1f\x8b":
        files = _read_tar(data, max_bytes, compressed=True)
    elif data[257:262] == b"ustar":
        files = _read_tar(data, max_bytes, compressed=False)
    else:
        raise BundleError("archive: not a zip or tar.gz file")
    return _strip_single_folder(files)


# --- export ---------------------------------------------------------------


def _check_entry_name(name: str) -> None:
    if _safe_path(name) != name:
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
    entries[MANIFEST_NAME] = build_manifest(members, doc_type=doc_type).encode("utf-8")
    if result_md is not None:
        entries[RESULT_NAME] = result_md
    entries[AUDIT_NAME] = audit_json
    listing = {name: sha256_hex(entries[name]) for name in sorted(entries)}
    entries[EXPORT_MANIFEST_NAME] = (
        json.dumps({"files": listing}, indent=2, sort_keys=True) + "\n"
    ).encode("utf-8")
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
    for problem in pin_found:
        if problem not in problems:
            problems.append(problem)
    return problems

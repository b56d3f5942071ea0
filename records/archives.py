"""Run directories as archives and their `ARTIFACT.yaml` manifest (DESIGN §1, §6).

Pure: bytes in, plain data out; no ORM. `read_archive` turns a zip or
tar.gz into `{path: bytes}`, refusing anything unsafe; `check_pins` checks
the manifest against those bytes; `members_of` names each member's role
from its file name; `build_manifest` writes the run manifest whose SHA-256
is the run's manifest hash.

The manifest text is byte-for-byte what `reconcile.bundles.build_manifest`
writes (approval recomputes it there and compares hashes); records may not
import reconcile, so the few lines live here too and a test holds the two
together.
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
# What our own exports add beside the members (reconcile writes them); on
# re-import they are not members unless ARTIFACT.yaml pins them.
EXPORT_MANIFEST_NAME = "MANIFEST.json"
EXPORT_EXTRAS = ("result.md", "audit.json", EXPORT_MANIFEST_NAME)
MAX_ARCHIVE_FILES = 1_000
CHUNK_SIZE = 64 * 1024

ROLE_BY_FILENAME = {
    "overview.md": "overview",
    "runtime.md": "runtime",
    "memory.md": "memory",
    "workflow.md": "workflow",
    "epistemic.md": "epistemic",
    "reconciliation.md": "reconciliation",
    "boundary.md": "boundary",
    "memory-profile.md": "memory-profile",
    "synthesis.md": "synthesis",
    "result.md": "result",
}
_VERIFICATION_RE = re.compile(r"^verification[A-Za-z0-9._-]*\.md$")
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
_PLAIN_YAML_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$")
_DRIVE = re.compile(r"^[A-Za-z]:")
_LITTER_DIRS = ("__MACOSX",)
_LITTER_FILES = (".DS_Store", "Thumbs.db")


class BundleError(Exception):
    """An archive or manifest that cannot be accepted; every problem names its file."""

    def __init__(self, message: str, *, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems if problems is not None else [message]


class BundleTooLarge(BundleError):
    """The archive, or what it uncompresses to, is over the limit."""


# --- hashing and the manifest ---------------------------------------------


def sha256_stream(chunks) -> str:
    """SHA-256 (lower-case hex) over an iterable of byte chunks."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def sha256_hex(data: bytes) -> str:
    view = memoryview(data)
    return sha256_stream(view[i:i + CHUNK_SIZE] for i in range(0, len(view), CHUNK_SIZE))


def _yaml_key(name: str) -> str:
    if _PLAIN_YAML_KEY.match(name) and yaml.safe_load(name) == name:
        return name
    return json.dumps(name, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def build_manifest(pins: Mapping[str, str], *, doc_type: str = SET_TYPE) -> str:
    """`ARTIFACT.yaml` text pinning each member file name to its SHA-256 hex, names sorted."""
    lines = [f"type: {_yaml_key(doc_type)}", "members:"]
    for name in sorted(pins):
        lines.append(f"  {_yaml_key(name)}:")
        lines.append(f"    sha256: {pins[name]}")
    if not pins:
        lines[-1] = "members: {}"
    return "\n".join(lines) + "\n"


def manifest_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def member_filename(role: str) -> str:
    return f"{role}.md"


def role_for_filename(name: str) -> str | None:
    if name in ROLE_BY_FILENAME:
        return ROLE_BY_FILENAME[name]
    if _VERIFICATION_RE.match(name):
        return "verification"
    return None


# --- pins -----------------------------------------------------------------


def read_manifest(files: Mapping[str, bytes]) -> dict:
    """The parsed ARTIFACT.yaml; BundleError naming it when missing or malformed."""
    if MANIFEST_NAME not in files:
        raise BundleError(f"{MANIFEST_NAME}: missing from the bundle")
    try:
        document = yaml.safe_load(files[MANIFEST_NAME].decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BundleError(f"{MANIFEST_NAME}: malformed, not readable as UTF-8 YAML ({reason})") from None
    if not isinstance(document, dict) or not isinstance(document.get("members"), dict):
        raise BundleError(f"{MANIFEST_NAME}: malformed, expected a mapping with `type` and a `members` mapping")
    return document


def check_pins(files: Mapping[str, bytes]) -> dict[str, str]:
    """`{member file: sha256}` when every pin holds; else BundleError listing each problem by file.

    Refused: a malformed pin, a pinned file missing, a SHA-256 mismatch, a file
    that is not pinned (our own export extras excepted when MANIFEST.json is there).
    """
    manifest = read_manifest(files)
    problems: list[str] = []
    pins: dict[str, str] = {}
    for name, pin in manifest["members"].items():
        name = str(name)
        digest = pin.get("sha256") if isinstance(pin, dict) else None
        if not isinstance(digest, str) or not _SHA256_HEX.match(digest):
            problems.append(f"{name}: malformed pin in {MANIFEST_NAME}, expected `sha256:` with 64 lower-case hex digits")
            continue
        if name not in files:
            problems.append(f"{name}: pinned in {MANIFEST_NAME} but missing from the bundle")
            continue
        actual = sha256_hex(files[name])
        if actual != digest:
            problems.append(f"{name}: SHA-256 mismatch, {MANIFEST_NAME} pins {digest}, the file's bytes hash to {actual}")
            continue
        pins[name] = digest
    named = {str(name) for name in manifest["members"]}
    is_export = EXPORT_MANIFEST_NAME in files
    for name in sorted(files):
        if name == MANIFEST_NAME or name in named or (is_export and name in EXPORT_EXTRAS):
            continue
        problems.append(f"{name}: member file not pinned in {MANIFEST_NAME}")
    if problems:
        raise BundleError("; ".join(problems), problems=problems)
    return pins


def members_of(pins: Mapping[str, str]) -> dict[str, str]:
    """`{member file: role}`; BundleError naming a file whose name gives no role, or two files one role."""
    roles: dict[str, str] = {}
    problems = []
    taken: dict[str, str] = {}
    for name in sorted(pins):
        role = role_for_filename(name)
        if role is None:
            known = ", ".join([*ROLE_BY_FILENAME, "verification*.md"])
            problems.append(f"{name}: not a member file name this application knows ({known})")
        elif role in taken:
            problems.append(f"{name}: a second file for role {role} (after {taken[role]}); a run has one member per role")
        else:
            taken[role] = name
            roles[name] = role
    if problems:
        raise BundleError("; ".join(problems), problems=problems)
    return roles


# --- reading archives -----------------------------------------------------


def _safe_path(raw: str) -> str | None:
    """The normalised relative path, None for a directory entry; refuses escapes naming the entry."""
    if "\x00" in raw:
        raise BundleError(f"{raw!r}: refused, NUL in file name")
    name = raw.replace("\\", "/")
    if name.startswith("/") or _DRIVE.match(name):
        raise BundleError(f"{raw}: refused, absolute path in the archive")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BundleError(f"{raw}: refused, the path escapes the archive with `..`")
    if not parts or name.endswith("/"):
        return None
    return "/".join(parts)


def _is_litter(path: str) -> bool:
    parts = path.split("/")
    return parts[0] in _LITTER_DIRS or parts[-1] in _LITTER_FILES


class _Budget:
    """Counts the uncompressed bytes actually produced (zip and gzip bombs lie about sizes)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def read(self, name: str, stream: BinaryIO) -> bytes:
        parts = []
        while chunk := stream.read(CHUNK_SIZE):
            self.used += len(chunk)
            if self.used > self.max_bytes:
                raise BundleTooLarge(f"{name}: refused, the archive uncompresses to more than {self.max_bytes} bytes")
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
        raise BundleError(f"archive: not a readable zip ({exc})") from None
    files: dict[str, bytes] = {}
    budget = _Budget(max_bytes)
    with archive:
        for info in archive.infolist():
            path = _safe_path(info.filename)
            mode = info.external_attr >> 16
            file_type = stat.S_IFMT(mode)
            if info.create_system == 3 and file_type not in (0, stat.S_IFREG, stat.S_IFDIR):
                kind = "symlink" if stat.S_ISLNK(mode) else "special file"
                raise BundleError(f"{info.filename}: refused, a {kind} in the archive")
            if path is None or info.is_dir() or file_type == stat.S_IFDIR or _is_litter(path):
                continue
            if info.file_size > max_bytes:
                raise BundleTooLarge(f"{info.filename}: refused, it declares {info.file_size} bytes uncompressed, over {max_bytes}")
            try:
                with archive.open(info) as stream:
                    content = budget.read(info.filename, stream)
            except BundleError:
                raise
            except (zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError, EOFError, OSError) as exc:
                raise BundleError(f"{info.filename}: unreadable in the zip ({exc})") from None
            _add(files, path, content)
    return files


def _read_tar(data: bytes, max_bytes: int, *, compressed: bool) -> dict[str, bytes]:
    raw: BinaryIO = gzip.GzipFile(fileobj=io.BytesIO(data)) if compressed else io.BytesIO(data)
    files: dict[str, bytes] = {}
    budget = _Budget(max_bytes)
    try:
        with tarfile.open(fileobj=raw, mode="r|") as archive:
            for count, member in enumerate(archive, start=1):
                if count > MAX_ARCHIVE_FILES:
                    raise BundleError(f"archive: refused, more than {MAX_ARCHIVE_FILES} entries")
                path = _safe_path(member.name)
                if member.isdir():
                    continue
                if not member.isfile() or member.issparse():
                    kind = "symlink or hard link" if (member.issym() or member.islnk()) else "special file"
                    raise BundleError(f"{member.name}: refused, a {kind} in the archive")
                if path is None:
                    continue
                if member.size > max_bytes:
                    raise BundleTooLarge(f"{member.name}: refused, it declares {member.size} bytes uncompressed, over {max_bytes}")
                extracted = archive.extractfile(member)
                content = budget.read(member.name, extracted) if extracted else b""
                if not _is_litter(path):
                    _add(files, path, content)
    except BundleError:
        raise
    except (tarfile.TarError, gzip.BadGzipFile, zlib.error, EOFError, OSError) as exc:
        raise BundleError(f"archive: not a readable tar{'.gz' if compressed else ''} ({exc})") from None
    return files


def _strip_single_folder(files: dict[str, bytes]) -> dict[str, bytes]:
    tops = {path.split("/", 1)[0] for path in files}
    if len(tops) != 1 or any("/" not in path for path in files):
        return files
    return {path.split("/", 1)[1]: content for path, content in files.items()}


def read_archive(data: bytes, *, max_bytes: int) -> dict[str, bytes]:
    """`{relative path: bytes}` of a zip, tar.gz or tar, told apart by their magic bytes.

    Refuses, naming the entry: absolute paths, `..`, symlinks, hard links and
    devices, a file named twice, and contents over `max_bytes` uncompressed
    (judged by the bytes actually produced, not only the declared sizes).
    One top-level folder holding everything is stripped.
    """
    if len(data) > max_bytes:
        raise BundleTooLarge(f"archive: refused, {len(data)} bytes is over the {max_bytes}-byte limit")
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        files = _read_zip(data, max_bytes)
    elif data[:2] == b"\x1f\x8b":
        files = _read_tar(data, max_bytes, compressed=True)
    elif data[257:262] == b"ustar":
        files = _read_tar(data, max_bytes, compressed=False)
    else:
        raise BundleError("archive: not a zip or tar.gz file")
    return _strip_single_folder(files)

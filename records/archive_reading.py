"""Run directories sent as archives, read safely (DESIGN §1, §6).

Pure: bytes in, `{relative path: bytes}` out; no ORM. `read_archive` turns a
zip, tar.gz or tar into the files it holds, refusing anything unsafe (absolute
paths, `..`, links and devices, a file named twice, too many files, contents
over the limit however small the archive claims them to be). What the files
must then hold, the pins of `ARTIFACT.yaml`, is `records.manifests`' check;
both refuse with `BundleError`, each problem naming its file.
"""
from __future__ import annotations

import gzip
import io
import re
import stat
import tarfile
import zipfile
import zlib
from typing import BinaryIO

MAX_ARCHIVE_FILES = 1_000
CHUNK_SIZE = 64 * 1024

_DRIVE = re.compile(r"^[A-Za-z]:")
# Operating-system litter that archivers add; never a member.
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


def safe_path(raw: str) -> str | None:
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


class _LimitedReader(io.RawIOBase):
    """A decompressed tar stream that refuses to produce more than `limit` bytes, headers and padding
    included (what `_Budget` does not see: tarfile skips the data of entries it is not asked to read)."""

    def __init__(self, stream: BinaryIO, limit: int) -> None:
        self.stream = stream
        self.limit = limit
        self.used = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self.stream.read(len(buffer))
        self.used += len(chunk)
        if self.used > self.limit:
            raise BundleTooLarge(f"archive: refused, the tar stream uncompresses to more than {self.limit} bytes")
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _add(files: dict[str, bytes], path: str, data: bytes, max_files: int) -> None:
    if path in files:
        raise BundleError(f"{path}: refused, the archive holds this file twice")
    if len(files) >= max_files:
        raise BundleError(f"{path}: refused, more than {max_files} files in the archive")
    files[path] = data


def _read_zip(data: BinaryIO, max_bytes: int, max_files: int) -> dict[str, bytes]:
    try:
        archive = zipfile.ZipFile(data)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise BundleError(f"archive: not a readable zip ({exc})") from None
    files: dict[str, bytes] = {}
    budget = _Budget(max_bytes)
    with archive:
        for info in archive.infolist():
            path = safe_path(info.filename)
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
            _add(files, path, content, max_files)
    return files


def _read_tar(data: BinaryIO, max_bytes: int, max_files: int, *, compressed: bool) -> dict[str, bytes]:
    raw: BinaryIO = gzip.GzipFile(fileobj=data) if compressed else data
    # Headers and padding add at most ~1.5 KiB a file on top of the contents.
    stream = io.BufferedReader(_LimitedReader(raw, 2 * max_bytes + 1536 * max_files))
    files: dict[str, bytes] = {}
    budget = _Budget(max_bytes)
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for count, member in enumerate(archive, start=1):
                if count > max_files:
                    raise BundleError(f"{member.name}: refused, more than {max_files} entries in the archive")
                path = safe_path(member.name)
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
                    _add(files, path, content, max_files)
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


def read_archive(data: bytes | BinaryIO, *, max_bytes: int, max_files: int = MAX_ARCHIVE_FILES,
                 strip_root: bool = True) -> dict[str, bytes]:
    """`{relative path: bytes}` of a zip, tar.gz or tar, told apart by their magic bytes.

    `data` is the archive's bytes or a seekable binary file holding them (read
    in chunks, only as far as needed). Refuses, naming the entry: absolute
    paths, `..`, symlinks, hard links and devices, a file named twice, more
    than `max_files` files, and contents over `max_bytes` uncompressed
    (BundleTooLarge, judged by the bytes actually produced, not only the
    declared sizes: reading stops at the limit). Directory entries and OS
    litter (`__MACOSX/`, `.DS_Store`) are skipped; with `strip_root`, one
    top-level folder holding everything is stripped.
    """
    stream: BinaryIO = io.BytesIO(data) if isinstance(data, (bytes, bytearray, memoryview)) else data
    size = stream.seek(0, io.SEEK_END)
    stream.seek(0)
    if size > max_bytes:
        raise BundleTooLarge(f"archive: refused, {size} bytes is over the {max_bytes}-byte limit")
    head = stream.read(262)
    stream.seek(0)
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        files = _read_zip(stream, max_bytes, max_files)
    elif head[:2] == b"\x1f\x8b":
        files = _read_tar(stream, max_bytes, max_files, compressed=True)
    elif head[257:262] == b"ustar":
        files = _read_tar(stream, max_bytes, max_files, compressed=False)
    else:
        raise BundleError("archive: not a zip or tar.gz file")
    return _strip_single_folder(files) if strip_root else files

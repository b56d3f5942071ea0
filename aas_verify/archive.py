"""Reading an export bundle (zip or tar.gz) into `{path: bytes}`, refusing what is unsafe.

Refused, each naming the entry: absolute paths, `..`, links and devices, a
file named twice, more files than MAX_FILES, and more uncompressed bytes than
the limit (counted as they are produced, not as the archive declares them).
"""
from __future__ import annotations

import gzip
import io
import stat
import tarfile
import zipfile
import zlib

MAX_FILES = 10_000
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


class ArchiveError(Exception):
    """The bundle cannot be read at all; the message names the entry or the archive."""


def _clean(raw: str) -> str | None:
    name = raw.replace("\\", "/")
    if "\x00" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveError(f"{raw!r}: refused, an absolute or NUL-bearing path in the archive")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(f"{raw}: refused, the path escapes the archive with `..`")
    return "/".join(parts) if parts and not name.endswith("/") else None


class _Budget:
    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0

    def read(self, name: str, stream) -> bytes:
        # One read of at most what the budget has left, plus one byte to see it overrun: inflated at once
        # (no chunks to join), and never more than the limit, whatever the archive declares.
        data = stream.read(self.limit - self.used + 1)
        self.used += len(data)
        if self.used > self.limit:
            raise ArchiveError(f"{name}: refused, the bundle uncompresses to more than {self.limit} bytes")
        return data


def _put(files: dict[str, bytes], name: str, data: bytes) -> None:
    if name in files:
        raise ArchiveError(f"{name}: refused, the bundle holds this file twice")
    if len(files) >= MAX_FILES:
        raise ArchiveError(f"{name}: refused, more than {MAX_FILES} files in the bundle")
    files[name] = data


def _zip(data: bytes, budget: _Budget) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                name = _clean(info.filename)
                kind = stat.S_IFMT(info.external_attr >> 16)
                if info.create_system == 3 and kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                    raise ArchiveError(f"{info.filename}: refused, a link or special file in the bundle")
                if name is None or info.is_dir():
                    continue
                with archive.open(info) as stream:
                    _put(files, name, budget.read(info.filename, stream))
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as error:
        raise ArchiveError(f"bundle: not a readable zip ({error})") from None
    return files


def _tar(data: bytes, budget: _Budget) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    raw = gzip.GzipFile(fileobj=io.BytesIO(data)) if data[:2] == b"\x1f\x8b" else io.BytesIO(data)
    try:
        with tarfile.open(fileobj=raw, mode="r|") as archive:
            for member in archive:
                name = _clean(member.name)
                if member.isdir():
                    continue
                if not member.isfile():
                    raise ArchiveError(f"{member.name}: refused, a link or special file in the bundle")
                extracted = archive.extractfile(member)
                if name is not None:
                    _put(files, name, budget.read(member.name, extracted) if extracted else b"")
    except (tarfile.TarError, gzip.BadGzipFile, zlib.error, EOFError, OSError) as error:
        raise ArchiveError(f"bundle: not a readable tar.gz ({error})") from None
    return files


def read_bundle(data: bytes, *, max_bytes: int) -> dict[str, bytes]:
    """The bundle's files; one top-level folder holding everything is stripped (`tar czf x.tgz RUN/`)."""
    budget = _Budget(max_bytes)
    if data[:4] in ZIP_MAGIC:
        files = _zip(data, budget)
    elif data[:2] == b"\x1f\x8b" or data[257:262] == b"ustar":
        files = _tar(data, budget)
    else:
        raise ArchiveError("bundle: not a zip or tar.gz file")
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) == 1 and all("/" in name for name in files):
        files = {name.split("/", 1)[1]: content for name, content in files.items()}
    return files

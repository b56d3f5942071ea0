"""Archives built in memory for tests that feed bundles to a reader: a zip and a tar.gz of named bytes.

Plain standard library, so the verifier's tests (which run without Django) use it too."""
from __future__ import annotations

import io
import tarfile
import zipfile


def zip_of(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def tar_gz_of(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def lying_zip(size: int) -> bytes:
    """A zip whose single entry says it holds 100 bytes but inflates to `size` bytes."""
    data = bytearray(zip_of({"memory.md": b"\n" * size}))
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        data[at + offset:at + offset + 4] = (100).to_bytes(4, "little")
    return bytes(data)

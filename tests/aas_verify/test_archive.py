"""The verifier reads a bundle within a size budget counted on what it inflates (aas_verify.archive)."""
from __future__ import annotations

import io
import tarfile
import zipfile

import pytest

from aas_verify.archive import ArchiveError, read_bundle


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize("pack", [_zip, _tar_gz], ids=["zip", "tar.gz"])
def test_it_reads_a_bundle_that_fills_its_budget_exactly(pack):
    files = {"a.md": b"x" * 600, "b.md": b"y" * 400}
    assert read_bundle(pack(files), max_bytes=1000) == files


@pytest.mark.parametrize("pack", [_zip, _tar_gz], ids=["zip", "tar.gz"])
def test_it_refuses_the_file_that_overruns_the_budget_naming_it(pack):
    # 10 MB of zeros deflate to a few KB: the budget is counted on the bytes inflated, not on the archive.
    data = pack({"a.md": b"x" * 600, "bomb.md": b"\0" * 10_000_000})
    with pytest.raises(ArchiveError, match="bomb.md: refused, the bundle uncompresses to more than 1000 bytes"):
        read_bundle(data, max_bytes=1000)

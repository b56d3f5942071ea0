"""The verifier reads a bundle within a size budget counted on what it inflates (aas_verify.archive)."""
from __future__ import annotations

import pytest

from aas_verify.archive import ArchiveError, read_bundle
from tests.packing import lying_zip, tar_gz_of, zip_of


@pytest.mark.parametrize("pack", [zip_of, tar_gz_of], ids=["zip", "tar.gz"])
def test_it_reads_a_bundle_that_fills_its_budget_exactly(pack):
    files = {"a.md": b"x" * 600, "b.md": b"y" * 400}
    assert read_bundle(pack(files), max_bytes=1000) == files


@pytest.mark.parametrize("pack", [zip_of, tar_gz_of], ids=["zip", "tar.gz"])
def test_it_refuses_the_file_that_overruns_the_budget_naming_it(pack):
    # 10 MB of zeros deflate to a few KB: the budget is counted on the bytes inflated, not on the archive.
    data = pack({"a.md": b"x" * 600, "bomb.md": b"\0" * 10_000_000})
    with pytest.raises(ArchiveError, match="bomb.md: refused, the bundle uncompresses to more than 1000 bytes"):
        read_bundle(data, max_bytes=1000)


def test_it_refuses_a_zip_whose_entry_lies_about_its_size():
    with pytest.raises(ArchiveError, match="not a readable zip"):
        read_bundle(lying_zip(10_000), max_bytes=1_000_000)

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


def test_a_bundle_exported_deflated_verifies_as_its_stored_export_does(signed_bundle):
    # Exports store their files since 2026-12-03; a bundle an auditor holds from before was deflated.
    from aas_verify import load_keys, verify_bundle
    from tests.aas_verify.bundle_files import zipped

    keys = load_keys(signed_bundle.key.public_key_pem.encode(), "server.pem")
    stored, deflated = verify_bundle(zipped(signed_bundle.files), keys), verify_bundle(zip_of(signed_bundle.files), keys)
    assert stored.ok and deflated.ok, [f.line() for f in stored.failures + deflated.failures]


def test_a_stored_file_changed_in_place_is_refused(signed_bundle):
    # A stored file's bytes lie in the zip as they are: one changed without its CRC-32 is a broken bundle.
    from aas_verify import load_keys, verify_bundle
    from tests.aas_verify.bundle_files import zipped

    bundle = zipped(signed_bundle.files)
    text = signed_bundle.files["result.md"]
    at = bundle.index(text)
    forged = bundle[:at] + text.replace(b"# ", b"#!", 1) + bundle[at + len(text):]
    outcome = verify_bundle(forged, load_keys(signed_bundle.key.public_key_pem.encode(), "server.pem"))
    assert not outcome.ok
    assert any("result.md" in failure.line() for failure in outcome.failures), [f.line() for f in outcome.failures]

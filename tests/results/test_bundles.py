"""Archives and pins (records.archive_reading, records.manifests) and export bundles (results.bundles); pure, no database."""
from __future__ import annotations

import io
import json
import stat
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from results.bundles import export_entries, verify_export, write_export_zip
from records.archive_reading import BundleError, read_archive
from records.manifests import (
    build_manifest,
    check_pins,
    manifest_sha256,
    pins_of,
    sha256_hex,
    sha256_stream,
)

RUN_DIR = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "AAS-2026-10-02-dynamic-cheatsheet-01"
MAX = 10 * 1024 * 1024


@pytest.fixture
def run_files() -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(RUN_DIR.iterdir())}


@pytest.fixture
def members(run_files) -> dict[str, bytes]:
    return {name: data for name, data in run_files.items() if name != "ARTIFACT.yaml"}


def make_zip(files: dict[str, bytes], *, prefix: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(prefix + name, data)
    return buffer.getvalue()


def make_tar_gz(files: dict[str, bytes], *, prefix: str = "") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def refusal(callable_, *args, **kwargs) -> str:
    with pytest.raises(BundleError) as caught:
        callable_(*args, **kwargs)
    return str(caught.value)


# --- hashing and the manifest ---------------------------------------------


def test_it_streams_the_same_sha256_as_hashing_the_bytes_at_once():
    data = bytes(range(256)) * 1000  # larger than one chunk
    assert sha256_stream(io.BytesIO(data)) == sha256_hex(data)
    assert sha256_hex(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_it_builds_a_manifest_whose_pins_reproduce_the_corpus_artifact(run_files, members):
    text = build_manifest(pins_of(members))
    ours = yaml.safe_load(text)
    theirs = yaml.safe_load(run_files["ARTIFACT.yaml"])
    assert ours == theirs
    assert list(ours["members"]) == sorted(members)
    assert text.startswith("type: agentic-systems/types/agentic-system-analysis-set.md\nmembers:\n  epistemic.md:\n")


def test_it_builds_the_same_manifest_whatever_order_the_members_come_in(members):
    backwards = dict(reversed(list(members.items())))
    assert build_manifest(pins_of(backwards)) == build_manifest(pins_of(members))
    assert manifest_sha256(build_manifest(pins_of(members))) == sha256_hex(build_manifest(pins_of(members)).encode())


def test_it_quotes_member_names_that_yaml_would_misread():
    names = {"true": b"a", "with space: colon.md": b"b", "#hash.md": b"c", "ünïcode.md": b"d"}
    loaded = yaml.safe_load(build_manifest(pins_of(names)))
    assert set(loaded["members"]) == set(names)
    assert check_pins({**names, "ARTIFACT.yaml": build_manifest(pins_of(names)).encode()}) == {
        name: sha256_hex(data) for name, data in names.items()
    }


# --- import ---------------------------------------------------------------


def test_it_imports_a_zipped_run_folder_and_verifies_every_pin(run_files, members):
    files = read_archive(make_zip(run_files, prefix="AAS-2026-10-02-dynamic-cheatsheet-01/"), max_bytes=MAX)
    assert files == run_files  # the single top-level folder is stripped
    assert check_pins(files) == {name: sha256_hex(data) for name, data in members.items()}


def test_it_imports_a_tar_gz_run_and_verifies_every_pin(run_files, members):
    files = read_archive(make_tar_gz(run_files), max_bytes=MAX)
    assert files == run_files
    assert set(check_pins(files)) == set(members)


def test_it_names_the_file_whose_bytes_do_not_match_its_pin(run_files):
    run_files["runtime.md"] = run_files["runtime.md"] + b"\nedited\n"
    message = refusal(check_pins, read_archive(make_zip(run_files), max_bytes=MAX))
    assert "runtime.md" in message and "mismatch" in message
    assert "memory.md" not in message


def test_it_names_a_member_file_that_is_not_pinned(run_files):
    run_files["notes.md"] = b"# stray notes\n"
    message = refusal(check_pins, read_archive(make_tar_gz(run_files), max_bytes=MAX))
    assert "notes.md" in message and "not pinned" in message


def test_it_names_a_pinned_file_that_is_missing(run_files):
    del run_files["memory.md"]
    message = refusal(check_pins, run_files)
    assert "memory.md" in message and "missing" in message


def test_it_refuses_a_bundle_without_artifact_yaml(members):
    assert "ARTIFACT.yaml" in refusal(check_pins, members)


def test_it_refuses_an_artifact_yaml_that_is_not_yaml(members):
    message = refusal(check_pins, {**members, "ARTIFACT.yaml": b"members: [unclosed\n  - : :"})
    assert "ARTIFACT.yaml" in message and "malformed" in message


def test_it_names_the_file_of_a_malformed_pin(members):
    manifest = build_manifest(pins_of(members)).replace(sha256_hex(members["overview.md"]), "not-a-hash")
    with pytest.raises(BundleError) as caught:
        check_pins({**members, "ARTIFACT.yaml": manifest.encode()})
    assert caught.value.problems == [
        "overview.md: malformed pin in ARTIFACT.yaml, expected `sha256:` with 64 lower-case hex digits"
    ]


def test_it_refuses_a_path_that_climbs_out_of_the_archive(run_files):
    assert "../x" in refusal(read_archive, make_zip({**run_files, "../x": b"evil"}), max_bytes=MAX)
    assert "../x" in refusal(read_archive, make_tar_gz({"../x": b"evil"}), max_bytes=MAX)
    assert "a/../../x" in refusal(read_archive, make_zip({"a/../../x": b"evil"}), max_bytes=MAX)


def test_it_refuses_an_absolute_path():
    assert "/etc/passwd" in refusal(read_archive, make_tar_gz({"/etc/passwd": b"x"}), max_bytes=MAX)


def test_it_refuses_a_symlink_in_a_tar():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        link = tarfile.TarInfo("runtime.md")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        archive.addfile(link)
    message = refusal(read_archive, buffer.getvalue(), max_bytes=MAX)
    assert "runtime.md" in message and "symlink" in message


def test_it_refuses_a_symlink_in_a_zip():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("runtime.md")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/etc/passwd")
    message = refusal(read_archive, buffer.getvalue(), max_bytes=MAX)
    assert "runtime.md" in message and "symlink" in message


def test_it_refuses_an_archive_larger_than_the_limit_uncompressed():
    bomb = {"memory.md": b"\0" * (2 * 1024 * 1024)}  # compresses to a few KB
    zipped, tarred = make_zip(bomb), make_tar_gz(bomb)
    assert len(zipped) < 100_000
    assert "memory.md" in refusal(read_archive, zipped, max_bytes=1024 * 1024)
    assert "memory.md" in refusal(read_archive, tarred, max_bytes=1024 * 1024)


def test_it_refuses_a_zip_whose_headers_understate_the_size():
    data = bytearray(make_zip({"memory.md": b"\0" * 100_000}))
    # Rewrite the declared uncompressed size (local header and central directory) to 10 bytes.
    local = data.index(b"PK\x03\x04")
    data[local + 22 : local + 26] = (10).to_bytes(4, "little")
    central = data.index(b"PK\x01\x02")
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    message = refusal(read_archive, bytes(data), max_bytes=1000)
    assert "memory.md" in message


def test_it_refuses_bytes_that_are_not_an_archive():
    assert "not a zip or tar.gz" in refusal(read_archive, b"# just markdown\n", max_bytes=MAX)


def test_it_refuses_a_file_named_twice():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("runtime.md", "one")
        archive.writestr("./runtime.md", "two")
    assert "runtime.md" in refusal(read_archive, buffer.getvalue(), max_bytes=MAX)


def test_it_ignores_directory_entries_and_macos_litter(run_files):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("run/", "")
        for name, data in run_files.items():
            archive.writestr("run/" + name, data)
        archive.writestr("__MACOSX/run/._runtime.md", "resource fork")
        archive.writestr("run/.DS_Store", "finder")
    files = read_archive(buffer.getvalue(), max_bytes=MAX)
    assert files == run_files


# --- export ---------------------------------------------------------------


def export_of(members: dict[str, bytes]) -> bytes:
    return write_export_zip(
        export_entries(members, result_md="# Result\n".encode(), audit_json=b'[{"action": "upload"}]\n')
    )


def test_it_writes_the_same_export_bytes_for_the_same_files(members):
    entries = export_entries(members, result_md=b"# Result\n", audit_json=b"[]\n")
    assert write_export_zip(entries) == write_export_zip(dict(reversed(list(entries.items()))))
    with zipfile.ZipFile(io.BytesIO(write_export_zip(entries))) as archive:
        assert archive.namelist() == sorted(entries)
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_it_stores_each_file_as_the_exact_bytes_its_pin_names(members):
    # Not deflated: an auditor's check hashes what is there, with no inflate before it (DESIGN §11).
    entries = export_entries(members, result_md=b"# Result\n", audit_json=b"[]\n")
    bundle = write_export_zip(entries)
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        for info in archive.infolist():
            assert info.compress_type == zipfile.ZIP_STORED, info.filename
            # The data follows the local header: 30 bytes, then the name and the extra field it gives the lengths of.
            name_length, extra_length = struct.unpack_from("<HH", bundle, info.header_offset + 26)
            start = info.header_offset + 30 + name_length + extra_length
            assert bundle[start:start + info.file_size] == entries[info.filename], info.filename


def test_it_lists_every_export_file_but_itself_in_manifest_json(members):
    entries = export_entries(members, result_md=b"# Result\n", audit_json=b"[]\n")
    listing = json.loads(entries["MANIFEST.json"])["files"]
    assert set(listing) == set(entries) - {"MANIFEST.json"}
    assert listing["result.md"] == sha256_hex(b"# Result\n")
    assert yaml.safe_load(entries["ARTIFACT.yaml"])["members"].keys() == members.keys()


def test_it_finds_nothing_wrong_with_its_own_export(members):
    assert verify_export(export_of(members)) == []


def test_it_names_the_tampered_member_of_an_export(members):
    entries = export_entries(members, result_md=b"# Result\n", audit_json=b"[]\n")
    entries["memory.md"] = entries["memory.md"].replace(b"memory", b"MEMORY", 1)
    problems = verify_export(write_export_zip(entries))
    assert problems and all(problem.startswith("memory.md:") for problem in problems)


def test_it_names_a_tampered_result_in_an_export(members):
    entries = export_entries(members, result_md=b"# Result\n", audit_json=b"[]\n")
    entries["result.md"] = b"# Result, quietly edited\n"
    assert verify_export(write_export_zip(entries)) == [
        f"result.md: SHA-256 mismatch, MANIFEST.json lists {sha256_hex(b'# Result' + bytes([10]))}, "
        f"the file's bytes hash to {sha256_hex(entries['result.md'])}"
    ]


def test_it_names_a_file_added_to_an_export_after_the_fact(members):
    entries = export_entries(members, result_md=b"# Result\n", audit_json=b"[]\n")
    entries["extra.md"] = b"slipped in\n"
    problems = verify_export(write_export_zip(entries))
    assert any(p.startswith("extra.md:") and "not pinned" in p for p in problems)
    assert any(p.startswith("extra.md:") and "not listed in MANIFEST.json" in p for p in problems)


def test_it_reports_an_export_without_its_manifest_json(members):
    entries = export_entries(members, result_md=b"# Result\n", audit_json=b"[]\n")
    del entries["MANIFEST.json"]
    problems = verify_export(write_export_zip(entries))
    assert "MANIFEST.json: missing from the bundle" in problems
    # Without MANIFEST.json the extras are ordinary files, and unpinned.
    assert "result.md: member file not pinned in ARTIFACT.yaml" in problems


def test_it_reimports_its_own_export_taking_only_the_pinned_members(members):
    files = read_archive(export_of(members), max_bytes=MAX)
    assert set(files) == set(members) | {"ARTIFACT.yaml", "result.md", "audit.json", "MANIFEST.json"}
    assert check_pins(files) == {name: sha256_hex(data) for name, data in members.items()}


def test_it_refuses_to_reimport_an_export_whose_result_was_edited(members):
    files = read_archive(export_of(members), max_bytes=MAX)
    files["result.md"] = b"# forged\n"
    message = refusal(check_pins, files)
    assert "result.md" in message and "MANIFEST.json" in message


def test_it_refuses_to_export_a_member_under_a_reserved_name(members):
    assert "result.md" in refusal(export_entries, {**members, "result.md": b"x"}, audit_json=b"[]")
    assert "ARTIFACT.yaml" in refusal(export_entries, {"ARTIFACT.yaml": b"x"}, audit_json=b"[]")


def test_it_reads_archives_and_checks_pins_with_the_one_implementation_in_records():
    from records import archive_reading, manifests
    from results import bundles

    assert bundles.read_archive is archive_reading.read_archive
    assert bundles.BundleError is archive_reading.BundleError
    assert bundles.build_manifest is manifests.build_manifest
    assert issubclass(archive_reading.BundleTooLarge, bundles.BundleError)

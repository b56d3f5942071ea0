"""Importing a run directory as zip or tar.gz: every pin checked, all or nothing (DESIGN §1, §4)."""
import hashlib
import io
import tarfile
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from records import archive_reading, manifests
from records.models import MemberReport, MemberVersion, Record
from reviews.models import AuditEvent
from tests.conftest import CORPUS

CORPUS_RUNS = sorted(p.name for p in CORPUS.iterdir() if (p / "ARTIFACT.yaml").exists())


def corpus_files(name: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((CORPUS / name).iterdir()) if p.is_file() and p.name != "README.md"}


def make_zip(files: dict[str, bytes], folder: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(folder + name, data)
    return buffer.getvalue()


def make_tar_gz(files: dict[str, bytes], folder: str = "", symlink: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(folder + name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        if symlink:
            info = tarfile.TarInfo(folder + symlink)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            archive.addfile(info)
    return buffer.getvalue()


def post(client, run, data: bytes, name="run.zip"):
    return client.post(f"/api/runs/{run.run_id}/bundle/", {"file": SimpleUploadedFile(name, data)},
                       format="multipart")


def stored():
    return (MemberReport.objects.count(), MemberVersion.objects.count(), Record.objects.count())


def assert_refused(response, status, *words):
    assert response.status_code == status, response.content
    error = response.json()["error"]
    for word in words:
        assert word in error["message"], error["message"]
    return error


@pytest.mark.django_db
@pytest.mark.parametrize("name", CORPUS_RUNS)
@pytest.mark.parametrize("packer", [make_zip, make_tar_gz])
def test_it_imports_each_corpus_run_with_its_pins_verified(name, packer, agent, run_factory,
                                                           django_capture_on_commit_callbacks):
    run = run_factory()
    files = corpus_files(name)
    with django_capture_on_commit_callbacks(execute=True):
        response = post(agent, run, packer(files, folder=f"{name}/"))
    assert response.status_code == 201, response.content
    body = response.json()
    members = {m["filename"]: m for m in body["members"]}
    assert set(members) == set(files) - {"ARTIFACT.yaml"}
    for filename, member in members.items():
        assert member["sha256"] == hashlib.sha256(files[filename]).hexdigest()
        assert member["role"] == filename.removesuffix(".md")
    detail = agent.get(f"/api/runs/{run.run_id}/").json()
    assert {m["status"] for m in detail["members"]} == {"validated"}
    event = AuditEvent.objects.get(run=run, action="bundle.imported")
    assert set(event.after["manifest"]["members"]) == set(members)
    assert event.after["manifest"]["type"] == "agentic-systems/types/agentic-system-analysis-set.md"
    # Our manifest of the same members pins the same bytes, so its hash is the run's manifest hash.
    pins = {f: hashlib.sha256(files[f]).hexdigest() for f in members}
    assert manifests.manifest_sha256(manifests.build_manifest(pins)) == detail["manifest_sha256"]


@pytest.mark.django_db
def test_importing_the_same_bundle_again_changes_nothing(agent, run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    data = make_zip(corpus_files(CORPUS_RUNS[0]))
    with django_capture_on_commit_callbacks(execute=True):
        assert post(agent, run, data).status_code == 201
    before = stored()
    with django_capture_on_commit_callbacks(execute=True):
        again = post(agent, run, data)
    assert again.status_code == 200
    assert again.json()["created"] == 0
    assert stored() == before


def broken_variants():
    base = corpus_files("AAS-2026-10-02-dynamic-cheatsheet-01")
    mismatch = dict(base, **{"memory.md": base["memory.md"] + b"\nedited after pinning\n"})
    unpinned = dict(base, **{"notes.md": b"# notes\n"})
    missing = {k: v for k, v in base.items() if k != "epistemic.md"}
    malformed = dict(base, **{"ARTIFACT.yaml": base["ARTIFACT.yaml"].replace(b"sha256: 02d3", b"sha256: XYZ", 1)})
    unknown = dict(base, **{"notes.md": b"# notes\n"})
    unknown["ARTIFACT.yaml"] = base["ARTIFACT.yaml"] + (
        f"  notes.md:\n    sha256: {hashlib.sha256(b'# notes' + bytes([10])).hexdigest()}\n".encode())
    binary = dict(base, **{"runtime.md": b"\x89PNG\r\n\x1a\n\x00\x00"})
    binary["ARTIFACT.yaml"] = base["ARTIFACT.yaml"].replace(
        hashlib.sha256(base["runtime.md"]).hexdigest().encode(), hashlib.sha256(binary["runtime.md"]).hexdigest().encode())
    no_manifest = {k: v for k, v in base.items() if k != "ARTIFACT.yaml"}
    return [
        pytest.param(make_zip(mismatch), 400, ["memory.md", "mismatch"], id="pin-mismatch"),
        pytest.param(make_zip(unpinned), 400, ["notes.md", "not pinned"], id="unpinned-member"),
        pytest.param(make_zip(missing), 400, ["epistemic.md", "missing"], id="pinned-file-missing"),
        pytest.param(make_zip(malformed), 400, ["overview.md", "malformed pin"], id="malformed-pin"),
        pytest.param(make_zip(unknown), 400, ["notes.md", "not a member file name"], id="unknown-member-name"),
        pytest.param(make_zip(binary), 415, ["runtime.md", "NUL"], id="binary-member"),
        pytest.param(make_zip(no_manifest), 400, ["ARTIFACT.yaml", "missing"], id="no-manifest"),
        pytest.param(make_zip(dict(base, **{"../evil.md": b"evil"})), 400, ["../evil.md", "escapes"], id="dot-dot"),
        pytest.param(make_zip(dict(base, **{"/etc/evil.md": b"evil"})), 400, ["/etc/evil.md", "absolute"],
                     id="absolute-path"),
        pytest.param(make_tar_gz(base, symlink="link.md"), 400, ["link.md", "symlink"], id="symlink"),
        pytest.param(b"this is not an archive at all", 400, ["not a zip or tar.gz"], id="not-an-archive"),
        pytest.param(b"\x1f\x8b\x08\x00garbage", 400, ["not a readable tar.gz"], id="corrupt-gzip"),
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("data, status, words", broken_variants())
def test_a_broken_bundle_is_refused_naming_the_file_and_nothing_is_stored(data, status, words, agent, run_factory):
    run = run_factory()
    before = (stored(), AuditEvent.objects.filter(run=run).count())
    assert_refused(post(agent, run, data), status, *words)
    assert (stored(), AuditEvent.objects.filter(run=run).count()) == before


@pytest.mark.django_db
def test_an_oversize_bundle_gets_413(agent, run_factory, settings):
    settings.MAX_BUNDLE_BYTES = 50_000
    run = run_factory()
    files = corpus_files("AAS-2026-10-02-dynamic-cheatsheet-01")
    compressed = make_zip(files)
    assert len(compressed) < 50_000 < sum(map(len, files.values()))  # small when packed, large unpacked
    assert_refused(post(agent, run, compressed), 413, "more than 50000 bytes")
    assert_refused(post(agent, run, b"PK\x03\x04" + b"x" * 60_000), 413, "limit")
    assert stored() == (0, 0, 0)


@pytest.mark.django_db
def test_a_zip_bomb_is_refused_by_counting_the_bytes_it_really_produces():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for n in range(5):
            archive.writestr(f"part-{n}.md", b"a" * 400_000)  # each under the limit, together over it
    data = buffer.getvalue()
    assert len(data) < 10_000
    with pytest.raises(archive_reading.BundleTooLarge, match="part-2.md: refused, the archive uncompresses to more than"):
        archive_reading.read_archive(data, max_bytes=1_000_000)


def test_an_entry_declaring_more_than_the_limit_is_refused_before_reading():
    data = make_zip({"runtime.md": b"a" * 2_000_000})
    with pytest.raises(archive_reading.BundleTooLarge, match="runtime.md"):
        archive_reading.read_archive(data, max_bytes=1_000_000)


@pytest.mark.django_db
def test_a_partial_failure_imports_nothing(agent, run_factory, monkeypatch):
    from records import services

    run = run_factory()
    real = services.ingest_member_report
    calls = {"n": 0}

    def fail_on_third(**kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise services.EmptyReport("simulated")
        return real(**kwargs)

    monkeypatch.setattr(services.bundles, "ingest_member_report", fail_on_third)  # where the import calls it
    response = post(agent, run, make_zip(corpus_files("AAS-2026-10-02-dynamic-cheatsheet-01")))
    assert response.status_code == 400
    assert stored() == (0, 0, 0)
    assert not AuditEvent.objects.filter(run=run, action__startswith="member.").exists()


@pytest.mark.django_db
def test_only_uploaders_import_bundles(reviewer, run_factory):
    run = run_factory()
    assert post(reviewer, run, make_zip(corpus_files(CORPUS_RUNS[0]))).status_code == 403
    assert stored() == (0, 0, 0)


def test_roles_come_from_file_names():
    assert manifests.role_for_filename("memory-profile.md") == "memory-profile"
    assert manifests.role_for_filename("verification-2.md") == "verification"
    assert manifests.role_for_filename("result.md") == "result"
    assert manifests.role_for_filename("notes.md") is None
    with pytest.raises(archive_reading.BundleError, match="verification-b.md"):
        manifests.members_of({"verification-a.md": "0" * 64, "verification-b.md": "0" * 64})

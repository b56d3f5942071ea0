"""The frozen source snapshot over the API, and quotations checked against it (DESIGN §4, §6)."""
from __future__ import annotations

import gzip
import hashlib
import io
import stat
import tarfile
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from records import archive_reading
from records.services import quotations, snapshots
from records.models import QuotationCheck, SourceBlob, SourceFile, SourceSnapshot
from reviews.models import AuditEvent, Run
from tests.conftest import RUN_FIELDS
from tests.packing import zip_of as zipped

COMMIT = RUN_FIELDS["reviewed_boundary"]

SOURCE = {
    "src/store.py": b"def save(memory):\n    row = encode(memory)\n    db.insert(row)\n    return row\n\n"
                    b"def load(key):\n    row = db.get(key)\n    return row\n",
    "README.md": b"# Store\n\nMemories are saved as rows.\n",
}


def tar_gz(files: dict[str, bytes], *, prefix: str = "") -> bytes:
    """The same files give the same bytes (gzip's header time fixed at 0), as `git archive` does."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as compressed, \
            tarfile.open(fileobj=compressed, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def post_source(client, run, data: bytes, *, name="source.tar.gz", **extra):
    return client.post(f"/api/runs/{run.run_id}/source/",
                       {"file": SimpleUploadedFile(name, data, "application/gzip"), **extra}, format="multipart")


def post_member(client, run, text: str, role="memory"):
    return client.post(f"/api/runs/{run.run_id}/members/",
                       {"role": role, "file": SimpleUploadedFile(f"{role}.md", text.encode())}, format="multipart")


def memory_report(*quotes: str) -> str:
    body = "\n".join(quotes)
    return f"# Memory\n\n## Shared records\n\n#### MEM-OBJ-store-row — Row\n\nRows are saved.\n\n{body}\n"


def quote(text: str, anchor: str) -> str:
    return "\n".join(f"> {line}" for line in text.split("\n")) + f"\n> --- {anchor}\n"


def assert_error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    if code:
        assert body["error"]["code"] == code
    return body["error"]


@pytest.fixture
def run(run_factory):
    return run_factory()


@pytest.fixture
def eager(django_capture_on_commit_callbacks):
    """Queued tasks (validation, the check) run when the request's transaction commits."""
    def call(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)
    return call


# --- upload and listing -----------------------------------------------------------


@pytest.mark.django_db
def test_it_stores_a_snapshot_and_lists_its_files_with_size_and_sha256(agent, run):
    data = tar_gz(SOURCE)
    response = post_source(agent, run, data, commit=COMMIT)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["archive_sha256"] == hashlib.sha256(data).hexdigest()
    assert (body["file_count"], body["total_bytes"], body["created"]) == (2, sum(map(len, SOURCE.values())), True)
    listing = agent.get(f"/api/runs/{run.run_id}/source/").json()
    assert listing["files"] == [{"path": p, "size": len(SOURCE[p]), "sha256": hashlib.sha256(SOURCE[p]).hexdigest()}
                                for p in sorted(SOURCE)]
    # The bytes live in the database, read back through the blob table.
    stored = SourceFile.objects.select_related("blob").get(snapshot__run=run, path="src/store.py")
    assert bytes(stored.blob.content) == SOURCE["src/store.py"]


@pytest.mark.django_db
def test_the_same_archive_again_is_200_with_no_new_work(agent, run):
    data = tar_gz(SOURCE)
    assert post_source(agent, run, data).status_code == 201
    counts = (SourceSnapshot.objects.count(), SourceFile.objects.count(), SourceBlob.objects.count())
    again = post_source(agent, run, data)
    assert again.status_code == 200 and again.json()["created"] is False
    assert (SourceSnapshot.objects.count(), SourceFile.objects.count(), SourceBlob.objects.count()) == counts
    actions = list(AuditEvent.objects.filter(run=run, action__startswith="source.").values_list("action", flat=True))
    assert actions == ["source.uploaded", "source.reupload_identical"]


@pytest.mark.django_db
def test_file_contents_are_stored_once_across_snapshots_and_runs(agent, run_factory):
    first, second = run_factory(), run_factory()
    assert post_source(agent, first, tar_gz(SOURCE)).status_code == 201
    assert post_source(agent, second, zipped(SOURCE | {"NEW.md": b"new\n"}), name="s.zip").status_code == 201
    # Two archives plus three distinct files.
    assert SourceBlob.objects.count() == 5
    assert SourceFile.objects.count() == 5


@pytest.mark.django_db
def test_it_refuses_a_commit_other_than_the_reviewed_boundary(agent, run):
    error = assert_error(post_source(agent, run, tar_gz(SOURCE), commit="1" * 40), 400, "commit_mismatch")
    assert COMMIT in error["message"]
    assert not SourceSnapshot.objects.exists()


@pytest.mark.django_db
def test_it_takes_an_abbreviated_reviewed_commit(agent, run):
    assert post_source(agent, run, tar_gz(SOURCE), commit=COMMIT[:12]).status_code == 201


@pytest.mark.django_db
def test_reviewers_and_auditors_cannot_upload_a_snapshot_but_may_list_it(agent, reviewer, auditor, run):
    assert_error(post_source(reviewer, run, tar_gz(SOURCE)), 403)
    assert_error(post_source(auditor, run, tar_gz(SOURCE)), 403)
    assert_error(auditor.get(f"/api/runs/{run.run_id}/source/"), 404, "not_found")
    assert post_source(agent, run, tar_gz(SOURCE)).status_code == 201
    assert auditor.get(f"/api/runs/{run.run_id}/source/").status_code == 200


@pytest.mark.django_db
def test_it_asks_for_the_file(agent, run):
    error = assert_error(agent.post(f"/api/runs/{run.run_id}/source/", {"commit": COMMIT}, format="multipart"), 400)
    assert "file" in error["message"]


@pytest.mark.django_db
def test_it_refuses_a_snapshot_for_an_approved_run(agent, run):
    Run.objects.filter(pk=run.pk).update(status=Run.Status.APPROVED)
    assert_error(post_source(agent, run, tar_gz(SOURCE)), 409)


# --- hostile archives ----------------------------------------------------------------


def tar_with(entry: tarfile.TarInfo, data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.addfile(entry, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def entry(name: str, kind=tarfile.REGTYPE, *, size=0, link="") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, size, link
    return info


@pytest.mark.django_db
@pytest.mark.parametrize("archive, named", [
    (tar_gz({"/etc/passwd": b"x"}), "/etc/passwd"),
    (tar_gz({"src/../../escape.py": b"x"}), "src/../../escape.py"),
    (zipped({"../escape.py": b"x"}), "../escape.py"),
    (tar_with(entry("src/link.py", tarfile.SYMTYPE, link="/etc/passwd")), "src/link.py"),
    (tar_with(entry("src/hard.py", tarfile.LNKTYPE, link="src/store.py")), "src/hard.py"),
    (tar_with(entry("dev/null", tarfile.CHRTYPE)), "dev/null"),
    (tar_with(entry("fifo", tarfile.FIFOTYPE)), "fifo"),
], ids=["absolute", "dotdot-tar", "dotdot-zip", "symlink", "hardlink", "device", "fifo"])
def test_it_refuses_a_hostile_archive_whole_naming_the_entry(agent, run, archive, named):
    error = assert_error(post_source(agent, run, archive), 400, "source_refused")
    assert named in error["message"]
    assert not SourceSnapshot.objects.exists() and not SourceBlob.objects.exists()


@pytest.mark.django_db
def test_it_refuses_a_path_too_long_to_store_and_a_name_that_is_not_utf8(agent, run):
    long_name = "src/" + "a" * 1100 + ".py"
    error = assert_error(post_source(agent, run, tar_gz({long_name: b"x\n"})), 400, "source_refused")
    assert "longer than 1024" in error["message"]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT, encoding="latin-1") as archive:
        info = tarfile.TarInfo("src/caf\xe9.py")
        info.size = 2
        archive.addfile(info, io.BytesIO(b"x\n"))
    error = assert_error(post_source(agent, run, buffer.getvalue()), 400, "source_refused")
    assert "not UTF-8" in error["message"]
    assert not SourceSnapshot.objects.exists()


@pytest.mark.django_db
def test_it_refuses_what_is_not_an_archive(agent, run):
    assert "not a zip or tar.gz" in assert_error(post_source(agent, run, b"just text\n"), 400)["message"]
    assert assert_error(post_source(agent, run, tar_gz(SOURCE)[:40]), 400, "source_refused")["message"]


@pytest.mark.django_db
def test_it_refuses_a_zip_symlink(agent, run):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("src/link.py")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/etc/passwd")
    error = assert_error(post_source(agent, run, buffer.getvalue(), name="s.zip"), 400, "source_refused")
    assert "src/link.py" in error["message"]


@pytest.mark.django_db
def test_it_refuses_more_files_than_the_limit_naming_the_first_one_over(agent, run, settings):
    settings.MAX_SOURCE_FILES = 3
    files = {f"src/f{i}.py": b"x\n" for i in range(4)}
    error = assert_error(post_source(agent, run, tar_gz(files)), 400, "source_refused")
    assert "src/f3.py" in error["message"] and "more than 3" in error["message"]
    settings.MAX_SOURCE_FILES = 4
    assert post_source(agent, run, tar_gz(files)).status_code == 201


@pytest.mark.django_db
def test_it_refuses_more_uncompressed_bytes_than_the_limit(agent, run, settings):
    settings.MAX_SOURCE_BYTES = 10_000
    error = assert_error(post_source(agent, run, tar_gz({"big.txt": b"a" * 10_001})), 400, "source_refused")
    assert "big.txt" in error["message"]


@pytest.mark.django_db
def test_an_archive_file_over_the_limit_is_413_before_it_is_read(agent, run, settings):
    data = tar_gz(SOURCE)
    settings.MAX_SOURCE_BYTES = len(data) - 1
    error = assert_error(post_source(agent, run, data), 413, "too_large")
    assert error["details"] == {"size": len(data), "limit": len(data) - 1}


class CountingReader(io.BytesIO):
    """The archive as a file that counts how many of its bytes the reader asked for."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.consumed = 0

    def read(self, size=-1):
        chunk = super().read(size)
        self.consumed += len(chunk)
        return chunk

    def readinto(self, buffer):
        count = super().readinto(buffer)
        self.consumed += count
        return count


def zip_bomb(entries: int, entry_bytes: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(entries):
            archive.writestr(f"part-{i:03}.txt", b"\0" * entry_bytes, compresslevel=9)
    return buffer.getvalue()


@pytest.mark.django_db
def test_a_zip_bomb_stops_at_the_limit_without_being_unpacked(settings):
    # 200 entries of 1 MiB of zeros: 200 MiB uncompressed in a few hundred KiB; the limit is 3 MiB.
    settings.MAX_SOURCE_BYTES = 3 * 1024 * 1024
    bomb = zip_bomb(200, 1024 * 1024)
    reader = CountingReader(bomb)
    with pytest.raises(snapshots.SourceRefused) as refused:
        snapshots.read_source_archive(reader)
    assert "part-003.txt" in refused.value.message  # the fourth MiB is where the count passes the limit
    # What was read of the compressed stream: the central directory and about four entries, not all 200.
    per_entry = len(bomb) / 200
    assert reader.consumed < 30 * per_entry + 200 * 100
    assert reader.consumed < len(bomb) / 4


@pytest.mark.django_db
def test_a_tar_gz_bomb_stops_at_the_limit(settings):
    settings.MAX_SOURCE_BYTES = 1024 * 1024
    bomb = tar_gz({f"part-{i:03}.txt": b"\0" * 512 * 1024 for i in range(100)})
    reader = CountingReader(bomb)
    with pytest.raises(snapshots.SourceRefused) as refused:
        snapshots.read_source_archive(reader)
    assert "part-002.txt" in refused.value.message
    assert reader.consumed < len(bomb) / 4


def test_archive_reading_is_the_one_shared_helper():
    assert snapshots.archive_reading.read_archive is archive_reading.read_archive


# --- the check through the pipeline -------------------------------------------------


@pytest.mark.django_db
def test_a_snapshot_upload_checks_every_quotation_and_lists_them(agent, run, eager):
    text = memory_report(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`"),
                         quote("return row", f"`src/store.py` @ `{COMMIT}`"))
    assert eager(post_member, agent, run, text).status_code == 201
    before = agent.get(f"/api/runs/{run.run_id}/quotations/").json()
    assert before["snapshot_sha256"] is None
    assert [q["status"] for q in before["quotations"]] == ["unverified", "unverified"]
    codes = {f["code"] for f in agent.get(f"/api/runs/{run.run_id}/validation/").json()["findings"]}
    assert "quote-unverified" in codes

    data = tar_gz(SOURCE)
    assert eager(post_source, agent, run, data).status_code == 201
    after = agent.get(f"/api/runs/{run.run_id}/quotations/").json()
    assert after["snapshot_sha256"] == hashlib.sha256(data).hexdigest()
    verified, ambiguous = after["quotations"]
    assert verified | {"text": None} == {
        "member": "memory", "kind": "quotation", "line": 9, "path": "src/store.py", "lines": "", "commit": COMMIT,
        "status": "verified", "message": "", "text": None, "source_lines": [[3, "    db.insert(row)"]],
        "candidates": []}
    assert (ambiguous["status"], ambiguous["candidates"]) == ("ambiguous", ["4", "8"])
    assert after["totals"]["verified"] == 1 and after["totals"]["ambiguous"] == 1
    findings = agent.get(f"/api/runs/{run.run_id}/validation/").json()["findings"]
    assert [(f["code"], f["severity"]) for f in findings if f["code"].startswith("quote-")] == [
        ("quote-ambiguous", "error")]
    assert agent.get(f"/api/runs/{run.run_id}/quotations/?status=verified").json()["quotations"] == [verified]


@pytest.mark.django_db
def test_a_member_reupload_rechecks_its_quotations(agent, run, eager):
    eager(post_source, agent, run, tar_gz(SOURCE))
    eager(post_member, agent, run, memory_report(quote("db.upsert(row)", f"`src/store.py` @ `{COMMIT}`")))
    statuses = [q["status"] for q in agent.get(f"/api/runs/{run.run_id}/quotations/").json()["quotations"]]
    assert statuses == ["not-found"]
    eager(post_member, agent, run, memory_report(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`")))
    statuses = [q["status"] for q in agent.get(f"/api/runs/{run.run_id}/quotations/").json()["quotations"]]
    assert statuses == ["verified"]
    assert not [f for f in agent.get(f"/api/runs/{run.run_id}/validation/").json()["findings"]
                if f["code"].startswith("quote-")]


@pytest.mark.django_db
def test_the_check_is_idempotent_and_audited_once_per_change(agent, run, eager):
    from records import services
    from reviews.audit import Actor

    eager(post_member, agent, run, memory_report(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`")))
    eager(post_source, agent, run, tar_gz(SOURCE))
    rows = list(QuotationCheck.objects.values_list("pk", "status"))
    eager(services.validate_run, run=run, actor=Actor.command("test"))
    assert list(QuotationCheck.objects.values_list("pk", "status")) == rows
    validations = AuditEvent.objects.filter(run=run, action="run.validated").order_by("seq")
    # The member's validation and the snapshot's changed the rows; the third left them as they were.
    assert ["quotations" in after for after in validations.values_list("after", flat=True)] == [True, True, False]


@pytest.mark.django_db
def test_a_new_snapshot_rechecks_and_an_old_one_uploaded_again_becomes_current(agent, run, eager):
    eager(post_member, agent, run, memory_report(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`")))
    first = tar_gz(SOURCE)
    eager(post_source, agent, run, first)
    eager(post_source, agent, run, tar_gz({"README.md": SOURCE["README.md"]}))
    assert [q["status"] for q in agent.get(f"/api/runs/{run.run_id}/quotations/").json()["quotations"]] == [
        "path-missing"]
    assert eager(post_source, agent, run, first).status_code == 200
    body = agent.get(f"/api/runs/{run.run_id}/quotations/").json()
    assert body["snapshot_sha256"] == hashlib.sha256(first).hexdigest()
    assert [q["status"] for q in body["quotations"]] == ["verified"]


@pytest.mark.django_db
def test_quote_errors_count_among_the_errors_that_block_approval(agent, reviewer, run, eager):
    def errors() -> int:
        return agent.get(f"/api/runs/{run.run_id}/validation/").json()["counts"]["errors"]

    eager(post_source, agent, run, tar_gz(SOURCE))
    eager(post_member, agent, run, memory_report(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`")))
    clean = errors()
    eager(post_member, agent, run, memory_report(quote("db.upsert(row)", f"`src/store.py` @ `{COMMIT}`")))
    assert errors() == clean + 1
    response = reviewer.post(f"/api/runs/{run.run_id}/approve/", {"note": "checked"}, format="json")
    assert response.status_code == 409, response.content
    blockers = response.json()["error"]["details"]["blockers"]
    assert any(b["code"] == "validation_error" and "quote-not-found" in b["message"] for b in blockers), blockers


@pytest.mark.django_db
def test_the_quotation_list_refuses_unknown_filters(agent, run):
    assert_error(agent.get(f"/api/runs/{run.run_id}/quotations/?status=fine"), 400, "invalid_parameter")
    assert_error(agent.get(f"/api/runs/{run.run_id}/quotations/?member=nobody"), 400, "invalid_parameter")


@pytest.mark.django_db
def test_the_schema_documents_the_multipart_upload(agent):
    schema = agent.get("/api/schema/?format=json").json()
    body = schema["paths"]["/api/runs/{run_id}/source/"]["post"]["requestBody"]["content"]["multipart/form-data"]
    properties = body["schema"]["properties"]
    assert body["schema"]["required"] == ["file"]
    assert properties["file"]["format"] == "binary"
    assert "commit" in properties
    assert "/api/runs/{run_id}/quotations/" in schema["paths"]


@pytest.mark.django_db
def test_a_snapshot_for_a_run_without_members_queues_no_validation(agent, run, eager):
    assert eager(post_source, agent, run, tar_gz(SOURCE)).status_code == 201
    run.refresh_from_db()
    assert run.status == Run.Status.OPEN
    assert not run.validation_reports.exists()


@pytest.mark.django_db
def test_a_check_that_breaks_still_completes_validation_with_an_error(agent, run, eager, monkeypatch):
    from records.validation import quotes

    def broken(*args, **kwargs):
        raise ValueError("injected fault")

    eager(post_source, agent, run, tar_gz(SOURCE))
    monkeypatch.setattr(quotes, "check_citation", broken)
    eager(post_member, agent, run, memory_report(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`")))
    run.refresh_from_db()
    assert run.status == Run.Status.IN_REVIEW
    findings = agent.get(f"/api/runs/{run.run_id}/validation/").json()["findings"]
    [failed] = [f for f in findings if f["code"] == "quote-check-failed"]
    assert failed["severity"] == "error" and "injected fault" in failed["message"]


@pytest.mark.django_db
def test_a_snapshot_uploaded_to_a_failed_run_still_gets_its_quotations_checked(agent, run_factory,
                                                                              django_capture_on_commit_callbacks):
    """The snapshot asks for validation as uploads do (a ValidationRequest): a bare queued task found no
    request on a failed run and checked nothing, leaving every quotation unverified."""
    run = run_factory()
    with django_capture_on_commit_callbacks(execute=True):
        post_member(agent, run, memory_report(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`")))
    overlong = "# Runtime\n\n## Shared records\n\n#### RT-OBJ-" + "a" * 130 + " — X\n\ntext\n"
    with django_capture_on_commit_callbacks(execute=True):
        post_member(agent, run, overlong, role="runtime")
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    with django_capture_on_commit_callbacks(execute=True):
        assert post_source(agent, run, tar_gz(SOURCE)).status_code == 201
    assert list(QuotationCheck.objects.filter(run=run).values_list("status", flat=True)) == ["verified"]

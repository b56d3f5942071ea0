"""The quotation check in the final result and the export bundle (DESIGN §7, §4)."""
from __future__ import annotations

import hashlib
import json

import pytest
from django.db import transaction

from results import bundles
from results.services import approve_run, export_bundle, finalize_run
from results.models import Result
from records.validation import quotes
from records.services import quotations, snapshots
from records.archive_reading import read_archive
from records.models import QuotationCheck
from records.parsing import parse_report
from records.validation import MemberInput
from reviews.audit import Actor, lock_run
from tests.results.test_approval import (
    CHEATSHEET,
    CHEATSHEET_FIELDS,
    REVIEWER,
    corpus_files,
    mark_validated,
    reconcile_rows,
    store_members,
)
from tests.records.test_source_api import tar_gz

AGENT = Actor("token:agent-1")
MAX = 50 * 1024 * 1024


def tree_from_quotations(files: dict[str, bytes]) -> dict[str, bytes]:
    """A source tree that holds each ranged quotation of the members at its cited lines (later ones win)."""
    tree: dict[str, dict[int, str]] = {}
    for data in files.values():
        for quotation in parse_report(data.decode()).quotations:
            ranges = quotes.parse_ranges(quotation.lines) if quotation.lines else None
            if not ranges:
                continue
            lines = tree.setdefault(quotation.path, {})
            for offset, text in enumerate(quotation.text.split("\n")):
                lines[ranges[0][0] + offset] = text
    return {path: "\n".join(lines.get(n, "") for n in range(1, max(lines) + 1)).encode() + b"\n"
            for path, lines in tree.items()}


@pytest.fixture
def checked_run(run_factory, django_capture_on_commit_callbacks):
    """The dynamic-cheatsheet corpus with a snapshot built from its own quotations, checked, reconciled."""
    run = run_factory(**CHEATSHEET_FIELDS)
    files = corpus_files(CHEATSHEET)
    archive = tar_gz(tree_from_quotations(files))
    with django_capture_on_commit_callbacks(execute=False):
        snapshots.upload_source_snapshot(run=run, archive=archive, commit=run.reviewed_boundary, actor=AGENT)
    versions = store_members(run, files)
    inputs = [MemberInput(name=v.member.role, role=v.member.role, report=parse_report(bytes(v.content).decode()))
              for v in versions]
    with transaction.atomic():
        quotations.check_quotations(run=lock_run(run), versions=versions, inputs=inputs, found=[])
    mark_validated(run, files, warnings=1)
    reconcile_rows(run, versions)
    run.archive = archive
    return run


@pytest.mark.django_db
def test_the_result_states_how_many_quotations_were_verified_against_which_snapshot(checked_run,
                                                                                      django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=checked_run, note="Checked.", actor=REVIEWER)
    finalize_run(run=checked_run, actor=Actor.worker("finalize_run"))
    markdown = Result.objects.get(run=checked_run).markdown
    statuses = list(QuotationCheck.objects.filter(run=checked_run, kind="quotation").values_list("status", flat=True))
    verified = statuses.count("verified")
    quoted = sum(len(parse_report(data.decode()).quotations) for data in corpus_files(CHEATSHEET).values())
    assert len(statuses) == quoted and verified >= quoted // 2
    section = markdown[markdown.rindex("### Deterministic validation"):markdown.rindex("### Blockers")]
    digest = hashlib.sha256(checked_run.archive).hexdigest()
    assert f"{verified} of {len(statuses)} quotations verified against snapshot {digest}." in section
    assert "- every quotation of the re-hashed member bytes re-checked against the stored source snapshot\n" in section


@pytest.mark.django_db
def test_a_run_without_a_snapshot_says_its_quotations_are_unverified(run_factory):
    run = run_factory()
    assert quotations.verification_statement(run) == (
        "0 of 0 quotations verified: no source snapshot was uploaded (quotations unverified).")


@pytest.mark.django_db
def test_the_export_records_the_snapshot_hash_and_carries_the_archive(checked_run):
    data = export_bundle(run=checked_run)
    files = read_archive(data, max_bytes=MAX)
    description = json.loads(files["source/SNAPSHOT.json"])
    assert description["archive_sha256"] == hashlib.sha256(checked_run.archive).hexdigest()
    assert description["archive"] == "source/snapshot.tar.gz"
    assert files["source/snapshot.tar.gz"] == checked_run.archive
    assert bundles.verify_export(data) == []


@pytest.mark.django_db
def test_an_archive_over_the_limit_is_recorded_by_hash_only(checked_run, monkeypatch):
    monkeypatch.setattr(quotations, "BUNDLE_ARCHIVE_MAX_BYTES", len(checked_run.archive) - 1)
    data = export_bundle(run=checked_run)
    files = read_archive(data, max_bytes=MAX)
    assert json.loads(files["source/SNAPSHOT.json"])["archive"] is None
    assert "source/snapshot.tar.gz" not in files
    assert bundles.verify_export(data) == []


# --- verify_bundle on the source files (pure) ---------------------------------------


def source_files(data: bytes, **overrides) -> dict[str, bytes]:
    contents = read_archive(data, max_bytes=MAX, strip_root=False)
    fields = {"archive_sha256": hashlib.sha256(data).hexdigest(), "commit": "abc", "file_count": len(contents),
              "total_bytes": sum(map(len, contents.values())), "archive": data} | overrides
    return bundles.source_entries(**fields)


def test_verify_accepts_a_carried_archive_that_matches_its_record():
    assert bundles.source_problems(source_files(tar_gz({"a.py": b"x = 1\n"}))) == []


def test_verify_refuses_an_archive_whose_bytes_changed():
    files = source_files(tar_gz({"a.py": b"x = 1\n"}))
    files["source/snapshot.tar.gz"] = tar_gz({"a.py": b"x = 2\n"})
    [problem] = bundles.source_problems(files)
    assert problem.startswith("source/snapshot.tar.gz: SHA-256 mismatch")


def test_verify_refuses_a_record_whose_counts_do_not_match_the_archive():
    [problem] = bundles.source_problems(source_files(tar_gz({"a.py": b"x = 1\n"}), file_count=2))
    assert "records 2 files" in problem


def test_verify_refuses_a_missing_archive_and_an_unsafe_one():
    files = source_files(tar_gz({"a.py": b"x\n"}))
    del files["source/snapshot.tar.gz"]
    assert bundles.source_problems(files) == [
        "source/snapshot.tar.gz: named in source/SNAPSHOT.json but missing from the bundle"]
    unsafe = tar_gz({"../escape.py": b"x\n"})
    [problem] = bundles.source_problems(source_files(tar_gz({"a.py": b"x\n"}), archive=unsafe,
                                                     archive_sha256=hashlib.sha256(unsafe).hexdigest()))
    assert "../escape.py" in problem


def test_an_export_with_its_source_imports_again():
    from records.manifests import check_pins

    entries = bundles.export_entries({"memory.md": b"# Memory\n"}, audit_json=b"[]\n",
                                     source=source_files(tar_gz({"a.py": b"x\n"})))
    assert check_pins(read_archive(bundles.write_export_zip(entries), max_bytes=MAX)) == {
        "memory.md": hashlib.sha256(b"# Memory\n").hexdigest()}

"""POST /api/runs/import/ creates the run from the run directory's own identity
(DESIGN §4, issue 12 item 6): ARTIFACT.yaml and the members' front matter."""
from __future__ import annotations

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from records import run_identity
from records.models import MemberReport
from reviews.models import AuditEvent, Run
from tests.records.test_bundle_import import (
    CORPUS_RUNS,
    corpus_files,
    make_tar_gz,
    make_zip,
)


def post(client, data: bytes, name: str = "run.zip"):
    return client.post("/api/runs/import/", {"file": SimpleUploadedFile(name, data)}, format="multipart")


def front(files: dict[str, bytes], name: str = "overview.md") -> dict:
    from records.parsing import parse_report

    return parse_report(files[name].decode("utf-8")).front_matter


def repinned(files: dict[str, bytes], **changes: bytes) -> dict[str, bytes]:
    """The run directory with some members' bytes changed and ARTIFACT.yaml pinning the new bytes."""
    out = dict(files, **changes)
    manifest = files["ARTIFACT.yaml"].decode()
    for name, data in changes.items():
        manifest = manifest.replace(hashlib.sha256(files[name]).hexdigest(), hashlib.sha256(data).hexdigest())
    out["ARTIFACT.yaml"] = manifest.encode()
    return out


@pytest.mark.django_db
@pytest.mark.parametrize("name", CORPUS_RUNS)
def test_it_creates_each_corpus_run_from_its_own_identity(name, agent, django_capture_on_commit_callbacks):
    files = corpus_files(name)
    with django_capture_on_commit_callbacks(execute=True):
        response = post(agent, make_zip(files, folder=f"{name}/"))
    assert response.status_code == 201, response.content
    overview = front(files)
    run = Run.objects.get(run_id=name)
    assert (run.system, run.reviewed_boundary, str(run.run_date), run.evidence_tier, run.boundary_kind,
            run.target_class, str(run.analysis_cutoff)) == (
        overview["system"], overview["reviewed-boundary"], overview["run-date"], overview["evidence-tier"],
        overview["boundary-kind"], overview["target-class"], overview["analysis-cutoff"])
    assert run.title
    body = response.json()
    assert body["run"]["run_id"] == name
    assert {m["filename"] for m in body["members"]} == set(files) - {"ARTIFACT.yaml"}
    validation = agent.get(f"/api/runs/{name}/validation/").json()
    identity = [f for f in validation["findings"] if f["code"] in ("run-id-mismatch", "reviewed-boundary-mismatch")]
    assert identity == []
    assert validation["counts"]["errors"] == 0
    actions = list(AuditEvent.objects.filter(run=run).values_list("action", flat=True))
    assert actions[:1] == ["run.created"] and "bundle.imported" in actions


@pytest.mark.django_db
def test_it_answers_409_when_the_run_exists_and_changes_nothing(agent, django_capture_on_commit_callbacks):
    data = make_tar_gz(corpus_files(CORPUS_RUNS[0]))
    with django_capture_on_commit_callbacks(execute=True):
        assert post(agent, data, "run.tar.gz").status_code == 201
    before = (MemberReport.objects.count(), AuditEvent.objects.count())
    again = post(agent, data, "run.tar.gz")
    assert again.status_code == 409, again.content
    assert again.json()["error"]["code"] == "run_exists"
    assert CORPUS_RUNS[0] in again.json()["error"]["message"]
    assert (MemberReport.objects.count(), AuditEvent.objects.count()) == before


@pytest.mark.django_db
def test_it_refuses_members_that_disagree_on_the_run_id_naming_them(agent):
    files = corpus_files("AAS-2026-10-02-dynamic-cheatsheet-01")
    memory = files["memory.md"].replace(b"run-id: AAS-2026-10-02-dynamic-cheatsheet-01", b"run-id: AAS-2026-10-02-other-01")
    response = post(agent, make_zip(repinned(files, **{"memory.md": memory})))
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert "run-id" in error["message"] and "memory.md" in error["message"]
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_it_refuses_a_directory_that_names_no_run(agent):
    files = corpus_files("AAS-2026-10-02-dynamic-cheatsheet-01")
    changes = {n: data.replace(b"run-id: AAS-2026-10-02-dynamic-cheatsheet-01\n", b"")
               for n, data in files.items() if n.endswith(".md")}
    response = post(agent, make_zip(repinned(files, **changes)))
    assert response.status_code == 400, response.content
    assert "run-id" in response.json()["error"]["message"]
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_it_refuses_a_broken_pin_and_creates_no_run(agent):
    files = corpus_files("AAS-2026-10-02-dynamic-cheatsheet-01")
    files["memory.md"] += b"\nedited after pinning\n"
    response = post(agent, make_zip(files))
    assert response.status_code == 400
    assert "memory.md" in response.json()["error"]["message"]
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_it_requires_a_file(agent):
    response = agent.post("/api/runs/import/", {}, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {"field": "file"}


@pytest.mark.django_db
def test_only_uploaders_import_runs(reviewer):
    assert post(reviewer, make_zip(corpus_files(CORPUS_RUNS[0]))).status_code == 403
    assert not Run.objects.exists()


def test_it_reads_the_identity_from_the_manifest_before_the_members():
    files = corpus_files("AAS-2026-10-02-dynamic-cheatsheet-01")
    manifest = {"type": "agentic-systems/types/agentic-system-analysis-set.md", "system": "DC (manifest)"}
    members = {n: d for n, d in files.items() if n.endswith(".md")}
    identity = run_identity.identity_of(manifest, members)
    assert identity["system"] == "DC (manifest)"
    assert identity["run_id"] == "AAS-2026-10-02-dynamic-cheatsheet-01"
    assert identity["title"] == "Dynamic Cheatsheet agentic-system analysis"


def test_it_takes_the_run_date_from_the_run_id_when_no_member_states_it():
    member = (b"---\nrun-id: AAS-2026-09-26-mem0-02\nsystem: Mem0\nreviewed-boundary: "
              b"94c3fe9f238f3dbf29c9ce98643bd71eb13077cd\n---\n\n# Mem0 result\n")
    identity = run_identity.identity_of({}, {"result.md": member})
    assert identity["run_date"] == "2026-09-26"
    assert identity["analysis_cutoff"] is None


@pytest.mark.django_db
def test_it_refuses_a_run_id_that_is_not_a_run_id(agent):
    files = corpus_files("AAS-2026-10-02-dynamic-cheatsheet-01")
    changes = {n: data.replace(b"run-id: AAS-2026-10-02-dynamic-cheatsheet-01", b"run-id: dynamic-cheatsheet")
               for n, data in files.items() if n.endswith(".md")}
    response = post(agent, make_zip(repinned(files, **changes)))
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid_identity"
    assert "run_id" in response.json()["error"]["details"]
    assert not Run.objects.exists()

"""The links-form example set through the HTTP edge (issue 25 items 2, 4 and 6): imported from its directory
as a zip with `worker:` kept, its verification member's blockers and limits over the API, its counts apart."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from records.models import ImportedManifest
from reviews.models import Run
from tests.conftest import SHARED
from tests.records.test_bundle_import import make_zip
from tests.records.test_run_import import repinned

RUN_ID = "AAS-2026-12-01-tinycache-0123456789ab-01"
SET_DIR = SHARED / "examples" / "links-form" / RUN_ID


def example_files() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(SET_DIR.iterdir()) if p.is_file()}


def imported(client, files=None):
    archive = make_zip(files or example_files(), folder=f"{RUN_ID}/")
    return client.post("/api/runs/import/", {"file": SimpleUploadedFile("run.zip", archive)}, format="multipart")


@pytest.mark.django_db
def test_it_imports_the_example_set_from_its_directory_with_its_worker_block(agent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = imported(agent)
    assert response.status_code == 201, response.content
    run = Run.objects.get(run_id=RUN_ID)
    assert (run.system, run.reviewed_boundary) == ("tinycache", "0123456789abcdef0123456789abcdef01234567")
    assert {m["role"] for m in response.json()["members"]} == {
        "boundary", "runtime", "memory", "epistemic", "reconciliation", "report-verification"}
    assert ImportedManifest.objects.get(run=run).fields["worker"]["harness"] == "claude-code"
    validation = agent.get(f"/api/runs/{RUN_ID}/validation/").json()
    assert validation["counts"]["errors"] == 0, validation["findings"]


@pytest.mark.django_db
def test_it_shows_the_verification_blockers_and_limits_with_their_addressee(agent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert imported(agent).status_code == 201
    member = agent.get(f"/api/runs/{RUN_ID}/members/report-verification/").json()
    [blocker] = member["blockers"]
    assert (blocker["addressee"], blocker["record_id"], blocker["line"], blocker["source"]) == (
        "runtime", "RT-RTE-warm-start", 23, "verification")
    assert blocker["author"] == "report-verification v1"
    assert [limit["line"] for limit in member["limits"]] == [28]
    assert (member["counts"]["blockers"], member["counts"]["limits"]) == (1, 1)
    memory = agent.get(f"/api/runs/{RUN_ID}/members/memory/").json()
    assert (memory["counts"]["citations"], memory["counts"]["mentions"], memory["counts"]["references"]) == (15, 7, 15)
    assert "blockers" not in memory


@pytest.mark.django_db
def test_the_run_page_shows_the_worker(reviewer, agent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert imported(agent).status_code == 201
    browser = Client()
    browser.force_login(reviewer.user)
    page = browser.get(f"/runs/{RUN_ID}/").content.decode()
    assert "Imported manifest" in page and "<bdi>claude-code</bdi>" in page


@pytest.mark.django_db
def test_without_an_overview_or_a_named_source_it_answers_400_naming_what_is_missing(agent):
    files = example_files()
    boundary = files["boundary.md"].decode().replace("  identity: https://github.com/example/tinycache\n", "")
    memory = files["memory.md"].decode().replace('source-identity: "https://github.com/example/tinycache"\n', "")
    response = imported(agent, repinned(files, **{"boundary.md": boundary.encode(), "memory.md": memory.encode()}))
    assert response.status_code == 400
    assert "system" in response.content.decode()

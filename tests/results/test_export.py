"""Export bundles (DESIGN §1, §4); reconcile.bundles.verify_export checks their pins."""
from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import zipfile

import pytest
import yaml
from django.core.management import CommandError, call_command

from results.services import approve_run, export_bundle, finalize_run
from results.bundles import verify_export
from records.archive_reading import read_archive
from results.models import Result
from reviews.audit import Actor
from reviews.models import AuditEvent
from tests.conftest import ROOT
from tests.results.test_approval import CHEATSHEET, REVIEWER, corpus_files, ready_run  # noqa: F401


@pytest.fixture
def final_run(ready_run, django_capture_on_commit_callbacks):  # noqa: F811
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=ready_run, note="Checked.", actor=REVIEWER)
    finalize_run(run=ready_run, actor=Actor.worker("finalize_run"))
    return ready_run


def rezip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_the_export_holds_pins_members_result_audit_signature_and_manifest(final_run):
    files = read_archive(export_bundle(run=final_run), max_bytes=50 * 1024 * 1024)
    members = corpus_files(CHEATSHEET)
    assert set(files) == set(members) | {"ARTIFACT.yaml", "result.md", "result.json", "audit.json",
                                         "attestation.dsse.json", "public-key.pem", "MANIFEST.json"}
    for name, data in members.items():
        assert files[name] == data
    pins = yaml.safe_load(files["ARTIFACT.yaml"])["members"]
    assert {name: pin["sha256"] for name, pin in pins.items()} == {
        name: hashlib.sha256(data).hexdigest() for name, data in members.items()
    }
    assert hashlib.sha256(files["ARTIFACT.yaml"]).hexdigest() == final_run.manifest_sha256
    assert files["result.md"] == Result.objects.get(run=final_run).markdown.encode("utf-8")
    audit = json.loads(files["audit.json"])
    assert [e["seq"] for e in audit["events"]] == list(range(1, len(audit["events"]) + 1))
    assert audit["events"][-1]["action"] == "run.finalized"
    assert audit["events"][-1]["hash"] == AuditEvent.objects.filter(run=final_run).order_by("-seq").first().hash
    assert verify_export(export_bundle(run=final_run)) == []


def test_a_run_without_a_result_exports_without_result_md(ready_run):  # noqa: F811
    files = read_archive(export_bundle(run=ready_run), max_bytes=50 * 1024 * 1024)
    assert "result.md" not in files
    assert verify_export(export_bundle(run=ready_run)) == []


def test_the_api_serves_the_export_as_an_attachment(final_run, reviewer):
    response = reviewer.get(f"/api/runs/{final_run.run_id}/bundle/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="{final_run.run_id}.zip"'
    assert verify_export(response.content) == []


def test_the_export_is_refused_to_an_agent(final_run, agent):
    response = agent.get(f"/api/runs/{final_run.run_id}/bundle/")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"


def test_the_same_path_still_imports_with_post(final_run, agent):
    response = agent.post(f"/api/runs/{final_run.run_id}/bundle/", {}, format="multipart")
    assert response.status_code == 400
    assert "file" in response.json()["error"]["message"]


# `manage.py verify_bundle` is aas_verify now: tests/aas_verify/test_verify_bundle_command.py.


@pytest.mark.django_db
def test_a_run_that_imported_a_finished_result_exports_it_beside_its_own_result(run_factory,
                                                                               django_capture_on_commit_callbacks):
    """Seed 000 is a result uploaded as the run's input: it must not collide with the run's own result.md."""
    from records.services import import_bundle, ingest_member_report
    from reconcile.models import Mapping
    from reconcile.services import decide_mapping
    from tests.conftest import seed_bytes

    seed = seed_bytes("000")
    run = run_factory(run_id="AAS-2026-09-25-supermemory-02")
    with django_capture_on_commit_callbacks(execute=True):
        ingest_member_report(run=run, role="result", filename="000.txt", content=seed, actor=REVIEWER)
    for mapping in Mapping.objects.filter(run=run):
        decide_mapping(mapping=mapping, decision="accept", rationale="as stated", actor=REVIEWER,
                       expected_version=mapping.version)
    run.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=run, note="Checked the five mappings.", actor=REVIEWER)
    finalize_run(run=run, actor=Actor.worker("finalize_run"))

    archive = export_bundle(run=run)
    files = read_archive(archive, max_bytes=50 * 1024 * 1024)
    assert files["imported-result.md"] == seed
    assert files["result.md"] == Result.objects.get(run=run).markdown.encode("utf-8")
    assert verify_export(archive) == []
    again = run_factory(run_id="AAS-2026-09-25-supermemory-03")
    imported = import_bundle(run=again, archive=archive, actor=REVIEWER)
    assert [(v.member.role, bytes(v.content) == seed) for v, _ in imported] == [("result", True)]

"""Finalization signs the result in the transaction of run.finalized; the export carries what aas_verify
checks; GET /api/runs/{id}/attestation/ serves the envelope (DESIGN §4, §7 "Signed", "Verified offline")."""
from __future__ import annotations

import hashlib
import io
import json

import pytest
from django.core.management import call_command

import aas_verify
from aas_verify.checks import statement_of
from records.archive_reading import read_archive
from results.models import Attestation
from results.services import export_bundle, finalize_run
from results.signing import load_signing_key, published_keys
from reviews.models import AuditEvent, Run
from tests.aas_verify.bundle_files import MAX_BYTES
from tests.results.test_approval import ready_run  # noqa: F401
from tests.results.test_finalize import WORKER, approved_run  # noqa: F401


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def final_run(approved_run):  # noqa: F811
    assert finalize_run(run=approved_run, actor=WORKER) is not None, approved_run.status_reason
    return approved_run


def test_it_signs_the_result_with_the_run_finalized_event_as_its_head(final_run):
    attestation = Attestation.objects.select_related("result").get(result__run=final_run)
    statement = statement_of(attestation.envelope.encode())
    finalized = AuditEvent.objects.get(run=final_run, action="run.finalized")
    approved = AuditEvent.objects.get(run=final_run, action="run.approved")
    predicate = statement["predicate"]
    assert predicate["audit_head"] == {"seq": finalized.seq, "hash": finalized.hash}
    assert (attestation.audit_head_seq, attestation.audit_head_hash) == (finalized.seq, finalized.hash)
    assert finalized.seq == AuditEvent.objects.filter(run=final_run).count()  # nothing after it in that transaction
    assert [a["id"] for a in predicate["approvals"]] == [approved.after["approval"]]
    assert predicate["approvals"][0]["by"] == "user:reviewer-1"
    # The chain head the reviewer signed off, as the approval and its run.approved event record it.
    approval = final_run.approvals.get()
    assert predicate["approvals"][0]["audit_head"] == approved.after["audit_head"] == {
        "seq": approval.audit_head_seq, "hash": approval.audit_head_hash}
    assert approval.audit_head_seq == approved.seq - 1
    assert predicate["run_id"] == final_run.run_id and predicate["review_passes"] == predicate["adjudications"] == []
    assert predicate["validation"]["errors"] == 0
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects["result.md"] == attestation.result.sha256
    assert subjects["result.json"] == sha(attestation.result_json.encode())
    assert finalized.after["keyid"] == attestation.keyid == load_signing_key().keyid


def test_the_envelope_verifies_against_the_published_key_and_holds_no_private_key(final_run):
    attestation = Attestation.objects.get(result__run=final_run)
    keys = aas_verify.load_keys(json.dumps({"keys": [k.as_api() for k in published_keys()]}).encode(), "GET /api/keys/")
    from aas_verify.dsse import parse_envelope, verify

    key, why = verify(parse_envelope(attestation.envelope.encode()), keys)
    assert key is not None and key.keyid == attestation.keyid, why
    assert "PRIVATE" not in attestation.envelope + attestation.public_key_pem


def test_the_approval_records_the_chain_head_it_saw(approved_run):  # noqa: F811
    approval = approved_run.approvals.get()
    approved = AuditEvent.objects.get(run=approved_run, action="run.approved")
    before = AuditEvent.objects.get(run=approved_run, seq=approved.seq - 1)
    assert (approval.audit_head_seq, approval.audit_head_hash) == (before.seq, before.hash)
    assert approved.after["audit_head"] == {"seq": before.seq, "hash": before.hash}


def test_a_real_export_passes_aas_verify_and_verify_bundle(final_run, tmp_path):
    data = export_bundle(run=final_run)
    files = read_archive(data, max_bytes=MAX_BYTES)
    assert {"attestation.dsse.json", "public-key.pem", "result.json", "audit.json", "MANIFEST.json"} <= set(files)
    assert files["result.json"] == Attestation.objects.get(result__run=final_run).result_json.encode()
    audit = json.loads(files["audit.json"])
    assert audit["head"] == {"seq": audit["events"][-1]["seq"], "hash": audit["events"][-1]["hash"]}
    report = aas_verify.verify_bundle(data, aas_verify.load_keys(load_signing_key().public_key_pem.encode(), "k"))
    assert report.ok, [f.line() for f in report.failures]
    path = tmp_path / "run.zip"
    path.write_bytes(data)
    keys = tmp_path / "keys.json"  # the keys document as GET /api/keys/ serves it: the window is checked too
    keys.write_text(json.dumps({"keys": [k.as_api() for k in published_keys()]}))
    out = io.StringIO()
    call_command("verify_bundle", str(path), "--key", str(keys), stdout=out)
    assert out.getvalue().splitlines()[-1].startswith("OK 12 files, ")
    assert "valid from " in out.getvalue()


def test_without_a_signing_key_finalization_fails_saying_so(approved_run, settings, tmp_path):  # noqa: F811
    settings.SIGNING_KEY_PATH = str(tmp_path / "absent.pem")
    assert finalize_run(run=approved_run, actor=WORKER) is None
    approved_run.refresh_from_db()
    assert approved_run.status == Run.Status.FAILED
    assert approved_run.status_reason.startswith("the result cannot be signed: ") and "absent.pem" in approved_run.status_reason
    assert not Attestation.objects.filter(result__run=approved_run).exists()


def test_the_attestation_endpoint_serves_the_envelope_once_final(approved_run, auditor):  # noqa: F811
    url = f"/api/runs/{approved_run.run_id}/attestation/"
    assert auditor.get(url).status_code == 404
    finalize_run(run=approved_run, actor=WORKER)
    response = auditor.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "application/vnd.dsse+json"
    assert response.content == Attestation.objects.get(result__run=approved_run).envelope.encode()
    assert statement_of(response.content)["predicate"]["run_id"] == approved_run.run_id


def test_a_bundle_signed_before_a_rotation_verifies_against_the_retired_key_get_api_keys_lists(
        approved_run, settings, tmp_path):  # noqa: F811
    from django.test import Client

    from aas_verify.cli import main
    from results.signing import create_key

    settings.SIGNING_KEY_PATH, settings.SIGNING_PUBLIC_KEYS_DIR = str(tmp_path / "k.pem"), str(tmp_path / "public")
    create_key()
    signer = load_signing_key().keyid
    finalize_run(run=approved_run, actor=WORKER)
    bundle = tmp_path / "run.zip"
    bundle.write_bytes(export_bundle(run=approved_run))
    call_command("signing_key", "rotate", stdout=io.StringIO())
    assert load_signing_key().keyid != signer
    listing = Client().get("/api/keys/")  # anonymous
    assert {k["keyid"]: k["retired"] is not None for k in listing.json()["keys"]}[signer] is True
    keys = tmp_path / "keys.json"
    keys.write_bytes(listing.content)
    out = io.StringIO()
    assert main([str(bundle), "--key", str(keys)], stdout=out) == 0, out.getvalue()
    assert f"signed by key {signer}" in out.getvalue()
    assert bundle.read_bytes() == export_bundle(run=approved_run)  # the export keeps the key that signed

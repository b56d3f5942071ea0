"""STAND-IN, until finalization signs (phase B of issue 24): sign a real finalized run's export in the test.

`standin_signed_export` takes the export that exists today (reconcile's
`export_bundle`: ARTIFACT.yaml, members, result.md, audit.json, MANIFEST.json)
and adds what the exporter will carry once finalization signs: result.json,
audit.json's chain head, the envelope and the public key, with MANIFEST.json
rebuilt over them. The statement is built by the real `results.attestation`
from the run's rows, with the run.finalized event as its head. When the export
carries all of this itself, this module goes and the tests read the export.
"""
from __future__ import annotations

import json

import rfc8785

from reconcile.approval import export_bundle
from reconcile.bundles import write_export_zip
from reconcile.models import Result
from records.archives import pins_of, read_archive, read_manifest
from records.snapshots import quotation_summary
from results.attestation import ApprovalEntry, AttestationInput, build_statement, envelope_bytes, sign_statement
from results.signing import SigningKey
from reviews.audit import chain_head
from reviews.models import AuditEvent

MAX_BYTES = 200 * 1024 * 1024


def manifest_json(files: dict[str, bytes]) -> bytes:
    listing = pins_of({name: data for name, data in files.items() if name != "MANIFEST.json"})
    return (json.dumps({"files": listing}, indent=2, sort_keys=True) + "\n").encode("utf-8")


def attestation_input(run, files: dict[str, bytes]) -> AttestationInput:
    result = Result.objects.select_related("approval").get(run=run)
    finalized = AuditEvent.objects.get(run=run, action="run.finalized")
    verification = result.data["verification"]
    quotations = quotation_summary(run)
    members = pins_of({name: files[name] for name in read_manifest(files)["members"]})
    approval = result.approval
    return AttestationInput(
        run_id=run.run_id, manifest_sha256=result.manifest_sha256, audit_head=(finalized.seq, finalized.hash),
        result_md_sha256=pins_of({"r": files["result.md"]})["r"],
        result_json_sha256=pins_of({"r": files["result.json"]})["r"], members=members,
        approvals=(ApprovalEntry(id=approval.pk, by=approval.approved_by, at=approval.approved_at.isoformat(),
                                 note=approval.note),),
        validation_errors=verification["errors"], validation_warnings=verification["warnings"],
        quotations_verified=quotations["verified"], quotations_total=quotations["total"],
        snapshot_sha256=quotations["snapshot_sha256"], revises=run.revises.run_id if run.revises else None,
    )


def standin_signed_export(run, key: SigningKey) -> dict[str, bytes]:
    """The files of `run`'s export with the signed extras added (see the module docstring)."""
    files = read_archive(export_bundle(run=run), max_bytes=MAX_BYTES)
    audit = json.loads(files["audit.json"])
    seq, digest = chain_head(run)
    audit["head"] = {"seq": seq, "hash": digest}
    files["audit.json"] = (json.dumps(audit, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    files["result.json"] = rfc8785.dumps(Result.objects.get(run=run).data)
    statement = build_statement(attestation_input(run, files))
    files["attestation.dsse.json"] = envelope_bytes(sign_statement(statement, key))
    files["public-key.pem"] = key.public_key_pem.encode("ascii")
    files["MANIFEST.json"] = manifest_json(files)
    return files


def zipped(files: dict[str, bytes]) -> bytes:
    return write_export_zip(files)

"""The final result signed in finalization's transaction (DESIGN §7 "Signed"): the in-toto statement
built from the rows just written, wrapped in a DSSE envelope by `results.attestation`, stored beside the
result. No event of its own: it is part of the finalization that `run.finalized` records, and its
chain head is that very event."""
from __future__ import annotations

import rfc8785

from records import manifests
from records.services.quotations import quotation_summary
from reviews.audit import chain_head
from reviews.models import Run

from ..attestation import ApprovalEntry, AttestationInput, build_statement, envelope_bytes, sign_statement
from ..models import Approval, Attestation, Result
from ..signing import SigningKey
from .review_record import review_record


def result_json_bytes(data: dict) -> bytes:
    """result.json as signed and exported: the RFC 8785 form of the result's data."""
    return rfc8785.dumps(data)


def approval_entry(approval: Approval) -> ApprovalEntry:
    """The approval as the statement records it, with the chain head it signed off (when it recorded one)."""
    recorded = approval.audit_head_seq is not None and approval.audit_head_hash is not None
    return ApprovalEntry(id=approval.pk, by=approval.approved_by, at=approval.approved_at.isoformat(),
                         note=approval.note,
                         audit_head=(approval.audit_head_seq, approval.audit_head_hash) if recorded else None)


def attest_result(*, locked: Run, result: Result, members: dict[str, bytes], key: SigningKey,
                  warnings: int) -> Attestation:
    """Sign `result` of the locked run, whose last event must be its `run.finalized` (same transaction).

    `members` maps each member file, named as ARTIFACT.yaml pins it, to the bytes finalization re-hashed.
    """
    seq, head_hash = chain_head(locked)
    result_json = result_json_bytes(result.data)
    quotations = quotation_summary(locked)
    passes, adjudications, agreement = review_record(locked)
    statement = build_statement(AttestationInput(
        run_id=locked.run_id, manifest_sha256=result.manifest_sha256, audit_head=(seq, head_hash),
        result_md_sha256=result.sha256, result_json_sha256=manifests.sha256_hex(result_json),
        members=manifests.pins_of(members), approvals=(approval_entry(result.approval),),
        validation_errors=0, validation_warnings=warnings,
        quotations_verified=quotations["verified"], quotations_total=quotations["total"],
        snapshot_sha256=quotations["snapshot_sha256"], revises=locked.revises.run_id if locked.revises_id else None,
        review_passes=tuple(passes), adjudications=tuple(adjudications), agreement=agreement,
    ))
    envelope = envelope_bytes(sign_statement(statement, key))
    return Attestation.objects.create(
        result=result, envelope=envelope.decode("utf-8"), result_json=result_json.decode("utf-8"),
        keyid=key.keyid, public_key_pem=key.public_key_pem, audit_head_seq=seq, audit_head_hash=head_hash,
    )


def attested_heads(run: Run) -> list[tuple[str, int, str]]:
    """The chain head each stored attestation of `run` signed (reviews.audit_check compares the trail with it)."""
    return [(f"the attestation of the final result (signed by key {keyid[:16]}…)", seq, digest)
            for keyid, seq, digest in Attestation.objects.filter(result__run=run)
            .values_list("keyid", "audit_head_seq", "audit_head_hash")]

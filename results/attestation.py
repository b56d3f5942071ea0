"""The signed statement of a final result (DESIGN §7 "Signed"): in-toto Statement v1 in a DSSE envelope.

Pure: plain data in, a statement or an envelope out; no ORM. The statement
is deterministic (its RFC 8785 bytes depend only on the input); only the
signature is not reproducible from outside, since it needs the private key.

The envelope is made by securesystemslib's `dsse.Envelope` with a
`CryptoSigner` over `cryptography`'s Ed25519 key: the Secure Systems Lab
maintains both DSSE and securesystemslib, so its PAE and envelope encoding are
the reference ones, and no envelope code is written here. The verifier
(`aas_verify.dsse`) spells PAE out on its own, so each side checks the other.

Predicate (type PREDICATE_TYPE, documented in aas_verify/README.md):

    {"run_id", "manifest_sha256", "audit_head": {"seq", "hash"},
     "approvals": [{"id", "by", "at", "note", "audit_head": {"seq", "hash"} or null}],
     "review_passes": [...], "adjudications": [...],
     "validation": {"errors", "warnings"},
     "quotations": {"verified", "total", "snapshot_sha256"}, "revises": RUN_ID or null}

`audit_head` is the run's `run.finalized` event: finalization signs in the
transaction that writes it. Each approval's `audit_head` is the chain head the
reviewer signed off (the trail's last event before its `run.approved`, as that
event's `after.audit_head` records it); null for an approval made before
approvals recorded one. `review_passes` and `adjudications` are always lists
(`results.services.review_record`).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import rfc8785
from securesystemslib.dsse import Envelope
from securesystemslib.signer import CryptoSigner, SSlibKey

from .signing import SigningKey

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "urn:aas-review:predicate:final-result:v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
MEDIA_TYPE = "application/vnd.dsse+json"
RESULT_MD, RESULT_JSON = "result.md", "result.json"


@dataclass(frozen=True)
class ApprovalEntry:
    id: int
    by: str
    at: str  # ISO 8601
    note: str
    audit_head: tuple[int, str] | None = None  # (seq, hash) the approval recorded; None on older approvals


@dataclass(frozen=True)
class AttestationInput:
    run_id: str
    manifest_sha256: str
    audit_head: tuple[int, str]  # (seq, hash) of the run.finalized event
    result_md_sha256: str
    result_json_sha256: str
    members: Mapping[str, str]  # member file name (as ARTIFACT.yaml pins it) -> sha256
    approvals: tuple[ApprovalEntry, ...]
    validation_errors: int = 0
    validation_warnings: int = 0
    quotations_verified: int = 0
    quotations_total: int = 0
    snapshot_sha256: str | None = None
    revises: str | None = None
    review_passes: tuple[Mapping, ...] = field(default=())
    adjudications: tuple[Mapping, ...] = field(default=())
    agreement: Mapping | None = None  # with independent reviews: the figures per item kind and overall


def build_statement(data: AttestationInput) -> dict:
    subjects = [(RESULT_MD, data.result_md_sha256), (RESULT_JSON, data.result_json_sha256),
                *sorted(data.members.items())]
    seq, digest = data.audit_head
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": sha}} for name, sha in subjects],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "run_id": data.run_id,
            "manifest_sha256": data.manifest_sha256,
            "audit_head": {"seq": seq, "hash": digest},
            "approvals": [{"id": a.id, "by": a.by, "at": a.at, "note": a.note,
                           "audit_head": {"seq": a.audit_head[0], "hash": a.audit_head[1]} if a.audit_head else None}
                          for a in data.approvals],
            "review_passes": [dict(p) for p in data.review_passes],
            "adjudications": [dict(a) for a in data.adjudications],
            "validation": {"errors": data.validation_errors, "warnings": data.validation_warnings},
            "quotations": {"verified": data.quotations_verified, "total": data.quotations_total,
                           "snapshot_sha256": data.snapshot_sha256},
            "revises": data.revises,
            **({"agreement": dict(data.agreement)} if data.agreement is not None else {}),
        },
    }


def statement_bytes(statement: dict) -> bytes:
    """The payload: the statement's RFC 8785 bytes, the same for the same input."""
    return rfc8785.dumps(statement)


def sign_statement(statement: dict, key: SigningKey) -> dict:
    """The DSSE envelope of the statement, signed by `key` (its ID in the signature's `keyid`)."""
    envelope = Envelope(payload=statement_bytes(statement), payload_type=PAYLOAD_TYPE, signatures={})
    public = SSlibKey.from_crypto(key.private_key.public_key(), keyid=key.keyid)
    envelope.sign(CryptoSigner(key.private_key, public))
    return envelope.to_dict()


def envelope_bytes(envelope: dict) -> bytes:
    """The envelope as the API serves it and the bundle carries it (`attestation.dsse.json`)."""
    return (json.dumps(envelope, indent=2, sort_keys=True) + "\n").encode("utf-8")

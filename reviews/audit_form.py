"""The form of an audit event's hash (DESIGN §8; reviews/audit.py's docstring says it in full): what the
writer (reviews.audit) and the checker (reviews.audit_check) both compute, in one place."""
from __future__ import annotations

import hashlib
import os
from typing import Any

import rfc8785

from .models import AuditEvent

GENESIS = "0" * 64


def hashed_created_at(event: AuditEvent) -> str:
    return event.created_at.isoformat(timespec="microseconds")


def chain_payload(event: AuditEvent) -> dict:
    payload = {
        "run": event.run.run_id if event.run_id else None,
        "seq": event.seq,
        "actor": event.actor,
        "action": event.action,
        "object_type": event.object_type,
        "object_id": event.object_id,
        "before": event.before,
        "after": event.after,
        "created_at": hashed_created_at(event),
        "prev_hash": event.prev_hash,
    }
    if event.salt:  # the unsalted form is that of the events written before salts
        payload["salt"] = event.salt
    return payload


def new_salt() -> str:
    """An event's salt: 128 random bits, so that its hash confirms no guess of a withheld content."""
    return os.urandom(16).hex()


def canonical_json(payload: Any) -> bytes:
    """RFC 8785 bytes of `payload`; raises rfc8785.CanonicalizationError on what JSON cannot carry."""
    return rfc8785.dumps(payload)


def event_hash(prev_hash: str, payload: dict) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical_json(payload)).hexdigest()


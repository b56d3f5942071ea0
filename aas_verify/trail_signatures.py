"""The audit events' signatures (DESIGN §8 "Signed by a key the database never holds").

Each event of `audit.json` carries `signature`: base64 of the Ed25519 signature, by the server's audit
key, of the event's `hash` (its 64 ASCII hex digits). The key that checks it is one the caller gives
(`verify_files(..., audit_keys=[...])`), never one the bundle carries. Events before the chain's first
signed one were written before signatures: unsigned history, noted, not failed; every event after it
must be signed by one of the given keys, and each that is not is named.
"""
from __future__ import annotations

import base64
import binascii

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .keys import PublicKey
from .report import Failure
from .trail import AUDIT, Trail


def signature_verifies(keys: list[Ed25519PublicKey], digest: str, signature: str) -> bool:
    """Whether `signature` (base64) is one of `keys`' Ed25519 signatures of `digest` (its ASCII bytes)."""
    try:
        raw = base64.b64decode(signature.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return False
    for key in keys:
        try:
            key.verify(raw, digest.encode("ascii"))
            return True
        except (InvalidSignature, ValueError):
            continue
    return False


def check_signatures(trail: Trail, keys: list[PublicKey], failures: list[Failure], notes: list[str]) -> None:
    """Each event's signature against `keys`; each event unsigned after the first signed one, or wrongly
    signed, named."""
    first_signed, history = None, 0
    public = [key.key for key in keys]
    for event in trail.events:
        seq, signature, digest = event.get("seq"), event.get("signature"), event.get("hash")
        if signature:
            first_signed = first_signed or seq
            if not isinstance(signature, str) or not isinstance(digest, str) or not signature_verifies(public, digest, signature):
                failures.append(Failure(AUDIT, f"({event.get('action')}) signature does not verify against the "
                                               "audit key given (forged, or copied from another event)",
                                        seq=seq, field="signature"))
        elif first_signed is not None:
            failures.append(Failure(AUDIT, f"({event.get('action')}) unsigned event after the chain's first signed "
                                           f"event #{first_signed}: not written by the server", seq=seq,
                                    field="signature"))
        else:
            history = seq if isinstance(seq, int) else history
    if history:
        notes.append(f"{AUDIT}: events #1 to #{history} are unsigned history (written before audit signatures)")

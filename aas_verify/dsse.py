"""DSSE envelopes (https://github.com/secure-systems-lab/dsse, protocol v1) checked with Ed25519.

Spelled out here rather than taken from securesystemslib, which the server
signs with: the verifier needs only `cryptography`, and a second, independent
reading of the envelope is what makes a test of the two meaningful.

    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

with LEN the byte length in ASCII decimal; the signature is Ed25519 over
PAE(payloadType, payload) where payload is the base64-decoded `payload`.
A key's ID is the lower-case hex SHA-256 of its DER SubjectPublicKeyInfo (`keys.py`, which also
says which keys count: only those the caller supplies).
"""
from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature

from .keys import PublicKey, key_id, load_keys, load_public_key  # noqa: F401  (named here before keys.py)

PAYLOAD_TYPE = "application/vnd.in-toto+json"


class EnvelopeError(ValueError):
    """The envelope is not in the expected form; the message says which field."""


def pae(payload_type: str, payload: bytes) -> bytes:
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)


def _b64(value, field: str) -> bytes:
    if not isinstance(value, str):
        raise EnvelopeError(f"{field}: not a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        try:  # DSSE allows URL-safe base64 too
            return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        except (binascii.Error, ValueError):
            raise EnvelopeError(f"{field}: not valid base64") from None


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: tuple[tuple[str, bytes], ...]  # (keyid, signature)


def parse_envelope(data: bytes) -> Envelope:
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise EnvelopeError(f"not UTF-8 JSON ({error})") from None
    if not isinstance(document, dict):
        raise EnvelopeError("expected an object with payloadType, payload and signatures")
    payload_type = document.get("payloadType")
    if payload_type != PAYLOAD_TYPE:
        raise EnvelopeError(f"payloadType: {payload_type!r}, expected {PAYLOAD_TYPE!r}")
    payload = _b64(document.get("payload"), "payload")
    signatures = document.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        raise EnvelopeError("signatures: none")
    parsed = []
    for index, entry in enumerate(signatures):
        if not isinstance(entry, dict):
            raise EnvelopeError(f"signatures[{index}]: not an object")
        parsed.append((str(entry.get("keyid", "")), _b64(entry.get("sig"), f"signatures[{index}].sig")))
    return Envelope(payload_type, payload, tuple(parsed))


def verify(envelope: Envelope, keys: list[PublicKey]) -> tuple[PublicKey | None, str]:
    """The key that a signature of the envelope verifies against, or None and why not."""
    message = pae(envelope.payload_type, envelope.payload)
    for keyid, signature in envelope.signatures:
        # The keyid is an unauthenticated hint: try the key it names first, then every other.
        for key in sorted(keys, key=lambda k: k.keyid != keyid):
            try:
                key.key.verify(signature, message)
            except InvalidSignature:
                continue
            return key, ""
    named = ", ".join(keyid or "(none)" for keyid, _ in envelope.signatures)
    tried = ", ".join(f"{key.keyid} ({key.origin})" for key in keys)
    return None, f"no signature verifies: the envelope names key {named}; tried {tried}"

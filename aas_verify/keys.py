"""Keys the caller trusts (DESIGN §7 "Verified offline, everything"; issue 36: keys have a purpose).

A signature counts only when it verifies against a key the caller supplied:
`--key FILE` (a PEM public key, or the keys document that `GET /api/keys/`
serves) or `--key-fingerprint SHA256` pinned out of band. A key carried in the
bundle is never trusted on its own: with a pin and no `--key`, it is the
candidate compared with the pin; otherwise it is only named ("claims to be
signed by …").

The keys document:

    {"keys": [{"keyid", "algorithm": "ed25519", "public_key_pem",
               "purpose": "result" | "audit" | "log",
               "valid_from": ISO 8601 with offset,
               "valid_until": ISO 8601 with offset, or null while the key is current}, ...]}

(a `fingerprint` given must be its key's; other fields ignored). A document without `purpose`, `valid_from` or `valid_until` on
every key is refused. A key is accepted only for its purpose, and only for what is dated
in [valid_from, valid_until). A bare PEM says nothing of either: it is trusted for what
the caller passes it for, with no window.

A key's fingerprint is the lower-case hex SHA-256 of its raw 32-byte Ed25519 public key
(RFC 8032 encoding); its ID (`keyid`, SHA-256 of the DER SubjectPublicKeyInfo) names it in
an envelope and is only a hint.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

PURPOSES = ("result", "audit", "log")
RESULT, AUDIT, LOG = PURPOSES
WINDOW_FIELDS = ("purpose", "valid_from", "valid_until")
_FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")


class KeyFileError(ValueError):
    """A key, a keys document or a fingerprint is not in the expected form; the message names it."""


@dataclass(frozen=True)
class PublicKey:
    keyid: str
    key: Ed25519PublicKey
    origin: str  # where it came from, for messages: "the bundle's public-key.pem", "--key keys.json keys[0]"
    purpose: str | None = None  # None: a bare PEM, which states no purpose
    valid_from: datetime | None = None  # None: no window known (a PEM, a pinned fingerprint)
    valid_until: datetime | None = None

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.key)

    def window(self) -> str:
        if self.valid_from is None:
            return "no validity window known"
        until = f", valid until {self.valid_until.isoformat()}" if self.valid_until else ", still current"
        return f"valid from {self.valid_from.isoformat()}{until}"

    def covers(self, when: datetime) -> bool:
        """`when` lies in [valid_from, valid_until); true when no window is known."""
        return ((self.valid_from is None or self.valid_from <= when)
                and (self.valid_until is None or when < self.valid_until))


def key_id(key: Ed25519PublicKey) -> str:
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def fingerprint(key: Ed25519PublicKey) -> str:
    return hashlib.sha256(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)).hexdigest()


def pinned(text: str) -> str:
    """A fingerprint as given on the command line (any case, `sha256:` prefix and colons allowed)."""
    value = text.strip().lower().removeprefix("sha256:").replace(":", "")
    if not _FINGERPRINT.match(value):
        raise KeyFileError(f"--key-fingerprint {text!r}: not 64 hex digits (the SHA-256 of the raw 32-byte "
                           "Ed25519 public key)")
    return value


def parse_time(value, where: str) -> datetime:
    if not isinstance(value, str):
        raise KeyFileError(f"{where}: not an ISO 8601 time")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise KeyFileError(f"{where}: {value!r} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        raise KeyFileError(f"{where}: {value!r} has no UTC offset")
    return parsed


def load_public_key(pem: bytes, origin: str, **window) -> PublicKey:
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as error:
        raise KeyFileError(f"{origin}: not a PEM public key ({error})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{origin}: not an Ed25519 public key ({type(key).__name__})")
    return PublicKey(key_id(key), key, origin, **window)


def _listed_key(entry, where: str) -> PublicKey:
    if not isinstance(entry, dict) or not isinstance(entry.get("public_key_pem"), str):
        raise KeyFileError(f"{where} has no public_key_pem")
    for name in WINDOW_FIELDS:
        if name not in entry:
            raise KeyFileError(f"{where} has no {name}: a keys document must give each key's purpose, valid_from "
                               "and valid_until (null while current); ask the server's operator for a current one")
    if entry["purpose"] not in PURPOSES:
        raise KeyFileError(f"{where}: purpose {entry['purpose']!r} is not one of {', '.join(PURPOSES)}")
    valid_from = parse_time(entry["valid_from"], f"{where}.valid_from")
    valid_until = None if entry["valid_until"] is None else parse_time(entry["valid_until"], f"{where}.valid_until")
    if valid_until is not None and valid_until < valid_from:
        raise KeyFileError(f"{where}: valid_until precedes valid_from")
    key = load_public_key(entry["public_key_pem"].encode("ascii", "replace"), where, purpose=entry["purpose"],
                          valid_from=valid_from, valid_until=valid_until)
    if "fingerprint" in entry and entry["fingerprint"] != key.fingerprint:
        raise KeyFileError(f"{where}: fingerprint {entry['fingerprint']!r} is not its public key's ({key.fingerprint})")
    return key


def load_keys(data: bytes, origin: str) -> list[PublicKey]:
    """A PEM public key, or the keys document of `GET /api/keys/` (every listed key, retired ones included)."""
    if data.lstrip().startswith(b"{"):
        try:
            listed = json.loads(data)["keys"]
        except (ValueError, KeyError, TypeError):
            raise KeyFileError(f"{origin}: JSON, but not the {{keys: [...]}} of GET /api/keys/") from None
        if not isinstance(listed, list) or not listed:
            raise KeyFileError(f"{origin}: lists no key")
        return [_listed_key(entry, f"{origin} keys[{index}]") for index, entry in enumerate(listed)]
    return [load_public_key(data, origin)]


@dataclass(frozen=True)
class Trust:
    """What the caller trusts: keys given with --key, fingerprints pinned with --key-fingerprint."""

    keys: tuple[PublicKey, ...] = ()
    fingerprints: frozenset[str] = field(default_factory=frozenset)

    @property
    def given(self) -> bool:
        return bool(self.keys or self.fingerprints)

    def candidates(self, carried: PublicKey | None) -> list[PublicKey]:
        """The keys a signature may verify against: the given keys (only the pinned ones when pins are given);
        with pins alone, the bundle's own key when its fingerprint is pinned."""
        offered = list(self.keys) if self.keys else [carried] if carried is not None else []
        return [key for key in offered if not self.fingerprints or key.fingerprint in self.fingerprints]

    def describe(self, candidates: list[PublicKey]) -> str:
        """The trusted keys, for a message."""
        pins = ", ".join(sorted(self.fingerprints))
        if candidates:
            return ", ".join(f"{key.fingerprint} ({key.origin})" for key in candidates)
        if self.keys:
            return f"no key of --key matches the pinned fingerprint {pins}"
        return f"the pinned fingerprint {pins}"

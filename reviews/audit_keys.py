"""The audit key (DESIGN §8 "Signed by a key the database never holds"): Ed25519, in a file, never in the database.

Every audit event carries `signature`: the base64 Ed25519 signature, by the audit key, of the event's
`hash` (its 64 ASCII hex digits). The app's database role can insert rows, and every input of an
event's hash is public, so only this signature tells an event the app wrote from one written into
the database behind its back.

The private key is one PEM file at `settings.AUDIT_KEY_PATH` (default: `audit-ed25519.pem` beside the
result-signing key; PKCS #8, mode 0600). Its public half, and every public key it replaced, are
published in `public/audit/` beside it as `<keyid>.pem` with `<keyid>.json` ({keyid, purpose: "audit",
valid_from, valid_until}), apart from the result keys: a key is accepted only for its purpose.
`manage.py signing_key ensure` makes the key when there is none (`make run`), `manage.py audit_key
rotate` replaces it (the old public key stays published, its `valid_until` set). With DEBUG=1 the first
event makes a missing key; in production a missing key is an error, and no event is written (serving and
the worker refuse to start without it: config/keys.py).

A key ID is the lower-case hex SHA-256 of the public key's DER SubjectPublicKeyInfo, as for result keys.
The key is read once per process and again only when its file changes (a rotation).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.conf import settings

PURPOSE = "audit"


class AuditKeyError(Exception):
    """No usable audit key: the message says which file and what to run."""


@dataclass(frozen=True)
class AuditKey:
    """The current private audit key; repr never shows it."""

    keyid: str
    private_key: Ed25519PrivateKey = field(repr=False)

    def sign(self, digest: str) -> str:
        return base64.b64encode(self.private_key.sign(digest.encode("ascii"))).decode("ascii")

    def private_hex(self) -> str:
        return self.private_key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                              serialization.NoEncryption()).hex()


@dataclass(frozen=True)
class PublishedAuditKey:
    keyid: str
    public_key: Ed25519PublicKey
    public_key_pem: str
    valid_from: str
    valid_until: str | None = None
    purpose: str = PURPOSE

    def as_api(self) -> dict:
        """This key's entry in the keys document (GET /api/keys/)."""
        raw = self.public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return {"keyid": self.keyid, "algorithm": "ed25519", "public_key_pem": self.public_key_pem,
                "created": self.valid_from, "retired": self.valid_until, "purpose": self.purpose,
                "valid_from": self.valid_from, "valid_until": self.valid_until,
                "fingerprint": hashlib.sha256(raw).hexdigest()}


def key_path() -> Path:
    return Path(settings.AUDIT_KEY_PATH)


def public_dir(path: Path | None = None) -> Path:
    return (path or key_path()).parent / "public" / PURPOSE


def _key_id(public: Ed25519PublicKey) -> str:
    return hashlib.sha256(public.public_bytes(serialization.Encoding.DER,
                                              serialization.PublicFormat.SubjectPublicKeyInfo)).hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# path → ((inode, mtime, size) of the file when read, the key read): one read per process and rotation.
_loaded: dict[Path, tuple[tuple[int, int, int], AuditKey]] = {}


def load_audit_key(path: Path | None = None) -> AuditKey:
    """The current audit key; AuditKeyError when it is missing, unreadable, not Ed25519 or readable by others."""
    path = path or key_path()
    try:
        status = path.stat()
    except FileNotFoundError:
        raise AuditKeyError(f"{path}: no audit key (AUDIT_KEY_PATH); create one with "
                            "`python manage.py signing_key ensure`") from None
    except OSError as error:
        raise AuditKeyError(f"{path}: cannot read the audit key ({error.strerror})") from None
    version = (status.st_ino, status.st_mtime_ns, status.st_size)
    known = _loaded.get(path)
    if known is not None and known[0] == version:
        return known[1]
    if status.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise AuditKeyError(f"{path}: the audit key is readable by others (mode {stat.S_IMODE(status.st_mode):o}); "
                            "chmod 600 it")
    try:
        private = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError, OSError):
        raise AuditKeyError(f"{path}: not an unencrypted PEM private key") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise AuditKeyError(f"{path}: not an Ed25519 key")
    key = AuditKey(_key_id(private.public_key()), private)
    _loaded[path] = (version, key)
    return key


def event_signature(digest: str) -> str:
    """The audit key's signature of an event's hash (record_event calls this for every event)."""
    try:
        key = load_audit_key()
    except AuditKeyError:
        if not settings.DEBUG or key_path().exists():
            raise
        ensure_audit_key()  # development only: production never makes a key on the fly
        key = load_audit_key()
    return key.sign(digest)


def verifies(public_keys: list[Ed25519PublicKey], digest: str, signature: str) -> bool:
    """Whether `signature` (base64) is one of `public_keys`' over `digest` (aas_verify reads it on its own)."""
    try:
        raw = base64.b64decode(signature.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return False
    for public in public_keys:
        try:
            public.verify(raw, digest.encode("ascii"))
            return True
        except (InvalidSignature, ValueError):
            continue
    return False


def published_audit_keys(directory: Path | None = None) -> list[PublishedAuditKey]:
    """Every published audit key, current and retired, oldest first."""
    directory = directory or public_dir()
    keys = []
    for meta_path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        meta = json.loads(meta_path.read_text())
        if meta.get("purpose") != PURPOSE:
            continue
        pem = (directory / f"{meta['keyid']}.pem").read_text()
        public = serialization.load_pem_public_key(pem.encode("ascii"))
        if isinstance(public, Ed25519PublicKey) and _key_id(public) == meta["keyid"]:
            keys.append(PublishedAuditKey(meta["keyid"], public, pem, meta["valid_from"], meta.get("valid_until")))
    return sorted(keys, key=lambda k: (k.valid_from, k.keyid))


def _publish(private: Ed25519PrivateKey, directory: Path, valid_from: str, valid_until: str | None = None) -> str:
    public = private.public_key()
    keyid = _key_id(public)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{keyid}.pem").write_bytes(public.public_bytes(serialization.Encoding.PEM,
                                                                 serialization.PublicFormat.SubjectPublicKeyInfo))
    meta = {"keyid": keyid, "purpose": PURPOSE, "valid_from": valid_from, "valid_until": valid_until}
    temporary = directory / f".{keyid}.json.tmp"
    temporary.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    os.replace(temporary, directory / f"{keyid}.json")
    return keyid


def _write(path: Path, private: Ed25519PrivateKey, *, replace: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    target = path.with_name(f".{path.name}.new") if replace else path
    with os.fdopen(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
        handle.write(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
        handle.flush()
        os.fsync(handle.fileno())
    if replace:
        os.replace(target, path)


def ensure_audit_key(path: Path | None = None) -> tuple[str, bool]:
    """(the current key's ID, whether it was created now): a key is made only when there is none, and the
    current one is published if it is not yet."""
    path = path or key_path()
    created = False
    if not path.exists():
        try:
            _write(path, Ed25519PrivateKey.generate(), replace=False)
            created = True
        except FileExistsError:
            pass  # another process made it first: publish and use theirs
    current = load_audit_key(path)
    if current.keyid not in {k.keyid for k in published_audit_keys(public_dir(path))}:
        _publish(current.private_key, public_dir(path), _now())
    return current.keyid, created


def rotate_audit_key(path: Path | None = None) -> tuple[str, str]:
    """Replace the audit key; the old public key stays published with its `valid_until`. (old ID, new ID)."""
    path = path or key_path()
    ensure_audit_key(path)
    old = load_audit_key(path)
    published = {k.keyid: k for k in published_audit_keys(public_dir(path))}
    new = Ed25519PrivateKey.generate()
    now = _now()
    new_id = _publish(new, public_dir(path), now)  # published before it signs anything
    _write(path, new, replace=True)
    _publish(old.private_key, public_dir(path), published[old.keyid].valid_from, now)
    return old.keyid, new_id

"""The server's Ed25519 signing keys (DESIGN §7 "Signed", §9): on disk, never in the database.

The private key is one PEM file at `settings.SIGNING_KEY_PATH` (PKCS #8,
mode 0600, written only by `manage.py signing_key create|rotate`). Its
public half, and every public key it replaced, are published in
`settings.SIGNING_PUBLIC_KEYS_DIR` (default: `public/` beside the key) as
`<keyid>.pem` with `<keyid>.json` ({keyid, created, retired, purpose,
valid_from, valid_until}); `GET /api/keys/` lists them. A key signs only for
its `purpose` (`result` here; `audit` and `log` keys may be published beside
it) and only what is dated in [valid_from, valid_until): rotation closes the
old key's window just after the new key opens its own. Keys published before
these fields are read as purpose `result`, valid from `created` until
`retired`; `manage.py signing_key ensure` writes that down. A rotated-out private key is overwritten, never kept:
its public key stays published so that results signed before the rotation
still verify. No private key is written to the database, a bundle or a log.

A key ID is the lower-case hex SHA-256 of the public key's DER
SubjectPublicKeyInfo, its fingerprint the hex SHA-256 of the raw 32-byte public
key (what an operator publishes out of band; aas_verify computes both the same
way, independently).
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.conf import settings

ALGORITHM = "ed25519"
PURPOSES = ("result", "audit", "log")
WINDOW_FIELDS = ("purpose", "valid_from", "valid_until")


class SigningKeyError(Exception):
    """No usable signing key: the message says which file and what to run."""


@dataclass(frozen=True)
class PublishedKey:
    keyid: str
    public_key_pem: str
    created: str
    retired: str | None = None
    purpose: str = "result"
    valid_from: str | None = None  # None: read as `created` (a key published before the window fields)
    valid_until: str | None = None  # None while the key is current

    @property
    def fingerprint(self) -> str:
        key = serialization.load_pem_public_key(self.public_key_pem.encode("ascii"))
        return fingerprint(key)

    def as_api(self) -> dict:
        return {"keyid": self.keyid, "algorithm": ALGORITHM, "public_key_pem": self.public_key_pem,
                "created": self.created, "retired": self.retired, "purpose": self.purpose,
                "valid_from": self.valid_from or self.created, "valid_until": self.valid_until,
                "fingerprint": self.fingerprint}


@dataclass(frozen=True)
class SigningKey:
    """The current private key with its ID and public PEM; repr never shows the key."""

    keyid: str
    private_key: Ed25519PrivateKey
    public_key_pem: str

    def __repr__(self) -> str:
        return f"SigningKey(keyid={self.keyid!r})"


def key_id(public_key: Ed25519PublicKey) -> str:
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def fingerprint(public_key: Ed25519PublicKey) -> str:
    """The hex SHA-256 of the raw 32-byte public key: what `--key-fingerprint` pins."""
    return hashlib.sha256(public_key.public_bytes(serialization.Encoding.Raw,
                                                  serialization.PublicFormat.Raw)).hexdigest()


def public_pem(public_key: Ed25519PublicKey) -> str:
    return public_key.public_bytes(serialization.Encoding.PEM,
                                   serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")


def key_path() -> Path:
    return Path(settings.SIGNING_KEY_PATH)


def public_dir() -> Path:
    configured = getattr(settings, "SIGNING_PUBLIC_KEYS_DIR", "")
    return Path(configured) if configured else key_path().parent / "public"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _instant(moment: datetime | None = None) -> str:
    """A window's bound, to the microsecond (as audit events are dated)."""
    return (moment or datetime.now(timezone.utc)).isoformat(timespec="microseconds")


def load_signing_key(path: Path | None = None) -> SigningKey:
    """The current key; SigningKeyError when it is missing, unreadable, not Ed25519 or readable by others."""
    path = path or key_path()
    try:
        mode = path.stat().st_mode
        data = path.read_bytes()
    except FileNotFoundError:
        raise SigningKeyError(f"{path}: no signing key (SIGNING_KEY_PATH); create one with "
                              "`python manage.py signing_key create`") from None
    except OSError as error:
        raise SigningKeyError(f"{path}: cannot read the signing key ({error.strerror})") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SigningKeyError(f"{path}: the signing key is readable by others (mode {stat.S_IMODE(mode):o}); "
                              "chmod 600 it")
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise SigningKeyError(f"{path}: not an unencrypted PEM private key") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise SigningKeyError(f"{path}: not an Ed25519 key")
    public = private.public_key()
    return SigningKey(key_id(public), private, public_pem(public))


def published_keys(directory: Path | None = None) -> list[PublishedKey]:
    """Every published public key, the current one and the retired ones, oldest first."""
    directory = directory or public_dir()
    keys = []
    for meta_path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        meta = json.loads(meta_path.read_text())
        pem = (directory / f"{meta['keyid']}.pem").read_text()
        keys.append(PublishedKey(meta["keyid"], pem, meta["created"], meta.get("retired"),
                                 purpose=meta.get("purpose", "result"),
                                 valid_from=meta.get("valid_from", meta["created"]),
                                 valid_until=meta.get("valid_until", meta.get("retired"))))
    return sorted(keys, key=lambda k: (k.created, k.keyid))


def complete_published(directory: Path | None = None) -> int:
    """Write purpose, valid_from and valid_until into every published key's file that lacks them (keys
    published before them: purpose result, valid from `created` until `retired`); how many were completed."""
    directory, completed = directory or public_dir(), 0
    for key in published_keys(directory):
        if not set(WINDOW_FIELDS) <= set(json.loads((directory / f"{key.keyid}.json").read_text())):
            _publish(key, directory)
            completed += 1
    return completed


def _publish(key: PublishedKey, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{key.keyid}.pem").write_text(key.public_key_pem)
    meta = {"keyid": key.keyid, "created": key.created, "retired": key.retired, "purpose": key.purpose,
            "valid_from": key.valid_from or key.created, "valid_until": key.valid_until}
    temporary = directory / f".{key.keyid}.json.tmp"
    temporary.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    os.replace(temporary, directory / f"{key.keyid}.json")


def _write_private(path: Path, private: Ed25519PrivateKey, *, replace: bool) -> None:
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    target = path.with_name(f".{path.name}.new") if replace else path
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(pem)
        handle.flush()
        os.fsync(handle.fileno())
    if replace:
        os.replace(target, path)


def create_key(path: Path | None = None, directory: Path | None = None, *, purpose: str = "result") -> PublishedKey:
    """A new key at `path` (refused if one is there: rotate instead), its public half published for `purpose`."""
    path, directory = path or key_path(), directory or public_dir()
    opens = _instant()
    private = Ed25519PrivateKey.generate()
    try:
        _write_private(path, private, replace=False)
    except FileExistsError:
        raise SigningKeyError(f"{path}: a signing key is already there; "
                              "`python manage.py signing_key rotate` replaces it") from None
    public = private.public_key()
    published = PublishedKey(key_id(public), public_pem(public), _now(), purpose=purpose, valid_from=opens)
    _publish(published, directory)
    return published


def ensure_key(path: Path | None = None, directory: Path | None = None, *,
               purpose: str = "result") -> tuple[PublishedKey, bool]:
    """The current key's published entry, creating the key first when there is none (`make run`); a key on disk
    but not published is published valid from its file's modification time (it signed nothing before)."""
    path, directory = path or key_path(), directory or public_dir()
    if not path.exists():
        return create_key(path, directory, purpose=purpose), True
    current = load_signing_key(path)
    known = {key.keyid: key for key in published_keys(directory)}
    if current.keyid not in known:
        written = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        known[current.keyid] = PublishedKey(current.keyid, current.public_key_pem, _now(), purpose=purpose,
                                            valid_from=_instant(written))
        _publish(known[current.keyid], directory)
    return known[current.keyid], False


def rotate_key(path: Path | None = None, directory: Path | None = None) -> tuple[PublishedKey, PublishedKey]:
    """Replace the current key with a new one; the old public key stays published, marked retired.

    The new key's window opens before it can sign; the old one's closes once it can no longer sign (after the
    new private key replaced it): the two overlap by the moments between, so no honest signature falls outside.
    """
    path, directory = path or key_path(), directory or public_dir()
    old, _created = ensure_key(path, directory)
    private = Ed25519PrivateKey.generate()
    public = private.public_key()
    new = PublishedKey(key_id(public), public_pem(public), _now(), purpose=old.purpose, valid_from=_instant())
    _publish(new, directory)  # published before it signs anything
    _write_private(path, private, replace=True)
    retired = replace(old, retired=_now(), valid_until=_instant())
    _publish(retired, directory)
    return retired, new

"""Sealed history (DESIGN §8): which unsigned events were written before signatures, signed by the audit key.

"Unsigned up to the chain's first signed event" lets the app's database role append unsigned events to
a chain that has no signed one yet (a run all of whose events predate signatures, or the runless chain).
At the upgrade that introduces signatures, `manage.py audit_key seal` writes a seal file: each chain's
head (run ID, or `GLOBAL` for the events without a run → seq and hash) and the final runs that carry no
attestation, as JSON, with a detached Ed25519 signature by the audit key beside it (`<seal>.sig`,
base64). It never signs an event: the rows stay as they were written.

With a seal, an unsigned event counts as history only at or below its chain's recorded head (a chain the
seal does not name has none), the recorded head must still be in the trail with its hash, and a final
run without an attestation must be one the seal lists. A seal whose signature no published audit key
verifies is no seal: no unsigned event is history then. Without a seal file the old rule stays, and
`verify_audit` says the history is unsealed.

The file is `settings.AUDIT_SEAL_PATH`, by default `audit-seal.json` beside the audit key.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings

from .audit_keys import key_path, load_audit_key, published_audit_keys, verifies

FORMAT = "aas-audit-seal/1"
GLOBAL = "(global)"  # the chain of events without a run


class SealError(Exception):
    """The seal cannot be written: the message says why."""


@dataclass(frozen=True)
class Seal:
    path: Path
    heads: dict[str, tuple[int, str]] = field(default_factory=dict)  # chain → (seq, hash) at sealing
    unattested_final: frozenset[str] = frozenset()  # final runs that carried no attestation at sealing
    sealed_at: str = ""
    keyid: str = ""
    problem: str = ""  # why the file is not a seal ('' when a published audit key signed it)


def seal_path() -> Path:
    configured = getattr(settings, "AUDIT_SEAL_PATH", "")
    return Path(configured) if configured else key_path().parent / "audit-seal.json"


def signature_path(path: Path) -> Path:
    return path.with_name(path.name + ".sig")


def chain_label(run) -> str:
    return run.run_id if run is not None else GLOBAL


# path → ((mtime, size) of the file and of its signature, the seal read): read again only when either changes.
_loaded: dict[Path, tuple[tuple, Seal]] = {}


def _stamp(path: Path) -> tuple:
    try:
        status = path.stat()
    except FileNotFoundError:
        return ()
    return status.st_mtime_ns, status.st_size


def load_seal() -> Seal | None:
    """The seal (None when there is no seal file); a seal whose signature does not verify has `problem` set."""
    path = seal_path()
    stamp = (_stamp(path), _stamp(signature_path(path)))
    if not stamp[0]:
        return None
    known = _loaded.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    seal = _read(path)
    _loaded[path] = (stamp, seal)
    return seal


def _read(path: Path) -> Seal:
    data = path.read_bytes()
    try:
        signature = signature_path(path).read_text().strip()
    except FileNotFoundError:
        return Seal(path, problem=f"{path}: no detached signature {signature_path(path).name} beside it")
    if not verifies([k.public_key for k in published_audit_keys()], _digest(data), signature):
        return Seal(path, problem=f"{path}: its signature does not verify against any published audit key")
    try:
        body = json.loads(data)
        if body.get("format") != FORMAT:
            raise ValueError(f"format is {body.get('format')!r}, not {FORMAT}")
        heads = {label: (int(head["seq"]), str(head["hash"])) for label, head in body["chains"].items()}
        return Seal(path, heads, frozenset(body["final_runs_without_attestation"]), body["sealed_at"],
                    body["keyid"])
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        return Seal(path, problem=f"{path}: not a seal ({error})")


def _digest(data: bytes) -> str:
    """What the audit key signs of a seal: the SHA-256 of its bytes in hex (as of an event, its hash)."""
    return hashlib.sha256(data).hexdigest()


def write_seal(heads: dict[str, tuple[int, str]], unattested_final: list[str]) -> Seal:
    """Write the seal file and its signature (SealError when one exists: a seal is made once)."""
    path = seal_path()
    if path.exists() or signature_path(path).exists():
        raise SealError(f"{path}: history is sealed already (sealing again would bless what was appended since)")
    key = load_audit_key()
    body = {"format": FORMAT, "sealed_at": datetime.now(UTC).isoformat(timespec="seconds"), "keyid": key.keyid,
            "chains": {label: {"seq": seq, "hash": digest} for label, (seq, digest) in sorted(heads.items())},
            "final_runs_without_attestation": sorted(unattested_final)}
    data = (json.dumps(body, indent=2, sort_keys=True) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    for target, content in ((path, data), (signature_path(path), (key.sign(_digest(data)) + "\n").encode("ascii"))):
        with os.fdopen(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
    return load_seal()

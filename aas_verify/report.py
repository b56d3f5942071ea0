"""What the verifier found: failures that each name a file, and where in it; the exit code it means.

Exit codes (every verifier: `python -m aas_verify`, `manage.py verify_bundle`, `aas verify`):

    0  VERIFIED: every check holds, and the signature verified against a key the caller trusts
    1  FAILED: a check failed (each failure printed), the wrong signer, a key's purpose or window included
    2  NOT VERIFIED: no trusted key was given (--key FILE or --key-fingerprint SHA256), and nothing else
       failed; or the command could not run (usage, an unreadable bundle or key, a keys document refused)
"""
from __future__ import annotations

from dataclasses import dataclass, field

VERIFIED, FAILED, NOT_VERIFIED = 0, 1, 2


@dataclass(frozen=True)
class Failure:
    file: str
    message: str
    seq: int | None = None  # an audit event's sequence number
    field: str | None = None  # the field (or JSON path) found wrong

    def line(self) -> str:
        where = self.file + (f" event #{self.seq}" if self.seq is not None else "")
        return f"{where}{f' [{self.field}]' if self.field else ''}: {self.message}"

    def as_dict(self) -> dict:
        return {"file": self.file, "seq": self.seq, "field": self.field, "message": self.message}


@dataclass
class Report:
    failures: list[Failure] = field(default_factory=list)
    keyid: str | None = None  # the trusted key the signature verified against
    key_origin: str = ""
    fingerprint: str | None = None  # that key's fingerprint (SHA-256 of the raw public key)
    key_window: str = ""  # that key's validity window, as checked against the statement's date
    claimed_fingerprint: str | None = None  # the key the bundle carries, when it verifies the signature
    untrusted: bool = False  # no trusted key was given: the signature was not checked against one
    notes: list[str] = field(default_factory=list)
    files: int = 0
    events: int = 0

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def exit_code(self) -> int:
        if self.ok:
            return VERIFIED
        return NOT_VERIFIED if self.untrusted and len(self.failures) == 1 else FAILED

    def as_dict(self) -> dict:
        return {"ok": self.ok, "exit_code": self.exit_code, "failures": [f.as_dict() for f in self.failures],
                "keyid": self.keyid, "key_origin": self.key_origin, "fingerprint": self.fingerprint,
                "key_window": self.key_window, "claimed_fingerprint": self.claimed_fingerprint,
                "trusted_key_given": not self.untrusted,
                "notes": self.notes, "files": self.files, "events": self.events}

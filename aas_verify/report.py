"""What the verifier found: failures that each name a file, and where in it."""
from __future__ import annotations

from dataclasses import dataclass, field


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
    keyid: str | None = None  # the key the signature verified against
    key_origin: str = ""
    notes: list[str] = field(default_factory=list)
    files: int = 0
    events: int = 0

    @property
    def ok(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict:
        return {"ok": self.ok, "failures": [f.as_dict() for f in self.failures], "keyid": self.keyid,
                "key_origin": self.key_origin, "notes": self.notes, "files": self.files, "events": self.events}

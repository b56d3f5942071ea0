"""What one sync of a run changed, counted (returned by `sync_run`, filled by the modules it calls)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class SyncSummary:
    canonical_created: int = 0
    canonical_updated: int = 0
    canonical_withdrawn: int = 0
    canonical_reactivated: int = 0
    mappings_created: int = 0
    suggestions_created: int = 0
    issue_decisions_created: int = 0
    amendment_decisions_created: int = 0
    carried_over: int = 0
    marked_stale: int = 0
    corrections_raised: int = 0
    conflicts: list[str] = field(default_factory=list)
    skipped: str = ""

    @property
    def changed(self) -> bool:
        return any((self.canonical_created, self.canonical_updated, self.canonical_withdrawn,
                    self.canonical_reactivated, self.mappings_created,
                    self.suggestions_created, self.issue_decisions_created, self.amendment_decisions_created,
                    self.carried_over,
                    self.marked_stale, self.corrections_raised))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

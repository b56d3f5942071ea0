"""Before → after of an audit event as a list of changed fields (the timeline's change column).

Pure: the event's `before` and `after` JSON in, the fields that differ out,
nested objects flattened to dotted names (`run_status.after`). A field only
in `after` is added, only in `before` removed; equal fields are left out.
Values are shown as compact JSON, strings as themselves.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ABSENT = object()


@dataclass(frozen=True)
class Change:
    field: str
    before: str  # "" when the field is added
    after: str  # "" when the field is removed
    kind: str  # "added", "removed" or "changed"

    @property
    def label(self) -> str:
        """The field as the timeline names it: words, not the JSON key (`run_status.after` is
        "run status · after"; the key stays in the tooltip)."""
        return self.field.replace("_", " ").replace(".", " · ")


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key in value:
            out.update(_flat(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix or "value": value}


def shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def changed_fields(before: Any, after: Any) -> list[Change]:
    """The fields of `after` that are new or differ from `before`, then those `before` had and `after` lacks."""
    old = _flat(before) if before is not None else {}
    new = _flat(after) if after is not None else {}
    changes = []
    for field, value in new.items():
        previous = old.get(field, ABSENT)
        if previous is ABSENT:
            changes.append(Change(field, "", shown(value), "added"))
        elif previous != value:
            changes.append(Change(field, shown(previous), shown(value), "changed"))
    for field, value in old.items():
        if field not in new:
            changes.append(Change(field, shown(value), "", "removed"))
    return changes

"""Mapping statements and supersessions as members write them (pure text helpers)."""
from __future__ import annotations

import re

from .models import Mapping


_ID = r"`?(?P<id>(?:(?:RT|MEM|EPI)-)?(?:CMP|OBJ|RTE|CLM|ABS|BAP)-(?:\d+|[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*){0,2}))`?"
SUPERSEDED_RE = re.compile(r"\s*" + _ID + r"\s+is\s+superseded\s+by\s+")
# One superseding ID, then optionally ", ", " and " or ", and " before the next.
_NEXT_ID_RE = re.compile(_ID + r"(?![A-Za-z0-9-])(?P<sep>,\s*(?:and\s+)?|\s+and\s+)?")


def relation_for(disposition: str, target: str, canonical_ids: set[str]) -> str:
    words = disposition.lower()
    # "counterpart" contains "part": a record with no counterpart (or no record on the right) is never part-of.
    if not target or any(w in words for w in ("no counterpart", "no-counterpart", "no record")):
        return Mapping.Relation.NO_COUNTERPART
    if re.search(r"\bpart\b", words):
        return Mapping.Relation.PART_OF
    if "supersed" in words:
        return Mapping.Relation.SUPERSEDES
    if not target or any(w in words for w in ("reject", "no counterpart", "no-counterpart", "dropped", "withdrawn")):
        return Mapping.Relation.NO_COUNTERPART
    if target in canonical_ids:
        return Mapping.Relation.SAME
    if any(w in words for w in ("regist", "new", "allocat", "added")):
        return Mapping.Relation.NEW
    return Mapping.Relation.SAME


def statement_key(source: str, relation: str, target: str) -> str:
    """The `origin_key` of a mapping a reconciliation or result states, from the IDs as stated."""
    return f"{source}|{relation}|{target}"


def superseded_pairs(text: str) -> list[tuple[str, str]]:
    """`X is superseded by Y[, Z][ and W]` → [(X, Y), (X, Z), (X, W)]; any other amendment → []."""
    match = SUPERSEDED_RE.match(text)
    if not match:
        return []
    old, pos, targets = match.group("id"), match.end(), []
    while (following := _NEXT_ID_RE.match(text, pos)) is not None:
        targets.append(following.group("id"))
        if not following.group("sep"):
            break
        pos = following.end()
    return [(old, target) for target in targets]

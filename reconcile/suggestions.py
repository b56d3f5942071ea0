"""Which canonical record a member's declaration most likely is (pure: no ORM).

A suggestion weighs two kinds of evidence: the ID's structure (the same slug
under another analyst's prefix, `MEM-OBJ-store` against `RT-OBJ-store`, is
strong; the same number is weak, since each analyst numbers on their own)
and the similarity of the words (difflib ratio on normalised words of the
label, and of the body's opening). Only records of the same kind compete.
The best candidate at or above `SAME_THRESHOLD` is proposed as `same`;
otherwise the declaration is proposed as `new`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Iterable

from records.ids import parse_id

SAME_THRESHOLD = 0.5
SLUG_BONUS = 0.5
NUMBER_BONUS = 0.1
LABEL_WEIGHT = 0.6
BODY_WEIGHT = 0.4
BODY_WORDS = 120

_WORD_RE = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Candidate:
    """A canonical record as the scorer sees it."""

    canonical_id: str
    kind: str
    label: str
    text: str = ""
    source_id: str = ""  # the member record it was seeded from (`RT-OBJ-store`), if any


@dataclass(frozen=True)
class Source:
    record_id: str
    kind: str
    label: str
    body: str = ""


@dataclass(frozen=True)
class Suggestion:
    relation: str  # "same" or "new"
    target: str  # "" for new
    score: float  # 0..1, rounded to three places
    reason: str


def words(text: str) -> list[str]:
    """Lower-case alphanumeric words: punctuation, markup and case do not count."""
    return _WORD_RE.findall(text.lower())


def ratio(a: str, b: str, *, limit: int | None = None) -> float:
    """difflib ratio of the two texts' normalised word sequences (0 when either is empty)."""
    wa, wb = words(a), words(b)
    if limit is not None:
        wa, wb = wa[:limit], wb[:limit]
    if not wa or not wb:
        return 0.0
    return SequenceMatcher(None, wa, wb, autojunk=False).ratio()


def _tail(record_id: str) -> tuple[str, str, str] | None:
    return parse_id(record_id)


def id_evidence(source_id: str, candidate: Candidate) -> tuple[float, str]:
    """The bonus the IDs' structure gives, with its reason ("" when none)."""
    source = _tail(source_id)
    if source is None:
        return 0.0, ""
    for other_id in (candidate.source_id, candidate.canonical_id):
        other = _tail(other_id) if other_id else None
        if other is None or other[1] != source[1] or other_id == source_id:
            continue
        if source[2] == other[2]:
            prefix = f"{other[0]}-" if other[0] else "bare IDs"
            if source[2].isdigit():
                return NUMBER_BONUS, f"same number {source[2]} under {prefix}"
            return SLUG_BONUS, f"same slug '{source[2]}' under {prefix}"
    return 0.0, ""


def score(source: Source, candidate: Candidate) -> tuple[float, str]:
    """Score one candidate for one source: (0..1, human reason)."""
    label_sim = ratio(source.label, candidate.label)
    body_sim = ratio(source.body, candidate.text, limit=BODY_WORDS)
    bonus, id_reason = id_evidence(source.record_id, candidate)
    value = min(1.0, LABEL_WEIGHT * label_sim + BODY_WEIGHT * body_sim + bonus)
    parts = [id_reason] if id_reason else []
    parts.append(f"label similarity {label_sim:.2f}")
    parts.append(f"body similarity {body_sim:.2f}")
    return round(value, 3), "; ".join(parts)


def suggest(source: Source, candidates: Iterable[Candidate], *, threshold: float = SAME_THRESHOLD) -> Suggestion:
    """The best candidate of the source's kind as `same`, or `new` when none reaches the threshold."""
    best: tuple[float, str, Candidate] | None = None
    for candidate in candidates:
        if candidate.kind != source.kind:
            continue
        value, reason = score(source, candidate)
        # Ties go to the lower canonical ID so the outcome does not depend on query order.
        if best is None or value > best[0] or (value == best[0] and candidate.canonical_id < best[2].canonical_id):
            best = (value, reason, candidate)
    if best is not None and best[0] >= threshold:
        return Suggestion("same", best[2].canonical_id, best[0], f"{best[2].canonical_id}: {best[1]}")
    if best is None:
        return Suggestion("new", "", 1.0, f"no canonical {source.kind} record to compare with")
    # Confidence in `new` is how far the best match stays below the threshold.
    confidence = round(1.0 - best[0], 3)
    return Suggestion("new", "", confidence,
                      f"no canonical record close enough; nearest {best[2].canonical_id}: {best[1]}")

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
BODY_WORDS = 60

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


def _ratio_words(wa: list[str], wb: list[str]) -> float:
    if not wa or not wb:
        return 0.0
    return SequenceMatcher(None, wa, wb, autojunk=False).ratio()


def ratio(a: str, b: str, *, limit: int | None = None) -> float:
    """difflib ratio of the two texts' normalised word sequences (0 when either is empty)."""
    wa, wb = words(a), words(b)
    if limit is not None:
        wa, wb = wa[:limit], wb[:limit]
    return _ratio_words(wa, wb)


def id_evidence(source_id: str, candidate: Candidate) -> tuple[float, str]:
    """The bonus the IDs' structure gives, with its reason ("" when none)."""
    source = parse_id(source_id)
    if source is None:
        return 0.0, ""
    for other_id in (candidate.source_id, candidate.canonical_id):
        other = parse_id(other_id) if other_id else None
        if other is None or other[1] != source[1] or other_id == source_id:
            continue
        if source[2] == other[2]:
            prefix = f"{other[0]}-" if other[0] else "bare IDs"
            if source[2].isdigit():
                return NUMBER_BONUS, f"same number {source[2]} under {prefix}"
            return SLUG_BONUS, f"same slug '{source[2]}' under {prefix}"
    return 0.0, ""


@dataclass(frozen=True)
class _Words:
    label: list[str]
    body: list[str]

    @classmethod
    def of(cls, label: str, body: str) -> "_Words":
        return cls(words(label), words(body)[:BODY_WORDS])


def _combine(label_sim: float, body_sim: float, bonus: float) -> float:
    return min(1.0, LABEL_WEIGHT * label_sim + BODY_WEIGHT * body_sim + bonus)


def _score(source: Source, source_words: _Words, candidate: Candidate, candidate_words: _Words) -> tuple[float, str]:
    label_sim = _ratio_words(source_words.label, candidate_words.label)
    body_sim = _ratio_words(source_words.body, candidate_words.body)
    bonus, id_reason = id_evidence(source.record_id, candidate)
    parts = [id_reason] if id_reason else []
    parts.append(f"label similarity {label_sim:.2f}")
    parts.append(f"body similarity {body_sim:.2f}")
    return round(_combine(label_sim, body_sim, bonus), 3), "; ".join(parts)


def score(source: Source, candidate: Candidate) -> tuple[float, str]:
    """Score one candidate for one source: (0..1, human reason)."""
    return _score(source, _Words.of(source.label, source.body), candidate,
                  _Words.of(candidate.label, candidate.text))


class Index:
    """Candidates grouped by kind with their words computed once, for scoring many sources."""

    def __init__(self, candidates: Iterable[Candidate]):
        self.by_kind: dict[str, list[tuple[Candidate, _Words]]] = {}
        for candidate in sorted(candidates, key=lambda c: c.canonical_id):
            self.by_kind.setdefault(candidate.kind, []).append(
                (candidate, _Words.of(candidate.label, candidate.text)))
        # difflib caches its analysis of the second sequence: one matcher per candidate text, reused.
        self._matchers: dict[tuple[int, str], SequenceMatcher] = {}

    def _matcher(self, words_b: list[str], key: tuple[int, str]) -> SequenceMatcher:
        matcher = self._matchers.get(key)
        if matcher is None:
            matcher = self._matchers[key] = SequenceMatcher(None, (), words_b, autojunk=False)
        return matcher

    def _ratio(self, wa: list[str], wb: list[str], key: tuple[int, str], *, quick: bool = False) -> float:
        if not wa or not wb:
            return 0.0
        matcher = self._matcher(wb, key)
        matcher.set_seq1(wa)
        return matcher.quick_ratio() if quick else matcher.ratio()

    def suggest(self, source: Source, *, threshold: float = SAME_THRESHOLD) -> Suggestion:
        source_words = _Words.of(source.label, source.body)
        best: tuple[float, str, Candidate] | None = None
        # Lower canonical IDs first, so ties go to them whatever order the candidates came in.
        for candidate, candidate_words in self.by_kind.get(source.kind, []):
            key = id(candidate)
            bonus, id_reason = id_evidence(source.record_id, candidate)
            if best is not None:
                ceiling = _combine(self._ratio(source_words.label, candidate_words.label, (key, "l"), quick=True),
                                   self._ratio(source_words.body, candidate_words.body, (key, "b"), quick=True),
                                   bonus)
                if round(ceiling, 3) <= best[0]:
                    continue  # cannot beat the best so far
            label_sim = self._ratio(source_words.label, candidate_words.label, (key, "l"))
            body_sim = self._ratio(source_words.body, candidate_words.body, (key, "b"))
            parts = [id_reason] if id_reason else []
            parts += [f"label similarity {label_sim:.2f}", f"body similarity {body_sim:.2f}"]
            value, reason = round(_combine(label_sim, body_sim, bonus), 3), "; ".join(parts)
            if best is None or value > best[0]:
                best = (value, reason, candidate)
        if best is not None and best[0] >= threshold:
            return Suggestion("same", best[2].canonical_id, best[0], f"{best[2].canonical_id}: {best[1]}")
        if best is None:
            return Suggestion("new", "", 1.0, f"no canonical {source.kind} record to compare with")
        # Confidence in `new` is how far the best match stays below the threshold.
        return Suggestion("new", "", round(1.0 - best[0], 3),
                          f"no canonical record close enough; nearest {best[2].canonical_id}: {best[1]}")


def suggest(source: Source, candidates: Iterable[Candidate], *, threshold: float = SAME_THRESHOLD) -> Suggestion:
    """The best candidate of the source's kind as `same`, or `new` when none reaches the threshold."""
    return Index(candidates).suggest(source, threshold=threshold)

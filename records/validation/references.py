"""Reference forms and resolution helpers: range references, every ID a member cites, the
nearest-declared-ID suggestion, and which members are imported results.
"""
from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Collection, Sequence

import numpy as np

from records.document import ParsedReport

from .findings import MemberInput, Collector, severity_of
from .reading import split_id


def check_ranges(out: Collector, report: ParsedReport, current: bool) -> None:
    for ref in report.ranges:
        out.add(
            "range-reference",
            severity_of(current),
            f"\"{ref.text}\" is a range; write every ID in full (e.g. RTE-1, RTE-2, RTE-3).",
            line=ref.line,
        )


def references_of(member: MemberInput) -> list[tuple[str, int]]:
    """Every (record ID, line) the member cites outside quotations and fences."""
    report = member.report
    refs: set[tuple[str, int]] = set()
    for ref in report.references:
        refs.add((ref.record_id, ref.line))
    for decl in report.declarations:
        refs.update((ref.record_id, ref.line) for ref in decl.references)
    for annotation in report.annotations:
        refs.update((ref.record_id, ref.line) for ref in annotation.references)
        refs.add((annotation.target, annotation.line_start))
    mentioned = {record_id for record_id, _ in refs}  # kept as refs grows, issue by issue
    for issue in report.integration_issues:
        added = [record_id for record_id in issue.references if record_id not in mentioned]
        refs.update((record_id, issue.line) for record_id in added)
        mentioned.update(added)
    declared_at = {(d.record_id, d.line_start) for d in report.declarations}
    return sorted(refs - declared_at)


def _suggestion(record_id: str, declared: Collection[str]) -> str:
    return Suggestions(declared)(record_id)


class Suggestions:
    """`_suggestion` over one set of declared IDs: sorted and indexed by (kind, name) and by their letters
    once, each answer kept.

    A run cites the same undeclared IDs many times; before, every citation
    sorted and split every declared ID again.
    """

    def __init__(self, declared: Collection[str]) -> None:
        self.given = declared
        self.declared: Candidates | None = None  # sorted and indexed on the first question
        self.by_name: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.answers: dict[str, str] = {}

    def __call__(self, record_id: str) -> str:
        answer = self.answers.get(record_id)
        if answer is None:
            if self.declared is None:
                self.declared = Candidates(sorted(self.given))
                for d in self.declared.words:
                    self.by_name[split_id(d)[1:]].append(d)
            answer = self.answers[record_id] = self._answer(record_id)
        return answer

    def _answer(self, record_id: str) -> str:
        prefix, kind, name = split_id(record_id)
        if kind:
            same_name = [d for d in self.by_name.get((kind, name), ()) if d != record_id]
            if same_name:
                return f" The same name is declared as {', '.join(same_name)}; did you mean that?"
        close = self.declared.closest(record_id, cutoff=0.6)
        if close:
            return f" The nearest declared ID is {close}."
        return ""


class Candidates:
    """Words to find the closest of, with each word's letter counts kept (one row of a matrix per word).

    `closest(word, cutoff=c)` is `difflib.get_close_matches(word, words, n=1, cutoff=c)`'s answer ("" for
    none). difflib works out SequenceMatcher's `quick_ratio` (the letters two words share, an upper
    bound of the ratio) word by word in Python, then the full ratio of every word that passes; a 2 MB
    report asked it about 16 IDs among 702 declared: 11,232 quick ratios, 737 ratios, about 50 ms. Here
    the shared letters of every word come from one numpy minimum over the matrix, and the full ratio,
    with the same SequenceMatcher, only of a word whose bound could still beat the best found so far,
    or tie with it as a larger string (difflib's answer is the max of (ratio, word)).
    """

    def __init__(self, words: Sequence[str]) -> None:
        self.words = list(words)
        self.letters = {ch: i for i, ch in enumerate(sorted({ch for w in self.words for ch in w}))}
        self.counts = np.zeros((len(self.words), len(self.letters)), dtype=np.int64)
        for row, w in enumerate(self.words):
            for ch in w:
                self.counts[row, self.letters[ch]] += 1
        self.lengths = [len(w) for w in self.words]

    def closest(self, word: str, *, cutoff: float) -> str:
        if not self.words:
            return ""
        wanted = np.zeros(len(self.letters), dtype=np.int64)
        for ch in word:
            if (i := self.letters.get(ch)) is not None:
                wanted[i] += 1
        shared = np.minimum(self.counts, wanted).sum(axis=1).tolist()
        size = len(word)
        bounds = []
        for i, (matches, length) in enumerate(zip(shared, self.lengths)):
            bound = 2.0 * matches / (length + size) if length + size else 1.0  # difflib's quick_ratio
            if bound >= cutoff:
                bounds.append((bound, self.words[i]))
        bounds.sort(reverse=True)
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(word)
        best: tuple[float, str] | None = None
        for bound, candidate in bounds:
            if best is not None and (bound, candidate) < best:
                break  # every later word's ratio is at most its bound: none can beat the best
            matcher.set_seq1(candidate)
            ratio = matcher.ratio()
            if ratio >= cutoff and (best is None or (ratio, candidate) > best):
                best = (ratio, candidate)
        return best[1] if best is not None else ""


def is_result_member(member: MemberInput) -> bool:
    return member.role == "result" or "analysis-result" in (member.report.doc_type or "")

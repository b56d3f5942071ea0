"""Reference forms and resolution helpers: range references, every ID a member cites, the
nearest-declared-ID suggestion, and which members are imported results.
"""
from __future__ import annotations

import difflib
from collections import defaultdict
from typing import Collection

from records.document import ParsedReport

from .findings import MemberInput, _Collector, _severity
from .reading import _split_id


def _check_ranges(out: _Collector, report: ParsedReport, current: bool) -> None:
    for ref in report.ranges:
        out.add(
            "range-reference",
            _severity(current),
            f"\"{ref.text}\" is a range; write every ID in full (e.g. RTE-1, RTE-2, RTE-3).",
            line=ref.line,
        )


def _references_of(member: MemberInput) -> list[tuple[str, int]]:
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
    for issue in report.integration_issues:
        mentioned = {record_id for record_id, _ in refs}
        for record_id in issue.references:
            if record_id not in mentioned:
                refs.add((record_id, issue.line))
    declared_at = {(d.record_id, d.line_start) for d in report.declarations}
    return sorted(refs - declared_at)


def _suggestion(record_id: str, declared: Collection[str]) -> str:
    return _Suggestions(declared)(record_id)


class _Suggestions:
    """`_suggestion` over one set of declared IDs: sorted and indexed by (kind, name) once, each answer kept.

    A run cites the same undeclared IDs many times; before, every citation
    sorted and split every declared ID again.
    """

    def __init__(self, declared: Collection[str]) -> None:
        self.given = declared
        self.declared: list[str] | None = None  # sorted and indexed on the first question
        self.by_name: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.answers: dict[str, str] = {}

    def __call__(self, record_id: str) -> str:
        answer = self.answers.get(record_id)
        if answer is None:
            if self.declared is None:
                self.declared = sorted(self.given)
                for d in self.declared:
                    self.by_name[_split_id(d)[1:]].append(d)
            answer = self.answers[record_id] = self._answer(record_id)
        return answer

    def _answer(self, record_id: str) -> str:
        prefix, kind, name = _split_id(record_id)
        if kind:
            same_name = [d for d in self.by_name.get((kind, name), ()) if d != record_id]
            if same_name:
                return f" The same name is declared as {', '.join(same_name)}; did you mean that?"
        close = difflib.get_close_matches(record_id, self.declared, n=1, cutoff=0.6)
        if close:
            return f" The nearest declared ID is {close[0]}."
        return ""


def _is_result(member: MemberInput) -> bool:
    return member.role == "result" or "analysis-result" in (member.report.doc_type or "")

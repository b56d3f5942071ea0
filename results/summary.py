"""What the result page opens with (issue 22): the reviewer's decisions counted from the stored result's
own data (result.json as finalization wrote it), and the correction requests as the run closed them.

Pure: plain data in, a frozen summary out. Counts of zero are left out, except that an empty run says
so; the words are a reviewer's, each with the result's own word beside it for a tooltip.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from reconcile.dispositions import DISPOSITIONS, MAPPED, NEW, NO_COUNTERPART, OPEN, REJECTED

DISPOSITION_WORDS = {
    MAPPED: "mapped onto a shared record",
    NEW: "entered as new shared records",
    NO_COUNTERPART: "with no counterpart",
    REJECTED: "rejected (no place)",
    OPEN: "left open",
}
CORRECTION_STATES = ("resolved", "answered", "withdrawn", "open")
# The result's own top-level sections, in its order: the page shows them before the members' prose.
REVIEWERS_SECTIONS = ("Reconciliation", "Limitations", "Verification and blockers")
# What the summary links to: the result's headings (results/rendering.py) by the summary's names.
LINKED_SECTIONS = {
    "decisions": "Reconciliation", "mappings": "Mappings", "dispositions": "Dispositions",
    "issues": "Integration issue decisions", "amendments": "Amendments", "limitations": "Limitations",
    "corrections": "Correction requests", "approval": "Semantic verification",
}


@dataclass(frozen=True)
class Count:
    count: int
    words: str
    code: str


@dataclass(frozen=True)
class ResultSummary:
    records: int
    dispositions: tuple[Count, ...]
    issues_accepted: int
    issues_rejected: int
    corrections: tuple[Count, ...]


def _counts(values: Iterable[str], order: tuple[str, ...], words: dict[str, str]) -> tuple[Count, ...]:
    counter = Counter(values)
    known = [Count(counter[code], words.get(code, code), code) for code in order if counter[code]]
    return tuple(known + [Count(n, code, code) for code, n in sorted(counter.items()) if code not in order])


def summarize(data: dict, correction_states: Iterable[str]) -> ResultSummary:
    """`data` is a Result's `data` (result.json); `correction_states` one state per correction request."""
    dispositions = [d.get("disposition", "") for d in data.get("dispositions", [])]
    issues = [i.get("decision", "") for i in data.get("integration_issues", [])]
    return ResultSummary(
        records=len(dispositions),
        dispositions=_counts(dispositions, DISPOSITIONS, DISPOSITION_WORDS),
        issues_accepted=issues.count("accept"),
        issues_rejected=issues.count("reject"),
        corrections=_counts(correction_states, CORRECTION_STATES, {}),
    )


def section_links(contents: Iterable) -> dict[str, str]:
    """The anchor of each of LINKED_SECTIONS among `contents` (headings with `text` and `anchor`, in page
    order): the first heading of that title, which with the reviewer's sections first is the result's
    own and not a member's carried one. A section the result lacks (no correction requests) has none."""
    first: dict[str, str] = {}
    for heading in contents:
        first.setdefault(heading.text, heading.anchor)
    return {name: first[title] for name, title in LINKED_SECTIONS.items() if title in first}

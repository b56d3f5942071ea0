"""Evidence citation: the Source register's rows, citations at the run's commit, line numbers in
prose, and (across the set) quoted paths that lie within a registered source. Citations are read as
the quotation check reads them (`citations`).
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from records.document import ParsedReport

from . import citations
from .findings import (
    ERROR,
    WARNING,
    Finding,
    MemberInput,
    RunFacts,
    Collector,
    severity_of,
)
from .reading import strip_ticks, is_source_id


def _revision_cell(row) -> str:
    for header, cell in row.columns:
        if header.strip().lower().startswith("revision"):
            return strip_ticks(cell)
    return ""


def _names_commit(cell: str, commit: str) -> bool:
    """Whether a revision cell (`0e12f0b3…`, `` `0e12f0b` (main) ``) names the commit."""
    return any(citations.same_commit(token, commit) for token in re.findall(r"[\w.-]+", cell))


def check_source_register(out: Collector, report: ParsedReport, run: RunFacts, current: bool) -> None:
    if not report.sources:
        return
    counts = Counter(row.source_id for row in report.sources)
    for row in report.sources:
        if len(row.columns) != 8:
            out.add(
                "source-row-columns",
                ERROR,
                f"{row.source_id} has {len(row.columns)} columns; every Source register row has eight (source ID, kind, identity/location, revision, evidence layer, inspected scope, citation anchors, access gaps).",
                record_id=row.source_id,
                line=row.line,
            )
        if not is_source_id(row.source_id):
            out.add(
                "malformed-id",
                ERROR,
                f"{row.source_id} is not a source ID; sources are numbered SRC-1, SRC-2, …",
                record_id=row.source_id,
                line=row.line,
            )
    for source_id, count in sorted(counts.items()):
        if count > 1:
            first = min(row.line for row in report.sources if row.source_id == source_id)
            out.add(
                "duplicate-source",
                ERROR,
                f"{source_id} appears {count} times in the Source register; number each source once.",
                record_id=source_id,
                line=first,
            )
    commit = run.reviewed_boundary.strip()
    if commit and not any(_names_commit(_revision_cell(row), commit) for row in report.sources):
        out.add(
            "no-source-at-boundary",
            ERROR,
            f"No Source register row has revision {commit}, the run's reviewed boundary; register the frozen commit.",
            line=min(row.line for row in report.sources),
        )


# Validation's finding about a citation at another commit: it needs no snapshot, so validation says it (for every
# citation: quotations, and blob links in prose) and the quotation check against the snapshot does not.
COMMIT_MISMATCH_CODE = "quote-commit-mismatch"


def check_quotations(out: Collector, report: ParsedReport, run: RunFacts, current: bool) -> None:
    for citation in (*citations.quotation_citations(report), *citations.prose_citations(report)):
        problem = citations.other_commit(citation, run.reviewed_boundary)
        if problem:
            out.add(COMMIT_MISMATCH_CODE, ERROR, problem, line=citation.line)
    for quotation in report.quotations:
        if not quotation.text.strip():
            out.add(
                "empty-quotation",
                severity_of(current),
                f"The quotation anchored at {quotation.path or 'its source'} has no body; quote the passage or drop the anchor.",
                line=quotation.line,
            )


def check_prose_anchors(out: Collector, report: ParsedReport, current: bool) -> None:
    """Line ranges in prose (`path:12-30`; a blob link's `#L12-L30` is a link, not this form)."""
    for citation in citations.prose_citations(report):
        if citation.lines and not citation.link:
            out.add(
                "prose-line-anchor",
                severity_of(current),
                f"\"{citation.written}\" carries line numbers outside a quotation; cite the path alone and quote the passage.",
                line=citation.line,
            )


def quoted_paths(members: Sequence[MemberInput]) -> list[Finding]:
    register_text = " ".join(cell for m in members for row in m.report.sources for _, cell in row.columns)
    if not register_text:
        return []
    findings = []
    for m in members:
        for quotation in citations.quotation_citations(m.report):
            path = quotation.path
            if not path:
                continue
            candidates = [path] + [path[: i + 1] for i, ch in enumerate(path) if ch == "/"]
            if any(c in register_text for c in candidates):
                continue
            findings.append(
                Finding(
                    "quotation-path-not-registered",
                    WARNING,
                    m.name,
                    "",
                    quotation.line,
                    f"The quoted path {path} is not named in the Source register (neither it nor a folder containing it); check that it lies within a registered source.",
                )
            )
    return findings

"""Evidence citation: the Source register's rows, quotation anchors at the run's commit, line numbers
in prose, and (across the set) quoted paths that lie within a registered source.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from records.document import ParsedReport

from .findings import (
    ERROR,
    WARNING,
    Finding,
    MemberInput,
    RunFacts,
    _Collector,
    _severity,
)
from .reading import _prose_lines, _strip_ticks, is_source_id


def _revision_cell(row) -> str:
    for header, cell in row.columns:
        if header.strip().lower().startswith("revision"):
            return _strip_ticks(cell)
    return ""


def _check_source_register(out: _Collector, report: ParsedReport, run: RunFacts, current: bool) -> None:
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
    if commit and not any(commit in _revision_cell(row) for row in report.sources):
        out.add(
            "no-source-at-boundary",
            ERROR,
            f"No Source register row has revision {commit}, the run's reviewed boundary; register the frozen commit.",
            line=min(row.line for row in report.sources),
        )


def _same_commit(named: str, commit: str) -> bool:
    named = _strip_ticks(named).lower()
    commit = commit.lower()
    return named == commit or (len(named) >= 7 and commit.startswith(named))


def _check_quotations(out: _Collector, report: ParsedReport, run: RunFacts, current: bool) -> None:
    commit = run.reviewed_boundary.strip()
    for quotation in report.quotations:
        if quotation.commit and commit and not _same_commit(quotation.commit, commit):
            out.add(
                "quotation-commit-mismatch",
                ERROR,
                f"The quotation from {quotation.path} is anchored at {quotation.commit}, not the run's commit {commit}; quote the reviewed commit.",
                line=quotation.line,
            )
        if not quotation.text.strip():
            out.add(
                "empty-quotation",
                _severity(current),
                f"The quotation anchored at {quotation.path or 'its source'} has no body; quote the passage or drop the anchor.",
                line=quotation.line,
            )


_PROSE_ANCHOR_RE = re.compile(
    r"(?<![\w/.@-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z][A-Za-z0-9]*):(\d+(?:[-–]\d+)?(?:,\s?\d+(?:[-–]\d+)?)*)(?!\d)"
)


_COLON_DIGIT_RE = re.compile(r":\d")


def _check_prose_anchors(out: _Collector, report: ParsedReport, current: bool) -> None:
    for number, line in _prose_lines(report):
        if not _COLON_DIGIT_RE.search(line):
            continue  # a line anchor is `path:N`; the full pattern is slow on long prose
        for match in _PROSE_ANCHOR_RE.finditer(line):
            out.add(
                "prose-line-anchor",
                _severity(current),
                f"\"{match.group(0)}\" carries line numbers outside a quotation; cite the path alone and quote the passage.",
                line=number,
            )


def _quoted_paths(members: Sequence[MemberInput]) -> list[Finding]:
    register_text = " ".join(cell for m in members for row in m.report.sources for _, cell in row.columns)
    if not register_text:
        return []
    findings = []
    for m in members:
        for quotation in m.report.quotations:
            path = _strip_ticks(quotation.path).split(":", 1)[0].strip()
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

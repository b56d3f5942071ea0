"""The "Part of:" lines: their form inside a declaration, and (across the set) that each names a
record the run declares.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from typing import Sequence

from records.document import ParsedReport

from .findings import ERROR, Finding, MemberInput, Collector, severity_of
from records.parsing.grammar import RECORD_LINK_RE

from .reading import prose_lines, strip_ticks, is_record_id, per_report
from .references import Suggestions

_PART_OF_RE = re.compile(r"Part of\s*:", re.IGNORECASE)
_PART_OF_LINE_RE = re.compile(r"^(?:[-•*] )?Part of:(.*)$")


@per_report()
def _part_of_lines(report: ParsedReport) -> tuple[tuple[tuple[int, str], ...], tuple[int, ...]]:
    """The prose lines that hold "Part of:" as (number, text), in line order, and their numbers. The pattern
    needs a colon: testing for one first (no regex) passes over most lines, 13 → 2 ms for a 2 MB report."""
    lines = tuple((number, line) for number, line in prose_lines(report) if ":" in line and _PART_OF_RE.search(line))
    return lines, tuple(number for number, _line in lines)


def _within(report: ParsedReport, decl) -> tuple[tuple[int, str], ...]:
    """The "Part of:" lines inside `decl`, in order: found by bisection, not by reading every line for
    every declaration (2,000 records with a "Part of:" each were 4 million tests)."""
    lines, numbers = _part_of_lines(report)
    return lines[bisect_left(numbers, decl.line_start):bisect_right(numbers, decl.line_end)]


def _part_of_value(match: re.Match, links_form: bool = False) -> str:
    """The ID a `_PART_OF_LINE_RE` match names, without trailing period or backticks; in the links form
    the ID of its one citation ("" for anything else, a bare ID included)."""
    raw = match.group(1).strip().rstrip(".")
    if links_form:
        link = RECORD_LINK_RE.fullmatch(raw)
        return link.group("id") if link else ""
    return strip_ticks(raw)


def check_part_of(out: Collector, report: ParsedReport, current: bool) -> None:
    severity = severity_of(current)
    inside: set[int] = set()  # the lines some declaration holds
    for decl in report.declarations:
        seen: list[tuple[int, str]] = []
        for number, line in _within(report, decl):
            inside.add(number)
            match = _PART_OF_LINE_RE.match(line)
            if not match:
                out.add(
                    "part-of-misplaced",
                    severity,
                    "\"Part of:\" must stand on its own unindented line inside the declaration (`Part of: RT-OBJ-2`).",
                    record_id=decl.record_id,
                    line=number,
                )
                continue
            value = _part_of_value(match, report.links_form)
            seen.append((number, value))
            if not is_record_id(value):
                expected = "carry exactly one citation `[ID](member.md#anchor)`" if report.links_form else (
                    "name exactly one full record ID")
                out.add(
                    "part-of-not-one-id",
                    severity,
                    f"\"Part of: {match.group(1).strip()}\" must {expected} and nothing else.",
                    record_id=decl.record_id,
                    line=number,
                )
            elif value == decl.record_id:
                out.add(
                    "part-of-self",
                    severity,
                    f"{decl.record_id} says it is part of itself; name the containing record instead.",
                    record_id=decl.record_id,
                    line=number,
                )
        if len(seen) > 1:
            out.add(
                "part-of-repeated",
                severity,
                f"{decl.record_id} has {len(seen)} \"Part of:\" lines; a record is part of at most one other record.",
                record_id=decl.record_id,
                line=seen[1][0],
            )
    if not current:
        return
    for number, line in _part_of_lines(report)[0]:
        if not _PART_OF_LINE_RE.match(line):
            continue
        if number in inside:
            continue
        out.add(
            "part-of-outside-declaration",
            ERROR,
            "\"Part of:\" stands outside any declaration; move it under the `#### ID — Label` heading of the record it belongs to.",
            line=number,
        )


def part_of_resolution(members: Sequence[MemberInput], resolvable: set[str]) -> list[Finding]:
    suggest = Suggestions(resolvable)
    findings = []
    for m in members:
        for decl in m.report.declarations:
            for number, line in _within(m.report, decl):
                match = _PART_OF_LINE_RE.match(line)
                if not match:
                    continue
                value = _part_of_value(match, m.report.links_form)
                if is_record_id(value) and value != decl.record_id and value not in resolvable:
                    findings.append(
                        Finding(
                            "part-of-unresolved",
                            ERROR,
                            m.name,
                            decl.record_id,
                            number,
                            f"{decl.record_id} is part of {value}, which no member of this run declares.{suggest(value)}",
                        )
                    )
    return findings

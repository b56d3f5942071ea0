"""The "Part of:" checks find each line's declaration by bisection (records/validation/part_of.py): the same
findings as reading every line for every declaration, the way they were written before, on reports parsed
from generated text."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from records.parsing import parse_report_strict
from records.validation import part_of
from records.validation.findings import ERROR, Finding, MemberInput, Collector, severity_of
from records.validation.reading import prose_lines, is_record_id

BODY_LINES = st.sampled_from([
    "Part of: RT-OBJ-container", "Part of: RT-OBJ-other.", "Part of: MEM-OBJ-r1", "- Part of: RT-OBJ-a",
    "It is Part of: RT-OBJ-x in effect.", "Part of: RT-OBJ-a and RT-OBJ-b", "part of: RT-OBJ-lower",
    "Part of:", "A plain sentence: with a colon.", "Plain prose.", "",
])


@st.composite
def reports(draw):
    """A memory report: declarations with bodies drawn from BODY_LINES, sections between them, and lines
    that stand outside any declaration."""
    lines = ["---", "type: agentic-systems/types/agent-memory-analysis-report.md", "run-id: AAS-2026-10-02-x-01",
             "---", "", "# X memory report", ""]
    for n in range(1, draw(st.integers(1, 8)) + 1):
        if draw(st.booleans()):
            lines += ["## Write side", "", *draw(st.lists(BODY_LINES, max_size=3)), ""]
        lines += ["## Shared records", "", "### Operative objects", "",
                  f"#### MEM-OBJ-r{n} — Record {n}", "", *draw(st.lists(BODY_LINES, max_size=5)), ""]
    return parse_report_strict("\n".join(lines) + "\n")


def lines_read_whole(report):
    return [(number, line) for number, line in prose_lines(report) if part_of._PART_OF_RE.search(line)]


def check_read_whole(out, report, current):
    """`_check_part_of` as it read every line for every declaration."""
    severity = severity_of(current)
    lines = lines_read_whole(report)
    for decl in report.declarations:
        seen = []
        for number, line in lines:
            if not decl.line_start <= number <= decl.line_end:
                continue
            match = part_of._PART_OF_LINE_RE.match(line)
            if not match:
                out.add("part-of-misplaced", severity, "", record_id=decl.record_id, line=number)
                continue
            value = part_of._part_of_value(match, report.links_form)
            seen.append((number, value))
            if not is_record_id(value):
                out.add("part-of-not-one-id", severity, "", record_id=decl.record_id, line=number)
            elif value == decl.record_id:
                out.add("part-of-self", severity, "", record_id=decl.record_id, line=number)
        if len(seen) > 1:
            out.add("part-of-repeated", severity, "", record_id=decl.record_id, line=seen[1][0])
    if not current:
        return
    for number, line in lines:
        if part_of._PART_OF_LINE_RE.match(line) and not any(
                d.line_start <= number <= d.line_end for d in report.declarations):
            out.add("part-of-outside-declaration", ERROR, "", line=number)


def resolution_read_whole(member, resolvable):
    found = []
    for decl in member.report.declarations:
        for number, line in lines_read_whole(member.report):
            if not decl.line_start <= number <= decl.line_end:
                continue
            match = part_of._PART_OF_LINE_RE.match(line)
            if match:
                value = part_of._part_of_value(match, member.report.links_form)
                if is_record_id(value) and value != decl.record_id and value not in resolvable:
                    found.append((decl.record_id, number, value))
    return found


def placed(findings):
    return [(f.code, f.severity, f.record_id, f.line) for f in findings]


@settings(max_examples=150, deadline=None)
@given(report=reports(), current=st.booleans(), resolvable=st.sets(st.sampled_from(["RT-OBJ-container", "RT-OBJ-a"])))
def test_the_part_of_checks_find_what_reading_every_line_for_every_declaration_finds(report, current, resolvable):
    assert part_of._part_of_lines(report)[0] == tuple(lines_read_whole(report))
    mine, theirs = Collector("memory"), Collector("memory")
    part_of.check_part_of(mine, report, current)
    check_read_whole(theirs, report, current)
    assert placed(mine.findings) == placed(theirs.findings)
    resolved = part_of.part_of_resolution([MemberInput(name="memory.md", role="memory", report=report)], resolvable)
    assert [(f.record_id, f.line) for f in resolved] == [(r, n) for r, n, _v in
                                                          resolution_read_whole(MemberInput("memory.md", "memory", report),
                                                                                resolvable)]
    assert all(isinstance(f, Finding) and f.code == "part-of-unresolved" for f in resolved)

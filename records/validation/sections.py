"""The shape of a report: its role's required sections in order, the kind headings under Shared
records, the one Reconciliation section, and a memory report no longer "Validation: pending".
"""
from __future__ import annotations

import re

from records.document import ParsedReport

from .findings import ERROR, MemberInput, Collector, severity_of
from .reading import norm_title, prose_lines
from .vocabulary import KIND_HEADINGS, REQUIRED_SECTIONS, ROLES_WITH_SHARED_RECORDS


def _top_sections(report: ParsedReport):
    levels = [s.level for s in report.sections if s.level >= 2]
    top = min(levels) if levels else None
    return [s for s in report.sections if top is None or s.level == top]


def _find_section(report: ParsedReport, title: str):
    wanted = norm_title(title)
    for section in _top_sections(report):
        if norm_title(section.title) == wanted:
            return section
    for section in report.sections:
        if norm_title(section.title) == wanted:
            return section
    return None


def check_sections(out: Collector, member: MemberInput, current: bool) -> None:
    required = REQUIRED_SECTIONS.get(member.role)
    if not required:
        return
    severity = severity_of(current)
    found = []
    for title in required:
        section = _find_section(member.report, title)
        if section is None:
            out.add(
                "missing-section",
                severity,
                f"A {member.role} report needs a \"{title}\" section; add it in its place ({', '.join(required)}).",
            )
        else:
            found.append((title, section))
    for (before, first), (after, second) in zip(found, found[1:]):
        if second.line_start < first.line_start:
            out.add(
                "section-out-of-order",
                severity,
                f"\"{after}\" comes before \"{before}\"; a {member.role} report orders its sections {', '.join(required)}.",
                line=second.line_start,
            )


# Links-form member types whose Shared records list only the kinds they declare.
LINKS_FORM_DECLARED_KINDS_ONLY = frozenset({"epistemic"})


def check_shared_records(out: Collector, member: MemberInput, current: bool) -> None:
    if member.role not in ROLES_WITH_SHARED_RECORDS:
        return
    report = member.report
    shared = _find_section(report, "Shared records")
    if shared is None:
        return
    lines = report.text.splitlines()
    inside = [s for s in report.sections if shared.line_start < s.line_start <= shared.line_end]
    body = "\n".join(lines[shared.line_start : shared.line_end]).lower()
    by_title = {norm_title(s.title): s for s in inside}
    severity = severity_of(current)
    any_kind_heading = any(norm_title(h) in by_title for h in KIND_HEADINGS.values())
    if not any_kind_heading and "none declared in this member" in body and not report.declarations:
        return
    for kind, heading in KIND_HEADINGS.items():
        section = by_title.get(norm_title(heading))
        if section is None and report.links_form and member.role in LINKS_FORM_DECLARED_KINDS_ONLY:
            continue  # its type keeps only the kind headings it declares (DESIGN §6, links form)
        if section is None:
            out.add(
                "missing-kind-heading",
                severity,
                f"Shared records has no \"{heading}\" heading; add it, with its declarations or the words \"none declared in this member\".",
                line=shared.line_start,
            )
            continue
        declared_here = any(
            d.kind == kind and section.line_start <= d.line_start <= max(section.line_end, section.line_start)
            for d in report.declarations
        )
        text = "\n".join(lines[section.line_start : section.line_end]).lower()
        if not declared_here and "none declared" not in text and not any(d.kind == kind for d in report.declarations):
            out.add(
                "empty-kind-heading",
                severity,
                f"\"{heading}\" declares nothing; write \"none declared in this member\" under it.",
                line=section.line_start,
            )


_VALIDATION_PENDING_RE = re.compile(r"^\W*validation\W*:\W*pending\b", re.IGNORECASE)


def check_validation_pending(out: Collector, member: MemberInput) -> None:
    if member.role != "memory":
        return
    for number, line in prose_lines(member.report):
        if ":" in line and _VALIDATION_PENDING_RE.match(line):  # the pattern needs the colon: no regex without one
            out.add(
                "validation-pending",
                ERROR,
                "The memory report still says \"Validation: pending\"; run its validation and record the outcome before upload.",
                line=number,
            )


def check_reconciliation_section(out: Collector, member: MemberInput) -> None:
    if member.role != "reconciliation":
        return
    sections = [s for s in member.report.sections if norm_title(s.title) == "reconciliation"]
    if len(sections) != 1:
        out.add(
            "reconciliation-section-count",
            ERROR,
            f"A reconciliation member has exactly one \"## Reconciliation\" section; this one has {len(sections)}.",
            line=sections[1].line_start if len(sections) > 1 else 0,
        )

"""Amendments as supersession ("X is superseded by Y"), their IDs declared, and the overview's
"Amended or superseded records:" line agreeing with the reconciliation.
"""
from __future__ import annotations

import re
from typing import Mapping, Sequence

from records.document import ParsedReport

from .findings import ERROR, Finding, MemberInput, Collector, severity_of
from records.parsing.grammar import RECORD_LINK_RE

from .reading import ID_PATTERN, ids_in, prose_lines

_SUPERSEDED_RE = re.compile(
    r"^\s*`?(?P<old>" + ID_PATTERN + r")`? is superseded by `?(?P<new>" + ID_PATTERN
    + r")`?(?: and `?(?P<also>" + ID_PATTERN + r")`?)?(?=[\s.;,:]|$)"
)


def _supersession(text: str, links_form: bool = False) -> re.Match | None:
    """`X is superseded by Y[ and Z]`, read after collapsing whitespace: a paragraph may wrap anywhere.
    In the links form each side is a citation, `[X](member.md#x)`, read as its ID."""
    if links_form:
        text = RECORD_LINK_RE.sub(lambda m: m.group("id"), text)
    return _SUPERSEDED_RE.match(" ".join(text.split()))


def check_amendment_form(out: Collector, member: MemberInput, current: bool) -> None:
    if not current:
        return  # older reconciliations may carry value amendments
    for amendment in member.report.amendments:
        if amendment.kind != "amendment":
            continue
        if not _supersession(amendment.text, member.report.links_form):
            amended = ids_in(amendment.text)
            out.add(
                "value-amendment",
                ERROR,
                f"In the current form an amendment is only an identity judgment: \"Amendment: X is superseded by Y\" (or \"by Y and Z\"); state the value correction{' to ' + amended[0] if amended else ''} as an integration issue.",
                record_id=amended[0] if amended else "",
                line=amendment.line,
            )


def _amended_ids(report: ParsedReport) -> list[str]:
    amended = []
    for amendment in report.amendments:
        if amendment.kind != "amendment":
            continue
        ids = ids_in(amendment.text)
        if ids:
            amended.append(ids[0])
    return amended


_AMENDED_LINE_RE = re.compile(r"^\W*Amended or superseded records\W*:(.*)$", re.IGNORECASE)


def amendment_findings(
    members: Sequence[MemberInput], declared_in: Mapping[str, list], current_by_member: Mapping[str, bool]
) -> list[Finding]:
    findings = []
    reconciliations = [m for m in members if m.role == "reconciliation"]
    for m in reconciliations:
        if not current_by_member[m.name]:
            continue
        for amendment in m.report.amendments:
            match = _supersession(amendment.text, m.report.links_form) if amendment.kind == "amendment" else None
            if not match:
                continue
            for record_id in filter(None, (match.group("old"), match.group("new"), match.group("also"))):
                if record_id not in declared_in:
                    findings.append(
                        Finding(
                            "amendment-id-undeclared",
                            ERROR,
                            m.name,
                            record_id,
                            amendment.line,
                            f"The amendment names {record_id}, which no member declares; supersession is between two declared records.",
                        )
                    )
    if len(reconciliations) != 1:
        return findings
    amended = set(_amended_ids(reconciliations[0].report))
    for m in members:
        if m.role != "overview":
            continue
        lines = [(n, l) for n, l in prose_lines(m.report) if _AMENDED_LINE_RE.match(l)]
        severity = severity_of(current_by_member[m.name])
        if not lines:
            if amended:
                findings.append(
                    Finding(
                        "amended-records-mismatch",
                        severity,
                        m.name,
                        "",
                        0,
                        f"The reconciliation amends {', '.join(sorted(amended))}, but the overview has no \"Amended or superseded records:\" line; add it.",
                    )
                )
            continue
        number, line = lines[0]
        listed = set(ids_in(_AMENDED_LINE_RE.match(line).group(1)))
        if listed != amended:
            missing = sorted(amended - listed)
            extra = sorted(listed - amended)
            parts = []
            if missing:
                parts.append(f"add {', '.join(missing)}")
            if extra:
                parts.append(f"remove {', '.join(extra)}")
            findings.append(
                Finding(
                    "amended-records-mismatch",
                    severity,
                    m.name,
                    "",
                    number,
                    f"\"Amended or superseded records:\" must list exactly the IDs the reconciliation amends ({', '.join(sorted(amended)) or 'none'}); {' and '.join(parts)}.",
                )
            )
    return findings

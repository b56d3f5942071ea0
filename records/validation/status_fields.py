"""Conclusion-status and guarantee-strength fields: exact values in the current form, a readable
status in older prose.
"""
from __future__ import annotations

import re
from collections import Counter

from records.document import ParsedReport

from .findings import ERROR, WARNING, Collector
from .reading import excluded_lines, strip_ticks
from .vocabulary import CONCLUSION_VALUES, GUARANTEE_VALUES

_STATUS_LABEL_RE = re.compile(r"conclusion status$", re.IGNORECASE)
_PROSE_STATUS_RE = re.compile(
    r"((?:[A-Za-z-]+ )?conclusion status)\s*:\s*(.*?)(?=(?:[A-Za-z-]+ )?conclusion status\s*:|$)", re.IGNORECASE
)


def check_status_fields(out: Collector, report: ParsedReport, current: bool) -> None:
    records = [(d.record_id, d.kind, d.fields, d.text, d.line_start, True) for d in report.declarations]
    records += [(a.target, "", a.fields, a.text, a.line_start, False) for a in report.annotations]
    excluded = excluded_lines(report)
    for record_id, kind, fields, text, line_start, is_declaration in records:
        if current:
            _check_status_current(out, record_id, kind, fields, line_start, is_declaration)
        else:
            _check_status_older(out, record_id, kind, text, line_start, excluded, is_declaration)


def _check_status_current(out, record_id, kind, fields, line_start, is_declaration) -> None:
    labels: Counter = Counter()
    status_count = 0
    for field in fields:
        label = field.label.strip()
        if _STATUS_LABEL_RE.search(label):
            status_count += 1
            values, code = CONCLUSION_VALUES, "invalid-conclusion-status"
        elif label.lower() == "guarantee strength":
            values, code = GUARANTEE_VALUES, "invalid-guarantee-strength"
        else:
            continue
        labels[label.lower()] += 1
        if labels[label.lower()] == 2:
            out.add(
                "duplicate-status-label",
                ERROR,
                f"{record_id} has \"{label}\" twice (labels are compared case-insensitively); keep one value per field.",
                record_id=record_id,
                line=field.line,
            )
        if strip_ticks(field.value) not in values:
            out.add(
                code,
                ERROR,
                f"\"{label}: {field.value.strip()}\" must hold exactly one of: {', '.join(values)} — nothing else on the line.",
                record_id=record_id,
                line=field.line,
            )
    if is_declaration and kind == "RTE" and status_count == 0:
        out.add(
            "missing-conclusion-status",
            ERROR,
            f"Route {record_id} states no conclusion status; add at least one `- <layer> conclusion status: <value>` bullet.",
            record_id=record_id,
            line=line_start,
        )


def _check_status_older(out, record_id, kind, text, line_start, excluded, is_declaration) -> None:
    status_count = 0
    for offset, line in enumerate(text.splitlines()):
        number = line_start + offset
        if number in excluded:
            continue
        for match in _PROSE_STATUS_RE.finditer(line):
            status_count += 1
            value = strip_ticks(match.group(2))
            value = value.lstrip("`*_ ").lower()
            if not any(value.startswith(v) for v in CONCLUSION_VALUES):
                out.add(
                    "unreadable-conclusion-status",
                    WARNING,
                    f"\"{match.group(1)}: {match.group(2).strip()[:60]}\" does not begin with one of: {', '.join(CONCLUSION_VALUES)}.",
                    record_id=record_id,
                    line=number,
                )
    if is_declaration and kind == "RTE" and status_count == 0:
        out.add(
            "missing-conclusion-status",
            WARNING,
            f"Route {record_id} states no readable conclusion status (older form: accepted, but the status cannot be read).",
            record_id=record_id,
            line=line_start,
        )

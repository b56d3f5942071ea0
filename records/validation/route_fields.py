"""The seven route fields every route states: bullets in the current form, labels in older prose.
"""
from __future__ import annotations

import re

from records.document import Declaration, ParsedReport

from .findings import ERROR, WARNING, Collector
from .reading import excluded_lines, strip_ticks
from .vocabulary import ROUTE_FIELDS


def check_route_fields(out: Collector, report: ParsedReport, current: bool) -> None:
    excluded = excluded_lines(report)
    for decl in report.declarations:
        if decl.kind != "RTE":
            continue
        if current:
            _check_route_fields_current(out, decl)
        else:
            _check_route_fields_older(out, decl, excluded)


_REASON_RE = re.compile(r"^(inapplicable|uninspected)\b(.*)$", re.IGNORECASE | re.DOTALL)


def _check_route_fields_current(out: Collector, decl: Declaration) -> None:
    wanted = {label.lower(): label for label in ROUTE_FIELDS}
    seen: dict[str, int] = {}
    for field in decl.fields:
        key = field.label.strip().lower()
        if key not in wanted or not field.bullet:
            continue
        label = wanted[key]
        if key in seen:
            out.add(
                "duplicate-route-field",
                ERROR,
                f"Route {decl.record_id} gives \"{label}\" twice; keep one bullet.",
                record_id=decl.record_id,
                line=field.line,
            )
            continue
        seen[key] = field.line
        value = field.value.strip()
        if not strip_ticks(value):
            out.add(
                "empty-route-field",
                ERROR,
                f"Route {decl.record_id} leaves \"{label}\" empty; state it, or write `inapplicable — reason` / `uninspected — reason`.",
                record_id=decl.record_id,
                line=field.line,
            )
            continue
        match = _REASON_RE.match(strip_ticks(value))
        if match and not re.match(r"^\s*[—–]\s*\S", match.group(2)):
            out.add(
                "route-field-needs-reason",
                ERROR,
                f"Route {decl.record_id}: \"{label}: {value}\" needs its reason, written `{match.group(1).lower()} — reason`.",
                record_id=decl.record_id,
                line=field.line,
            )
    for key, label in wanted.items():
        if key not in seen:
            out.add(
                "missing-route-field",
                ERROR,
                f"Route {decl.record_id} has no \"- {label}:\" bullet; add it (unindented, in the route's own region).",
                record_id=decl.record_id,
                line=decl.line_start,
            )


def _check_route_fields_older(out: Collector, decl: Declaration, excluded: set[int]) -> None:
    prose = "\n".join(
        line for offset, line in enumerate(decl.text.splitlines()) if decl.line_start + offset not in excluded
    ).lower()
    missing = [label for label in ROUTE_FIELDS if f"{label.lower()}:" not in prose]
    if missing:
        out.add(
            "missing-route-field",
            WARNING,
            f"Route {decl.record_id} does not label {', '.join(missing)} (older compact form: accepted, but these fields cannot be read).",
            record_id=decl.record_id,
            line=decl.line_start,
        )

"""Which generation a member is written in (read from its own IDs, then its front matter `type`),
and each finding held to the severity that generation gives it (records.validation.generation_rules).
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from records import ids
from records.document import ParsedReport

from . import generation_rules
from .findings import Finding, MemberInput
from .reading import front_of, is_record_id


def _report_generation(report: ParsedReport) -> str:
    """A generation of `records.ids` read from the member's own IDs (declarations,
    else annotations, else references), then its front matter `type`; "" when
    neither tells."""
    shapes = [d.record_id for d in report.declarations if is_record_id(d.record_id)]
    if not shapes:
        shapes = [a.target for a in report.annotations if is_record_id(a.target)]
    if not shapes:
        shapes = [r.record_id for r in report.references if is_record_id(r.record_id)]
    if shapes:
        return ids.generation_of(shapes)
    doc_type = report.doc_type or str(front_of(report).get("type", ""))
    if doc_type.startswith("agentic-system-analyses/"):
        return ids.GENERATION_SLUG
    if doc_type.startswith("agentic-systems/"):
        return ids.GENERATION_PREFIXED
    return ""


def current_form(members: Sequence[MemberInput]) -> dict[str, bool]:
    """Per member name, whether the member is held to the current form: its own generation, else (a member
    naming no record) the generation most of its set is written in, else the parser's guess. Validation's
    rule, asked by the quotation check too (records.services.snapshots)."""
    generations = {m.name: _report_generation(m.report) for m in members}
    known = [g for g in generations.values() if g]
    set_generation = Counter(known).most_common(1)[0][0] if known else ""
    return {m.name: (generations[m.name] or set_generation or m.report.generation) == ids.GENERATION_SLUG
            for m in members}


def held_to_generation(findings: Iterable[Finding], current_by_member: Mapping[str, bool]) -> list[Finding]:
    """Each finding at the severity its member's generation holds it to (records.validation.generation_rules);
    a rule the member's generation did not have is dropped. Findings about no member stay."""
    kept = []
    for finding in findings:
        if finding.member not in current_by_member:
            kept.append(finding)
            continue
        severity = generation_rules.held_to(finding.code, current=current_by_member[finding.member], severity=finding.severity)
        if severity is not None:
            kept.append(finding if severity == finding.severity else dataclasses.replace(finding, severity=severity))
    return kept

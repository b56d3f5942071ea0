"""The two entry points: one member on its own, and a set with the checks across it; each member's
checks run in the order listed in `_member_findings`.
"""
from __future__ import annotations

from typing import Collection, Sequence

from .amendments import check_amendment_form
from .findings import Finding, MemberInput, RunFacts, Collector, sorted_findings
from .front_matter import check_boundary_facts, check_identity
from .generation import held_to_generation, current_form
from .links import check_blockers, check_links_declarations
from .lookalikes import check_lookalikes
from .memory_profile import check_profile_shape
from .part_of import check_part_of
from .record_ids import check_annotations, check_declared_ids, check_malformed_ids
from .references import check_ranges
from .route_fields import check_route_fields
from .sections import (
    check_reconciliation_section,
    check_sections,
    check_shared_records,
    check_validation_pending,
)
from .set_checks import set_findings
from .sources import check_prose_anchors, check_quotations, check_source_register
from .status_fields import check_status_fields


def validate_member(member: MemberInput, run: RunFacts) -> list[Finding]:
    """Findings about one member on its own (no references across the set)."""
    current_by_member = current_form([member])
    findings = _member_findings(member, run, current=current_by_member[member.name])
    return sorted_findings(held_to_generation(findings, current_by_member))


def validate_set(
    members: Sequence[MemberInput],
    run: RunFacts,
    *,
    canonical_ids: Collection[str] = (),
    extra_mappings: Sequence[tuple[str, str, str]] = (),
) -> list[Finding]:
    """Member-level findings of every member plus the checks across the set."""
    current_by_member = current_form(members)
    findings: list[Finding] = []
    for m in members:
        findings.extend(_member_findings(m, run, current=current_by_member[m.name]))
    findings.extend(set_findings(members, run, current_by_member, canonical_ids, extra_mappings))
    return sorted_findings(held_to_generation(findings, current_by_member))


def _member_findings(member: MemberInput, run: RunFacts, *, current: bool) -> list[Finding]:
    out = Collector(member.name)
    report = member.report
    check_identity(out, report, run, current)
    check_sections(out, member, current)
    check_shared_records(out, member, current)
    check_validation_pending(out, member)
    check_declared_ids(out, member, current)
    check_malformed_ids(out, report, current)
    check_annotations(out, report)
    check_part_of(out, report, current)
    check_ranges(out, report, current)
    check_status_fields(out, report, current)
    check_route_fields(out, report, current)
    check_source_register(out, report, run, current)
    check_quotations(out, report, run, current)
    check_prose_anchors(out, report, current)
    check_amendment_form(out, member, current)
    check_boundary_facts(out, member)
    check_reconciliation_section(out, member)
    check_profile_shape(out, member, current)
    check_links_declarations(out, member)
    check_blockers(out, member)
    check_lookalikes(out, report)
    return out.findings

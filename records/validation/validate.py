"""The two entry points: one member on its own, and a set with the checks across it; each member's
checks run in the order listed in `_member_findings`.
"""
from __future__ import annotations

from typing import Collection, Sequence

from .amendments import _check_amendment_form
from .findings import Finding, MemberInput, RunFacts, _Collector, _sorted
from .front_matter import _check_boundary_facts, _check_identity
from .generation import _held_to_generation, current_form
from .links import check_blockers, check_links_declarations
from .lookalikes import check_lookalikes
from .memory_profile import _check_profile_shape
from .part_of import _check_part_of
from .record_ids import _check_annotations, _check_declared_ids, _check_malformed_ids
from .references import _check_ranges
from .route_fields import _check_route_fields
from .sections import (
    _check_reconciliation_section,
    _check_sections,
    _check_shared_records,
    _check_validation_pending,
)
from .set_checks import _set_findings
from .sources import _check_prose_anchors, _check_quotations, _check_source_register
from .status_fields import _check_status_fields


def validate_member(member: MemberInput, run: RunFacts) -> list[Finding]:
    """Findings about one member on its own (no references across the set)."""
    current_by_member = current_form([member])
    findings = _member_findings(member, run, current=current_by_member[member.name])
    return _sorted(_held_to_generation(findings, current_by_member))


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
    findings.extend(_set_findings(members, run, current_by_member, canonical_ids, extra_mappings))
    return _sorted(_held_to_generation(findings, current_by_member))


def _member_findings(member: MemberInput, run: RunFacts, *, current: bool) -> list[Finding]:
    out = _Collector(member.name)
    report = member.report
    _check_identity(out, report, run, current)
    _check_sections(out, member, current)
    _check_shared_records(out, member, current)
    _check_validation_pending(out, member)
    _check_declared_ids(out, member, current)
    _check_malformed_ids(out, report, current)
    _check_annotations(out, report)
    _check_part_of(out, report, current)
    _check_ranges(out, report, current)
    _check_status_fields(out, report, current)
    _check_route_fields(out, report, current)
    _check_source_register(out, report, run, current)
    _check_quotations(out, report, run, current)
    _check_prose_anchors(out, report, current)
    _check_amendment_form(out, member, current)
    _check_boundary_facts(out, member)
    _check_reconciliation_section(out, member)
    _check_profile_shape(out, member, current)
    check_links_declarations(out, member)
    check_blockers(out, member)
    check_lookalikes(out, report)
    return out.findings

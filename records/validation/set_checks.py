"""The checks across a run's set: duplicate declarations, unknown sources, unresolved and ambiguous
references, then each rule family's set-level check.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Collection, Mapping, Sequence

from .amendments import amendment_findings
from .findings import ERROR, WARNING, Finding, MemberInput, RunFacts, severity_of
from .links import citation_findings, limit_findings, links_form_by_member
from .mappings import mapping_findings
from .memory_profile import profile_resolution
from .part_of import part_of_resolution
from .reading import is_record_id, is_source_id
from .record_ids import slug_parent
from .references import is_result_member, references_of, Suggestions
from .sources import quoted_paths


def set_findings(
    members: Sequence[MemberInput],
    run: RunFacts,
    current_by_member: Mapping[str, bool],
    canonical_ids: Collection[str],
    extra_mappings: Sequence[tuple[str, str, str]],
) -> list[Finding]:
    declared_in: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for m in members:
        for decl in m.report.declarations:
            declared_in[decl.record_id].append((m.name, decl.line_start))
    role_of = {m.name: m.role for m in members}
    resolvable = set(declared_in) | set(canonical_ids)
    links_by_member = links_form_by_member(members)
    references = _References(declared_in, role_of, resolvable, {row.source_id for m in members for row in m.report.sources})

    findings = _duplicate_declarations(declared_in, role_of)
    for m in members:
        if links_by_member[m.name]:
            findings.extend(references.unknown_sources(m))  # a bare ID is a mention there; citations resolve below
        else:
            findings.extend(references.findings(m, current_by_member[m.name]))
    findings.extend(part_of_resolution(members, resolvable))
    findings.extend(citation_findings(members, links_by_member))
    findings.extend(limit_findings(members))
    findings.extend(profile_resolution(members, resolvable))
    findings.extend(mapping_findings(members, extra_mappings))
    findings.extend(amendment_findings(members, declared_in, current_by_member))
    findings.extend(quoted_paths(members))
    findings.extend(_no_source_register(members))
    return findings


def _duplicate_declarations(declared_in: Mapping[str, list[tuple[str, int]]], role_of: Mapping[str, str]) -> list[Finding]:
    """Duplicate declarations across members. A result restates the canonical records, so its
    declarations are not duplicates of the members'."""
    findings = []
    for record_id, places in sorted(declared_in.items()):
        groups: dict[bool, list[tuple[str, int]]] = defaultdict(list)
        for name, line in places:
            groups[role_of[name] == "result"].append((name, line))
        for group in groups.values():
            member_names = sorted({name for name, _ in group})
            if len(member_names) < 2:
                continue
            for name, line in group:
                others = ", ".join(n for n in member_names if n != name)
                findings.append(Finding(
                    "duplicate-declaration-across-members", ERROR, name, record_id, line,
                    f"{record_id} is also declared in {others}; IDs are unique across the run's set — keep the owner's declaration and annotate it elsewhere.",
                ))
    return findings


class _References:
    """One member's references judged against the run's set: unknown sources, unresolved, slug-extended
    and ambiguous record IDs, in the order the member makes them."""

    def __init__(self, declared_in, role_of, resolvable: set[str], sources: set[str]):
        self.declared_in, self.role_of, self.resolvable, self.sources = declared_in, role_of, resolvable, sources
        self.suggest = Suggestions(resolvable)

    def unknown_sources(self, m: MemberInput) -> list[Finding]:
        return [self._unknown_source(m, ref, line) for ref, line in references_of(m)
                if is_source_id(ref) and ref not in self.sources]

    def _unknown_source(self, m: MemberInput, record_id: str, line: int) -> Finding:
        return Finding("unknown-source", ERROR, m.name, record_id, line,
                       f"{record_id} is not in any Source register of this run; register it or cite a registered source.")

    def findings(self, m: MemberInput, current: bool) -> list[Finding]:
        excused = {s.source for s in m.report.mappings} if is_result_member(m) else set()
        found = []
        for record_id, line in references_of(m):
            if is_source_id(record_id):
                if record_id not in self.sources:
                    found.append(self._unknown_source(m, record_id, line))
            elif not is_record_id(record_id) or record_id in excused:
                continue  # an imported result's proposal IDs live in a memory report outside the run
            elif record_id not in self.resolvable:
                found.append(self._unresolved(m, record_id, line))
            elif self._ambiguous(record_id):
                found.append(Finding(
                    "ambiguous-reference", severity_of(current), m.name, record_id, line,
                    f"{record_id} is declared more than once in this run, so this reference is ambiguous; resolve the duplicate declaration.",
                ))
        return found

    def _unresolved(self, m: MemberInput, record_id: str, line: int) -> Finding:
        parent = slug_parent(record_id)
        if parent and parent in self.resolvable:
            return Finding(
                "slug-extends-declared-id", ERROR, m.name, record_id, line,
                f"{record_id} is the declared ID {parent} plus a word; write {parent} (and any following word apart from it) or declare a distinct record.",
            )
        return Finding(
            "unresolved-reference", ERROR, m.name, record_id, line,
            f"{record_id} is not declared by any member of this run nor among its canonical records.{self.suggest(record_id)}",
        )

    def _ambiguous(self, record_id: str) -> bool:
        places = self.declared_in.get(record_id, ())
        return len(places) > 1 and len({n for n, _ in places if self.role_of[n] != "result"}) > 1


def _no_source_register(members: Sequence[MemberInput]) -> list[Finding]:
    if any(m.report.sources for m in members) or not any(
        is_source_id(ref) for m in members for ref, _ in references_of(m)
    ):
        return []
    return [Finding(
        "no-source-register", WARNING, members[0].name, "", 0,
        "No member of this run carries a Source register; upload the overview or boundary member that registers the sources.",
    )]

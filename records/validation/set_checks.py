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
    findings: list[Finding] = []
    declared_in: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for m in members:
        for decl in m.report.declarations:
            declared_in[decl.record_id].append((m.name, decl.line_start))
    role_of = {m.name: m.role for m in members}
    sources = {row.source_id for m in members for row in m.report.sources}
    canonical = set(canonical_ids)
    resolvable = set(declared_in) | canonical
    suggest = Suggestions(resolvable)
    links_by_member = links_form_by_member(members)

    # Duplicate declarations across members. A result restates the canonical
    # records, so its declarations are not duplicates of the members'.
    for record_id, places in sorted(declared_in.items()):
        groups: dict[bool, list[tuple[str, int]]] = defaultdict(list)
        for name, line in places:
            groups[role_of[name] == "result"].append((name, line))
        for is_result, group in groups.items():
            member_names = sorted({name for name, _ in group})
            if len(member_names) < 2:
                continue
            for name, line in group:
                others = ", ".join(n for n in member_names if n != name)
                findings.append(
                    Finding(
                        "duplicate-declaration-across-members",
                        ERROR,
                        name,
                        record_id,
                        line,
                        f"{record_id} is also declared in {others}; IDs are unique across the run's set — keep the owner's declaration and annotate it elsewhere.",
                    )
                )

    for m in members:
        current = current_by_member[m.name]
        excused = {s.source for s in m.report.mappings} if is_result_member(m) else set()
        for record_id, line in references_of(m):
            if is_source_id(record_id):
                if record_id not in sources:
                    findings.append(
                        Finding(
                            "unknown-source",
                            ERROR,
                            m.name,
                            record_id,
                            line,
                            f"{record_id} is not in any Source register of this run; register it or cite a registered source.",
                        )
                    )
                continue
            if not is_record_id(record_id):
                continue
            if links_by_member[m.name]:
                continue  # a bare ID is a mention there; its citations are resolved by destination below
            if record_id in excused:
                continue  # an imported result's proposal IDs live in a memory report outside the run
            if record_id not in resolvable:
                parent = slug_parent(record_id)
                if parent and parent in resolvable:
                    findings.append(
                        Finding(
                            "slug-extends-declared-id",
                            ERROR,
                            m.name,
                            record_id,
                            line,
                            f"{record_id} is the declared ID {parent} plus a word; write {parent} (and any following word apart from it) or declare a distinct record.",
                        )
                    )
                    continue
                findings.append(
                    Finding(
                        "unresolved-reference",
                        ERROR,
                        m.name,
                        record_id,
                        line,
                        f"{record_id} is not declared by any member of this run nor among its canonical records.{suggest(record_id)}",
                    )
                )
            elif len(declared_in.get(record_id, ())) > 1 and len({n for n, _ in declared_in[record_id] if role_of[n] != 'result'}) > 1:
                findings.append(
                    Finding(
                        "ambiguous-reference",
                        severity_of(current),
                        m.name,
                        record_id,
                        line,
                        f"{record_id} is declared more than once in this run, so this reference is ambiguous; resolve the duplicate declaration.",
                    )
                )

    findings.extend(part_of_resolution(members, resolvable))
    findings.extend(citation_findings(members, links_by_member))
    findings.extend(limit_findings(members))
    findings.extend(profile_resolution(members, resolvable))
    findings.extend(mapping_findings(members, extra_mappings))
    findings.extend(amendment_findings(members, declared_in, current_by_member))
    findings.extend(quoted_paths(members))
    if not any(m.report.sources for m in members) and any(
        ref for m in members for ref, _ in references_of(m) if is_source_id(ref)
    ):
        findings.append(
            Finding(
                "no-source-register",
                WARNING,
                members[0].name,
                "",
                0,
                "No member of this run carries a Source register; upload the overview or boundary member that registers the sources.",
            )
        )
    return findings

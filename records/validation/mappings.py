"""Mappings across the set: a record maps only to a canonical record of its own kind, and each new
canonical ID is allocated once.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from .findings import ERROR, Finding, MemberInput
from .reading import split_id


def mapping_findings(members: Sequence[MemberInput], extra_mappings: Sequence[tuple[str, str, str]]) -> list[Finding]:
    findings = []
    for m in members:
        for mapping in m.report.mappings:
            source_kind, target_kind = split_id(mapping.source)[1], split_id(mapping.target)[1]
            if source_kind and target_kind and source_kind != target_kind:
                findings.append(
                    Finding(
                        "mapping-kind-mismatch",
                        ERROR,
                        m.name,
                        mapping.source,
                        mapping.line,
                        f"{mapping.source} ({source_kind}) is mapped to {mapping.target} ({target_kind}); a record maps only to a canonical record of its own kind.",
                    )
                )
    allocated: dict[str, list[str]] = defaultdict(list)
    for source, relation, target in extra_mappings:
        target = target or ""
        source_kind, target_kind = split_id(source)[1], split_id(target)[1]
        if source_kind and target_kind and source_kind != target_kind:
            findings.append(
                Finding(
                    "mapping-kind-mismatch",
                    ERROR,
                    "",
                    source,
                    0,
                    f"The {relation} mapping {source} ({source_kind}) → {target} ({target_kind}) joins records of different kinds; choose a target of kind {source_kind}.",
                )
            )
        if relation == "new" and target:
            allocated[target].append(source)
    for target, sources in sorted(allocated.items()):
        if len(sources) > 1:
            findings.append(
                Finding(
                    "canonical-id-allocated-twice",
                    ERROR,
                    "",
                    target,
                    0,
                    f"Canonical ID {target} is allocated by {len(sources)} new mappings ({', '.join(sorted(sources))}); each new record gets its own ID.",
                )
            )
    return findings

"""What the audit trail records of each decidable row, before and after a change."""
from __future__ import annotations

from typing import Any


from ..models import AmendmentDecision, CanonicalRecord, IssueDecision, Mapping


def mapping_snapshot(mapping: Mapping) -> dict[str, Any]:
    return {"source": mapping.source, "relation": mapping.relation, "target": mapping.target,
            "state": mapping.state, "version": mapping.version, "origin": mapping.origin,
            "rationale": mapping.rationale}


def issue_snapshot(decision: IssueDecision) -> dict[str, Any]:
    return {"issue": decision.issue_id, "state": decision.state, "version": decision.version,
            "rationale": decision.rationale, "content_sha256": decision.issue.content_sha256}


def amendment_snapshot(amendment: AmendmentDecision) -> dict[str, Any]:
    return {"kind": amendment.kind, "member_version": amendment.member_version_id, "index": amendment.index,
            "line": amendment.line, "state": amendment.state, "version": amendment.version,
            "rationale": amendment.rationale, "content_sha256": amendment.content_sha256,
            "mapping": amendment.mapping_id}


def canonical_snapshot(record: CanonicalRecord) -> dict[str, Any]:
    return {"canonical_id": record.canonical_id, "kind": record.kind, "origin": record.origin,
            "state": record.state, "version": record.version, "rationale": record.rationale}

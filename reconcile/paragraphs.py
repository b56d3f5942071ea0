"""Amendment and unresolved-conflict paragraphs as reconciliation reads them from a parsed member:
their content hash, their order, and the supersessions they state (DESIGN §2, §6)."""
from __future__ import annotations

import hashlib
from dataclasses import asdict
from typing import Any

from records import parsed as parse_cache
from records.models import MemberVersion, Role

from .models import AmendmentDecision, Mapping
from .statements import statement_key, superseded_pairs

# The members whose `X is superseded by Y` amendments sync turns into mappings, with those mappings' origin.
STATING_ORIGINS = {Role.RECONCILIATION: Mapping.Origin.RECONCILIATION, Role.RESULT: Mapping.Origin.RESULT}


def amendment_sha256(kind: str, text: str) -> str:
    """The content hash of one paragraph as labelled: `Amendment: …` or `Unresolved conflict: …`."""
    return hashlib.sha256(f"{AmendmentDecision.KIND_LABELS.get(kind, kind)}: {text}".encode("utf-8")).hexdigest()


def stated_paragraphs(version: MemberVersion) -> list[dict[str, Any]]:
    """The version's amendment and conflict paragraphs (kind, text, line, references) in order, as the
    parser stored them; paragraph i (from 1) is `AmendmentDecision.index` i."""
    parsed = version.parsed or {}
    if "amendments" in parsed:
        return list(parsed["amendments"])
    return [asdict(a) for a in parse_cache.version_report(version).amendments]


def supersession_keys(role: str, kind: str, text: str) -> list[tuple[str, str]]:
    """(origin, origin_key) of each supersedes mapping sync derives from this paragraph; [] when the
    paragraph states no supersession (a value amendment, a conflict, or a member sync does not read)."""
    origin = STATING_ORIGINS.get(role)
    if origin is None or kind != AmendmentDecision.Kind.AMENDMENT:
        return []
    return [(origin, statement_key(old, Mapping.Relation.SUPERSEDES, new)) for old, new in superseded_pairs(text)]

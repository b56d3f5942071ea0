"""The final result's input as plain data: frozen dataclasses the finalization service fills and the
pure renderer (`results.rendering`) reads. Each accepts an instance or a plain mapping of its fields."""
from __future__ import annotations

from dataclasses import dataclass
import re
from typing import Any

from records.ids import KINDS

KIND_ORDER = KINDS  # CMP OBJ RTE CLM ABS BAP, the order of the result's Shared records
PREFIX_ORDER = ("", "RT", "MEM", "EPI")
ROLE_ORDER = (
    "overview",
    "boundary",
    "runtime",
    "memory",
    "workflow",
    "epistemic",
    "memory-profile",
    "reconciliation",
    "synthesis",
    "verification",
    "result",
)
DECISION_WORDS = {"accept": "accepted", "reject": "rejected", "carry": "carried"}

RECORD_ID_RE = re.compile(
    r"^(?:(?P<prefix>[A-Z]+)-)?(?P<kind>CMP|OBJ|RTE|CLM|ABS|BAP)-(?P<tail>[0-9]+|[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*)$"
)
_SOURCE_ID = re.compile(r"^SRC-(?P<number>[0-9]+)$")


@dataclass(frozen=True)
class MemberEntry:
    """One member report version that the result rests on.

    `prose_sections` are (title, text) pairs in the member's own order; the
    text is carried verbatim.
    """

    name: str  # file name, e.g. "memory.md"
    role: str
    version: int
    sha256: str
    boundary_text: str = ""
    prose_sections: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "prose_sections", tuple((str(t), str(x)) for t, x in self.prose_sections)
        )


@dataclass(frozen=True)
class SourceEntry:
    """A Source register row; `columns` are (header, cell) pairs in table order.

    A leading source-ID column, when present, is dropped: the ID is
    `source_id`.
    """

    source_id: str
    columns: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple((str(h), str(c)) for h, c in self.columns))


@dataclass(frozen=True)
class AnnotationEntry:
    member: str  # the member that wrote the annotation
    target: str  # the record ID it was written on, as the member wrote it
    text: str


@dataclass(frozen=True)
class CanonicalEntry:
    canonical_id: str
    kind: str  # CMP, OBJ, RTE, CLM, ABS, BAP
    label: str
    text: str  # the declaration's body, after its heading/label
    annotations: tuple[AnnotationEntry, ...] = ()
    # The member record it was declared as, when the shared set numbers it otherwise (RT-OBJ-2 is OBJ-2,
    # EPI-OBJ-1 entered as OBJ-5), and the member file declaring it: the record's text cites member IDs.
    declared_as: str = ""
    declared_in: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "annotations", tuple(_as(AnnotationEntry, a) for a in self.annotations)
        )


@dataclass(frozen=True)
class MappingEntry:
    source: str  # member record ID
    relation: str  # same, new, part-of, supersedes, no-counterpart
    target: str  # canonical record ID, "" for no-counterpart


@dataclass(frozen=True)
class DispositionEntry:
    """The one disposition of one member record (see `reconcile.dispositions`)."""

    member: str  # the member's role
    record: str
    disposition: str  # mapped, new, no-counterpart, rejected (open never reaches a result)
    relation: str = ""  # same, part-of, supersedes, new, no-counterpart ("" when rejected)
    target: str = ""  # the canonical record ("" for no-counterpart and rejected)
    rationale: str = ""
    # Mappings of the record that lost to the accepted one: (relation, target, rationale) each.
    alternatives: tuple[tuple[str, str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "alternatives", tuple(tuple(str(x) for x in a) for a in self.alternatives))


@dataclass(frozen=True)
class IssueDecision:
    member: str
    index: int  # 1-based position in the member's Integration issues section
    text: str
    decision: str  # "accept" or "reject"
    rationale: str
    decided_by: str


@dataclass(frozen=True)
class AmendmentDecision:
    """A reviewer's decision on one `Amendment:` or `Unresolved conflict:` paragraph."""

    text: str  # the paragraph after `Amendment:` / `Unresolved conflict:`
    decision: str  # "accept", "reject" or "carry" (into Limitations)
    rationale: str
    member: str = ""  # the member file it came from, e.g. "reconciliation.md"
    line: int = 0
    decided_by: str = ""
    # The canonical records whose shared text an accepted value amendment changes (none for a
    # supersession, or when the paragraph opens with no record of the shared set): shown under each.
    amends: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        amends = (self.amends,) if isinstance(self.amends, str) else self.amends
        object.__setattr__(self, "amends", tuple(str(a) for a in amends if a))


@dataclass(frozen=True)
class RejectedItem:
    item: str  # what was rejected, e.g. "mapping MEM-OBJ-2 → OBJ-3"
    consequence: str  # what the result cannot say because of it
    rationale: str = ""
    # For a rejected canonical record: its canonical ID, and the member ID it was declared as when that
    # differs (RT-OBJ-3 seeded OBJ-3), so prose naming either is read as naming a rejected record.
    record: str = ""
    declared_as: str = ""


@dataclass(frozen=True)
class Verification:
    approval_note: str
    approved_by: str
    approved_at: str  # ISO 8601, supplied by the caller (never computed here)
    errors: int
    warnings: int
    manifest_sha256: str
    checks: tuple[str, ...] = ()
    quotations: str = ""  # "N of M quotations verified against snapshot <sha256>" (records.services.snapshots)

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", tuple(str(c) for c in self.checks))


@dataclass(frozen=True)
class CorrectionEntry:
    """A correction request of the run, as it ended."""

    number: int
    member: str
    record: str
    text: str
    author: str
    state: str
    answer: str = ""
    answer_text: str = ""
    answered_in: str = ""  # "memory v2"


@dataclass(frozen=True)
class ResultInput:
    run_id: str
    system: str
    title: str
    run_date: str
    result_disposition: str
    target_class: str
    boundary_kind: str
    reviewed_boundary: str
    evidence_tier: str
    analysis_cutoff: str
    verification: Verification
    memory_comparison: dict | None = None
    members: tuple[MemberEntry, ...] = ()
    sources: tuple[SourceEntry, ...] = ()
    canonical_records: tuple[CanonicalEntry, ...] = ()
    mappings: tuple[MappingEntry, ...] = ()
    integration_issues: tuple[IssueDecision, ...] = ()
    amendments: tuple[AmendmentDecision, ...] = ()
    # Each with its decision; a bare string is a conflict carried without a recorded decision.
    unresolved_conflicts: tuple[AmendmentDecision, ...] = ()
    rejected_items: tuple[RejectedItem, ...] = ()
    blockers: tuple[str, ...] = ()
    dispositions: tuple[DispositionEntry, ...] = ()
    corrections: tuple[CorrectionEntry, ...] = ()
    # Plain JSON (reconcile.passes.record.independent_reviews) for a run that took independent reviews.
    independent_reviews: dict | None = None

    def __post_init__(self) -> None:
        for name, cls in (
            ("members", MemberEntry),
            ("sources", SourceEntry),
            ("canonical_records", CanonicalEntry),
            ("mappings", MappingEntry),
            ("integration_issues", IssueDecision),
            ("amendments", AmendmentDecision),
            ("rejected_items", RejectedItem),
            ("dispositions", DispositionEntry),
            ("corrections", CorrectionEntry),
        ):
            object.__setattr__(self, name, tuple(_as(cls, item) for item in getattr(self, name)))
        object.__setattr__(self, "unresolved_conflicts", tuple(
            AmendmentDecision(item, "carry", "") if isinstance(item, str) else _as(AmendmentDecision, item)
            for item in self.unresolved_conflicts))
        object.__setattr__(self, "blockers", tuple(str(item) for item in self.blockers))
        object.__setattr__(self, "verification", _as(Verification, self.verification))


def _as(cls: type, value: Any) -> Any:
    """Accept either an instance or a plain mapping/sequence of its fields."""
    if isinstance(value, cls):
        return value
    if isinstance(value, dict):
        return cls(**value)
    return cls(*value)


# --- ordering: lists whose order carries no meaning are sorted, so query order never shows ---


def record_sort_key(record_id: str, kind: str = "") -> tuple:
    """Kind order CMP OBJ RTE CLM ABS BAP, then prefix, then number or slug."""
    match = RECORD_ID_RE.match(record_id)
    if match is None:
        kind_rank = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
        return (kind_rank, len(PREFIX_ORDER), 2, 0, record_id)
    found_kind = kind if kind in KIND_ORDER else match["kind"]
    prefix = match["prefix"] or ""
    prefix_rank = PREFIX_ORDER.index(prefix) if prefix in PREFIX_ORDER else len(PREFIX_ORDER)
    tail = match["tail"]
    if tail.isdigit():
        return (KIND_ORDER.index(found_kind), prefix_rank, 0, int(tail), prefix)
    return (KIND_ORDER.index(found_kind), prefix_rank, 1, 0, prefix + "-" + tail)


def source_sort_key(source: SourceEntry) -> tuple:
    match = _SOURCE_ID.match(source.source_id)
    if match is None:
        return (1, 0, source.source_id, source.columns)
    return (0, int(match["number"]), source.source_id, source.columns)


def member_sort_key(member: MemberEntry) -> tuple:
    rank = ROLE_ORDER.index(member.role) if member.role in ROLE_ORDER else len(ROLE_ORDER)
    return (rank, member.role, member.name, member.version, member.sha256)


def mapping_sort_key(mapping: MappingEntry) -> tuple:
    return (
        record_sort_key(mapping.target or mapping.source),
        record_sort_key(mapping.source),
        mapping.source,
        mapping.relation,
        mapping.target,
    )


def sorted_members(data: ResultInput) -> list[MemberEntry]:
    return sorted(data.members, key=member_sort_key)


def sorted_records(data: ResultInput) -> list[CanonicalEntry]:
    return sorted(
        data.canonical_records,
        key=lambda r: (record_sort_key(r.canonical_id, r.kind), r.canonical_id),
    )


def sorted_annotations(record: CanonicalEntry) -> list[AnnotationEntry]:
    return sorted(record.annotations, key=lambda a: (a.member, a.target, a.text))


def sorted_issues(data: ResultInput) -> list[IssueDecision]:
    return sorted(data.integration_issues, key=lambda i: (i.member, i.index, i.text))


def amendment_sort_key(a: AmendmentDecision) -> tuple:
    return (a.text, a.member, a.line, a.decision, a.rationale, a.decided_by)


def sorted_amendments(data: ResultInput) -> list[AmendmentDecision]:
    return sorted(data.amendments, key=amendment_sort_key)


def sorted_conflicts(data: ResultInput) -> list[AmendmentDecision]:
    return sorted(data.unresolved_conflicts, key=amendment_sort_key)


def sorted_rejected(data: ResultInput) -> list[RejectedItem]:
    return sorted(data.rejected_items, key=lambda r: (r.item, r.consequence, r.rationale))

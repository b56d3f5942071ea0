"""Findings grouped the way a reviewer acts on them (issue 12 item 5).

Pure: any objects with `code`, `severity`, `member`, `record_id`, `line` and
`message` (the validator's `Finding` values or the stored rows). One group per
(code, severity) with its count and first locations, root causes first: a
broken identity, manifest or declaration comes before the references it
breaks (a missing register row before the thirty references to it), then
errors before warnings, then the larger group.

A group holds what the run page shows of it, not every finding: its first
FIRST_LOCATIONS + REST_SHOWN locations and its IDS_SHOWN most-named IDs, so that
`records.finding_counts` can read the same groups counted by the database.
Locations and IDs are ordered by code point (`str` order; the database's
`COLLATE "C"`), ties in the order the findings came.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

FIRST_LOCATIONS = 3
# The run page names this many further locations of a group; the members' pages list the rest.
REST_SHOWN = 20
# The most-named IDs a group names (and how many distinct IDs it has).
IDS_SHOWN = 8

# Each tier's findings are causes of the later tiers' findings, never the other way round.
TIERS = (
    # 0: which run and which bytes
    {"front-matter-unreadable", "run-id-mismatch", "reviewed-boundary-mismatch", "manifest-unreadable",
     "malformed-pin", "pin-mismatch", "pinned-file-missing", "member-not-pinned"},
    # 1: what is declared and registered: everything else points at these
    {"malformed-id", "duplicate-declaration", "duplicate-declaration-across-members", "slug-extends-declared-id",
     "foreign-prefix", "annotation-on-own-record", "no-source-register", "no-source-at-boundary",
     "source-row-columns", "duplicate-source", "missing-section", "section-out-of-order",
     "reconciliation-section-count", "missing-kind-heading", "empty-kind-heading", "validation-pending",
     "profile-malformed", "profile-axis-missing", "profile-axis-unknown", "canonical-id-allocated-twice"},
    # 2: the content of one record or paragraph (default for codes not named here)
    set(),
    # 3: references that follow from tiers 0-1
    {"unresolved-reference", "unknown-source", "ambiguous-reference", "part-of-unresolved",
     "profile-record-unresolved", "amendment-id-undeclared", "amended-records-mismatch",
     "quotation-path-not-registered"},
)
_DEFAULT_TIER = 2


class FindingLike(Protocol):
    code: str
    severity: str
    member: str
    record_id: str
    line: int
    message: str


@dataclass(frozen=True)
class Location:
    member: str
    line: int
    record_id: str


# How the run page shows a location (`shown_with_links`): the link to its line of its member's page ("" for
# none), where it is in words ("memory line 12", "run"), and its record ID. A tuple, so that the template
# unpacks it in its loop instead of looking each attribute up.
Shown = tuple[str, str, str]


@dataclass(frozen=True)
class FindingGroup:
    code: str
    severity: str
    count: int
    members: tuple[str, ...]  # every member named, in code point order
    first: tuple[Location, ...]  # the first FIRST_LOCATIONS, in member and line order
    rest: tuple[Location, ...]  # the REST_SHOWN after them
    message: str  # the first finding's message, what to do
    root_cause: bool  # tier 0 or 1: fixing it may clear later groups
    # (ID, how often) most named first, the first IDS_SHOWN: thirty findings may be one missing record
    record_ids: tuple[tuple[str, int], ...] = ()
    record_id_count: int = 0  # how many distinct IDs the group names
    # `first` and `rest` as the page shows them (`shown_with_links`): how they are shown, not what they are.
    first_shown: tuple[Shown, ...] = field(default=(), compare=False)
    rest_shown: tuple[Shown, ...] = field(default=(), compare=False)

    @property
    def rest_more(self) -> int:
        """How many locations the run page leaves to the members' pages."""
        return max(self.count - FIRST_LOCATIONS - REST_SHOWN, 0)


def tier_of(code: str) -> int:
    return next((i for i, codes in enumerate(TIERS) if code in codes), _DEFAULT_TIER)


def make_group(*, code: str, severity: str, count: int, members: Iterable[str], shown: Iterable[Location],
               message: str, record_ids: Iterable[tuple[str, int]], record_id_count: int) -> FindingGroup:
    """A group from what is shown of it: `shown` its first FIRST_LOCATIONS + REST_SHOWN locations in order,
    `record_ids` its first IDS_SHOWN (ID, how often)."""
    shown = tuple(shown)
    return FindingGroup(code=code, severity=severity, count=count, members=tuple(members),
                        first=shown[:FIRST_LOCATIONS], rest=shown[FIRST_LOCATIONS:FIRST_LOCATIONS + REST_SHOWN],
                        message=message, root_cause=tier_of(code) < _DEFAULT_TIER,
                        record_ids=tuple(record_ids)[:IDS_SHOWN], record_id_count=record_id_count)


def ordered(groups: Iterable[FindingGroup]) -> list[FindingGroup]:
    """Root causes first, then errors before warnings, then the larger group."""
    return sorted(groups, key=lambda g: (tier_of(g.code), g.severity != "error", -g.count, g.code, g.severity))


def group_findings(findings: Iterable[FindingLike]) -> list[FindingGroup]:
    grouped: dict[tuple[str, str], list[FindingLike]] = {}
    for finding in findings:
        grouped.setdefault((finding.code, finding.severity), []).append(finding)
    groups = []
    for (code, severity), items in grouped.items():
        items.sort(key=lambda f: (f.member, f.line, f.record_id))
        named = Counter(f.record_id for f in items if f.record_id)
        groups.append(make_group(
            code=code, severity=severity, count=len(items), members=dict.fromkeys(f.member for f in items),
            shown=(Location(f.member, f.line, f.record_id) for f in items[:FIRST_LOCATIONS + REST_SHOWN]),
            message=items[0].message, record_ids=sorted(named.items(), key=lambda item: (-item[1], item[0])),
            record_id_count=len(named),
        ))
    return ordered(groups)


def shown_with_links(groups: Iterable[FindingGroup], pages: Mapping[str, str]) -> list[FindingGroup]:
    """`groups` with their locations as the run page shows them, each that has a line and a member in
    `pages` (member → its page's URL) linked to that line of the page (`?line=N#LN`: the page of records
    that holds it)."""
    def shown(loc: Location) -> Shown:
        where = f"{loc.member or 'run'} line {loc.line}" if loc.line else loc.member or "run"
        link = f"{pages[loc.member]}?line={loc.line}#L{loc.line}" if loc.line and loc.member in pages else ""
        return link, where, loc.record_id
    return [replace(g, first_shown=tuple(map(shown, g.first)), rest_shown=tuple(map(shown, g.rest))) for g in groups]


def blocking_reasons(findings: Iterable[FindingLike], *, roles: Iterable[str], limit: int = 3) -> list[str]:
    """Why a run cannot be approved, in plain words: its largest error groups, root causes first,
    each with what it means for the run's set of members ([] when nothing blocks)."""
    findings = list(findings)
    roles = set(roles)
    errors = [f for f in findings if f.severity == "error"]
    reasons = []
    for group in group_findings(errors)[:limit]:
        named = [f.record_id for f in errors if f.code == group.code and f.record_id]
        distinct = list(dict.fromkeys(named))
        sample = ", ".join(distinct[:3]) + (", …" if len(distinct) > 3 else "")
        reason = f"{group.count} {group.code}" + (f" ({sample})" if sample else "")
        if group.code == "unresolved-reference" and distinct and "runtime" not in roles \
                and all(record_id.startswith("RT-") for record_id in distinct):
            reason += ": it cites runtime records (RT-…) that are not in the run, which has no runtime member"
        elif group.code == "unknown-source" and any(f.code == "no-source-register" for f in findings):
            reason += ": it cites sources, but no member of the run carries a Source register (overview or boundary)"
        elif group.code == "unresolved-reference":
            reason += ": records no member of the run declares"
        reasons.append(reason)
    return reasons

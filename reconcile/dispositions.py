"""One disposition per member record, the facts approval is judged from, and the blockers' codes (DESIGN §5).

Pure: plain frozen dataclasses in, dispositions out; no ORM, no clock. The rules that turn these facts
into blockers are the rule book, `reconcile.approval_rules` (one list, `RULES`); the run page, the
reconciliation page (its counters, its conflicts filter, its approval form), the API (`GET …/blockers/`,
`POST …/approve/` answering 409) and approval itself all ask it, through `reconcile.blockers.run_standing`,
so they can never disagree.

Every record of every non-seeding member (the runtime's and an imported result's declarations
seed the shared set and need no decision) ends with exactly one disposition:

- `mapped`: one accepted `same`, `part-of` or `supersedes` mapping places it (relation, target);
- `new`: one accepted `new` mapping entered it into the shared set under `target`;
- `no-counterpart`: one accepted `no-counterpart` mapping says the shared set has no counterpart;
- `rejected`: no accepted mapping and every mapping of it rejected: it has no place (rationale);
- `open`: no accepted mapping and at least one still open (proposed or stale), or none at all.

A rejected mapping of a record that another, accepted mapping places is a settled choice between
alternatives (it is recorded in the result's Reconciliation with its rationale), never a rejection
of the record.

Blockers carry a `code` (see BLOCKER_CODES), the `record` (or item) they are about, a `message`
that says what to do, and a `link` to the place where it is done. Codes in CONFLICT_CODES are
incoherent decisions: the reconciliation page's conflicts filter shows exactly the rows they name.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from django.urls import reverse

from records import ids

MAPPED, NEW, NO_COUNTERPART, REJECTED, OPEN = "mapped", "new", "no-counterpart", "rejected", "open"
DISPOSITIONS = (MAPPED, NEW, NO_COUNTERPART, REJECTED, OPEN)
# A record with one of these dispositions has a place in (or joined to) the shared set.
PLACED = (MAPPED, NEW)

ACCEPTED, REJECTED_STATE, PROPOSED, STALE, CARRIED = "accepted", "rejected", "proposed", "stale", "carried"
OPEN_STATES = (PROPOSED, STALE)
IDENTITY = ("same", "new")

# Blocker codes. Preconditions and open items first, then incoherent decisions.
RUN_STATUS = "run_status"
NO_MEMBERS = "no_members"
VALIDATION_PENDING = "validation_pending"
VALIDATION_STALE = "validation_stale"
VALIDATION_ERROR = "validation_error"
OPEN_DISPOSITION = "open_disposition"
OPEN_ALTERNATIVE = "open_alternative"
OPEN_ISSUE = "open_issue"
OPEN_AMENDMENT = "open_amendment"
SEVERAL_PLACES = "several_places"
REJECTED_TARGET = "rejected_target"
UNKNOWN_TARGET = "unknown_target"
CONFLICTING_CLAIM = "conflicting_claim"
AMENDMENT_ON_REJECTED = "amendment_on_rejected"
PART_OF_REJECTED = "part_of_rejected"
ISSUE_NAMES_REJECTED = "issue_names_rejected"
CORRECTION_OPEN = "correction_open"
CORRECTION_ANSWERED = "correction_answered"
ALLOCATED_TWICE = "allocated_twice"
# Independent reviews (DESIGN §5): passes still to be submitted; their consensus still being made by a
# worker; a disagreement not yet adjudicated.
PASS_MISSING = "pass_missing"
CONSENSUS_PENDING = "consensus_pending"
CONFLICT_OPEN = "conflict_open"

CONFLICT_CODES = (SEVERAL_PLACES, REJECTED_TARGET, UNKNOWN_TARGET, CONFLICTING_CLAIM, AMENDMENT_ON_REJECTED,
                  PART_OF_REJECTED, ISSUE_NAMES_REJECTED, ALLOCATED_TWICE)
BLOCKER_CODES = (RUN_STATUS, NO_MEMBERS, VALIDATION_PENDING, VALIDATION_STALE, VALIDATION_ERROR, OPEN_DISPOSITION,
                 OPEN_ALTERNATIVE, OPEN_ISSUE, OPEN_AMENDMENT, CORRECTION_OPEN, CORRECTION_ANSWERED, PASS_MISSING,
                 CONSENSUS_PENDING, CONFLICT_OPEN) + CONFLICT_CODES
# What leaves a reviewer's pass unfinished: nothing of these may remain when it is submitted.
OPEN_CODES = (OPEN_DISPOSITION, OPEN_ALTERNATIVE, OPEN_ISSUE, OPEN_AMENDMENT)

def ids_in(text: str) -> list[str]:
    """Every full record ID written in `text`, in order, once each, by the parser's own ID grammar
    (records.ids), so an amendment or `Part of:` names here exactly what the report was read to name."""
    return list(ids.unique_ids(text or ""))


@dataclass(frozen=True)
class RecordFact:
    """A declaration of a current, non-seeding member version (or, with pk None, the source of a mapping
    statement that no member declares: seed 000's `MEM-OBJ-1 → OBJ-5`, member `statements`)."""

    member: str
    record_id: str
    pk: int | None = None
    part_of: tuple[str, ...] = ()  # the IDs its `Part of:` fields name


class MappingFact(NamedTuple):
    """A tuple (a run's mappings are read as rows straight into these, and compared row by row after each
    decision: `reconcile.standing_update`)."""

    pk: int
    source: str
    relation: str
    target: str
    state: str
    rationale: str = ""
    member: str = ""  # the member whose record is the source ("" for a statement without a declaration)


@dataclass(frozen=True)
class CanonicalFact:
    canonical_id: str
    state: str  # "active" or "rejected"
    rationale: str = ""
    source_record_id: str = ""


@dataclass(frozen=True)
class IssueFact:
    pk: int  # the integration issue's pk (the page's row is `issue-<pk>`)
    member: str
    index: int
    state: str  # the decision's state; "proposed" when none is recorded
    references: tuple[str, ...] = ()


@dataclass(frozen=True)
class AmendmentFact:
    pk: int | None  # None: a paragraph sync has not made a decision for yet
    member: str
    line: int
    kind: str  # "amendment" or "unresolved-conflict"
    state: str  # decision state, or "not yet synced" / "text changed since its decision" (both open)
    text: str = ""
    supersession: bool = False  # decided by its supersedes mapping(s), which the mapping checks cover

    @property
    def is_open(self) -> bool:
        return self.state not in (ACCEPTED, REJECTED_STATE, CARRIED)


@dataclass(frozen=True)
class Blocker:
    code: str
    record: str
    message: str
    link: str = ""
    mapping: int | None = None  # the mapping row it is about, for the page's conflicts filter
    item: str = ""  # the decided item that makes it ("mapping:<pk>", "issue:<pk>", "amendment:<pk>")
    # The contradiction as a refused acceptance tells it: the item was not accepted, so the words must
    # not say it is (refuse_incoherent); "" when the message reads true either way.
    refusal: str = ""

    def as_dict(self) -> dict:
        return {"code": self.code, "record": self.record, "message": self.message, "link": self.link}


@dataclass(frozen=True)
class Disposition:
    member: str
    record: str
    disposition: str
    relation: str = ""
    target: str = ""
    rationale: str = ""
    mapping: int | None = None  # the accepted mapping that places it
    # Mappings of the record that lost to the accepted one (rejected alternatives): (relation, target, rationale).
    alternatives: tuple[tuple[str, str, str], ...] = ()

    def as_dict(self) -> dict:
        return {"member": self.member, "record": self.record, "disposition": self.disposition,
                "relation": self.relation or None, "target": self.target or None, "rationale": self.rationale}


@dataclass(frozen=True)
class CorrectionFact:
    """A correction request still waiting: open (for a corrected version) or answered (for a reviewer)."""

    pk: int
    member: str
    record_id: str  # "" when it is about the whole report
    state: str  # "open" or "answered"
    text: str


@dataclass(frozen=True)
class PassesFact:
    """A run in independent review (DESIGN §3): its submitted passes and, once all are in, their consensus."""

    required: int
    submitted: tuple[str, ...] = ()  # the reviewers of the submitted passes, by pass number
    consensus_made: bool = False  # read once every pass is submitted
    conflicts: tuple[tuple[int, str], ...] = ()  # the open conflicts (pk, name), read once the consensus is made


class ErrorFact(NamedTuple):
    """A validation error finding of the run's current report."""

    code: str
    member: str
    record_id: str
    line: int | None
    message: str


@dataclass(frozen=True)
class ValidationFact:
    """The run's validation: the manifest it validated beside the current versions' one (from their recorded
    hashes), and the current manifest's report, read only when the two agree."""

    validated: str  # the run's manifest_sha256 ("" before the first validation)
    current: str
    errors: int | None = None  # the report's error count; None: no report of the current manifest yet
    first_errors: tuple[ErrorFact, ...] = ()  # the first few, in order
    stored: str = ""  # the manifest of the stored bytes hashed now: only approval hashes them, last


IN_REVIEW = "in_review"


@dataclass(frozen=True)
class RunFacts:
    """Everything approval is judged from (`reconcile.approval_rules`), read by `reconcile.blockers.run_facts`.
    The defaults block nothing: a run in review, with members, no correction waiting, one review required
    (`passes` None) and no validation to judge (`validation` None: a run without members has none)."""

    run_id: str
    records: tuple[RecordFact, ...] = ()
    mappings: tuple[MappingFact, ...] = ()
    canonical: tuple[CanonicalFact, ...] = ()
    issues: tuple[IssueFact, ...] = ()
    amendments: tuple[AmendmentFact, ...] = ()
    status: str = IN_REVIEW
    has_members: bool = True
    corrections: tuple[CorrectionFact, ...] = ()
    passes: PassesFact | None = None
    validation: ValidationFact | None = None


@dataclass
class StandingParts:
    """What a standing was built from and of, for `reconcile.standing_update` to build the next one from:
    its facts, its records (statement sources appended), mappings by source, and each record's disposition
    and blockers in record order. Never changed once built (the next standing copies what it replaces);
    `index` and `children` are filled in by the update that first needs them."""

    facts: RunFacts
    records: list[RecordFact]
    by_source: dict[str, list[MappingFact]]
    dispositions: tuple[Disposition, ...]
    per_record: tuple[tuple[Blocker, ...], ...]
    index: dict[str, int] | None = None  # record ID → its place in `records`
    children: dict[str, tuple[str, ...]] | None = None  # record ID → the records `Part of:` it


@dataclass(frozen=True)
class Standing:
    """Where a run stands: one disposition per member record, and everything that blocks approval."""

    dispositions: tuple[Disposition, ...]
    blockers: tuple[Blocker, ...]
    by_record: dict = field(default_factory=dict, compare=False)
    parts: StandingParts | None = field(default=None, compare=False, repr=False)

    @cached_property
    def _conflicts(self) -> dict[int, str]:
        """{mapping pk: the first conflict's message}, found once: the page asks it of every row, and a
        scan of the blockers per row made the page quadratic (9.5 s at 20,000 records, issue 23)."""
        found: dict[int, str] = {}
        for b in self.blockers:
            if b.code in CONFLICT_CODES and b.mapping is not None:
                found.setdefault(b.mapping, b.message)
        return found

    @property
    def conflict_mappings(self) -> set[int]:
        """The mappings an incoherent decision involves: what the page's conflicts filter shows."""
        return set(self._conflicts)

    def conflict_of(self, mapping_pk: int) -> str:
        return self._conflicts.get(mapping_pk, "")

    @cached_property
    def entered_as(self) -> dict[str, str]:
        """member record → the canonical record it is (an accepted same or new mapping), found once per
        standing: a kept standing (`blockers.kept_standing`) answers every page of rows with it."""
        return {d.record: d.target for d in self.dispositions
                if d.target and (d.disposition == NEW or d.relation == "same")}


# --- links ---------------------------------------------------------------------------------------

def _page(run_id: str, member: str = "", anchor: str = "", extra: str = "", *, base: str = "") -> str:
    query = "&".join(p for p in (f"member={member}" if member else "", extra) if p)
    return ((base or reverse("run-reconcile", args=[run_id])) + (f"?{query}" if query else "")
            + (f"#{anchor}" if anchor else ""))


def mapping_link(run_id: str, member: str, pk: int, *, base: str = "") -> str:
    return _page(run_id, member or "statements", f"pair-{pk}", base=base)


# --- dispositions --------------------------------------------------------------------------------

def relation_phrase(source: str, relation: str, target: str) -> str:
    """A mapping in words, the same on the page, in blockers and in the result. `supersedes` comes from
    `Amendment: X is superseded by Y` (source X, target Y's record), so it reads from the target's side:
    "X is superseded by Y", never "X supersedes Y"."""
    if relation == "supersedes":
        return f"{source} is superseded by {target or '∅'}"
    if relation == "new" and not target:
        return f"{source} as a new record"  # the number is allocated on acceptance; a rejected one got none
    return f"{source} {relation} {target or '∅'}"


RELATION_WORDS = {"same": "same", "part-of": "part of", "supersedes": "superseded by", "new": "new"}


def mapping_name(source: str, relation: str, target: str) -> str:
    """A mapping as a reviewer names it, on every page, in the audit timeline and in refusals:
    "EPI-OBJ-1 → OBJ-6 (new)", never "mapping 35" (DESIGN §5 "Words, not codes")."""
    if relation == "no-counterpart":
        return f"{source} (no counterpart)"
    if relation == "new" and not target:
        return f"{source} → a new record"
    return f"{source} → {target or '∅'} ({RELATION_WORDS.get(relation, relation)})"


def dispose(record: RecordFact, mappings: list[MappingFact]) -> Disposition:
    """The one disposition of `record` given all its mappings (any state)."""
    accepted = [m for m in mappings if m.state == ACCEPTED]
    rejected = [m for m in mappings if m.state == REJECTED_STATE]
    is_open = [m for m in mappings if m.state in OPEN_STATES]
    base = dict(member=record.member, record=record.record_id)
    if len(accepted) == 1:
        chosen = accepted[0]
        kind = {"new": NEW, "no-counterpart": NO_COUNTERPART}.get(chosen.relation, MAPPED)
        return Disposition(**base, disposition=kind, relation=chosen.relation,
                           target=chosen.target if chosen.relation != "no-counterpart" else "",
                           rationale=chosen.rationale, mapping=chosen.pk,
                           alternatives=tuple((m.relation, m.target, m.rationale) for m in rejected))
    if len(accepted) > 1:
        return Disposition(**base, disposition=OPEN, rationale="several accepted mappings: "
                           + "; ".join(relation_phrase(record.record_id, m.relation, m.target) for m in accepted))
    if is_open or not mappings:
        return Disposition(**base, disposition=OPEN,
                           rationale="no mapping proposed" if not mappings else "a mapping is still open")
    return Disposition(**base, disposition=REJECTED,
                       rationale="; ".join(dict.fromkeys(m.rationale.strip() for m in rejected if m.rationale.strip()))
                       or "every mapping rejected")


class Reading:
    """What one standing's blockers are judged from (its mappings by source, records, canonical records and
    dispositions) and the links they carry: shared by `approval_rules.standing` and by `reconcile.standing_update`, which
    judges again only the records a decision touched."""

    def __init__(self, facts: RunFacts, by_source: dict[str, list[MappingFact]], records: list[RecordFact],
                 by_record: dict[str, Disposition]):
        self.run_id = facts.run_id
        self.base = reverse("run-reconcile", args=[facts.run_id])  # once: per record, half a standing's time
        self.by_source = by_source
        self.by_record = by_record
        self.members = {r.record_id: r for r in records}
        self.canonical = {c.canonical_id: c for c in facts.canonical}
        self.aliases = {c.source_record_id: c.canonical_id for c in facts.canonical if c.source_record_id}

    def page(self, member: str = "", anchor: str = "", extra: str = "") -> str:
        return _page(self.run_id, member, anchor, extra, base=self.base)

    def link(self, member: str, pk: int) -> str:
        return mapping_link(self.run_id, member, pk, base=self.base)

    def link_of(self, record_id: str) -> str:
        record = self.members.get(record_id)
        rows = self.by_source.get(record_id, [])
        if rows:
            return self.link(record.member if record else "", rows[0].pk)
        if record is not None and record.pk is not None:
            return self.page(record.member, f"record-{record.pk}")
        return self.page()

    def without_place(self, record_id: str) -> str:
        """Why a record named somewhere has no place in the shared set ('' when it has one or is unknown)."""
        disposition = self.by_record.get(record_id)
        if disposition is not None and disposition.disposition in (REJECTED, NO_COUNTERPART):
            why = "every mapping of it was rejected" if disposition.disposition == REJECTED else "it has no counterpart"
            return f"{record_id} has no place in the shared set ({why})"
        target = self.canonical.get(record_id) or self.canonical.get(self.aliases.get(record_id, ""))
        if target is not None and target.state == REJECTED_STATE:
            return f"canonical record {target.canonical_id} was rejected: {quoted(target.rationale)}"
        return ""


def grouped_by_source(mappings) -> dict[str, list[MappingFact]]:
    by_source: dict[str, list[MappingFact]] = defaultdict(list)
    for m in sorted(mappings, key=lambda m: m.pk):
        by_source[m.source].append(m)
    return by_source


def quoted(rationale: str) -> str:
    return f"“{rationale.strip()}”" if (rationale or "").strip() else "no rationale given"

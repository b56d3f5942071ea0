"""One disposition per member record, and the one list of what blocks approval (DESIGN §5).

Pure: plain frozen dataclasses in, dispositions and blockers out; no ORM, no clock. The run page,
the reconciliation page (its counters, its conflicts filter, its approval form), the API
(`GET …/blockers/`, `POST …/approve/` answering 409) and approval itself all ask this module,
through `reconcile.blockers.run_standing`, so they can never disagree.

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
                 OPEN_ALTERNATIVE, OPEN_ISSUE, OPEN_AMENDMENT, PASS_MISSING, CONSENSUS_PENDING, CONFLICT_OPEN) + CONFLICT_CODES
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
class RunFacts:
    run_id: str
    records: tuple[RecordFact, ...] = ()
    mappings: tuple[MappingFact, ...] = ()
    canonical: tuple[CanonicalFact, ...] = ()
    issues: tuple[IssueFact, ...] = ()
    amendments: tuple[AmendmentFact, ...] = ()
    # Blockers about the run as a whole (status, validation), found by the caller from the database.
    preconditions: tuple[Blocker, ...] = ()


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
    dispositions) and the links they carry: shared by `standing` and by `reconcile.standing_update`, which
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
            return f"canonical record {target.canonical_id} was rejected: {_quoted(target.rationale)}"
        return ""


def grouped_by_source(mappings) -> dict[str, list[MappingFact]]:
    by_source: dict[str, list[MappingFact]] = defaultdict(list)
    for m in sorted(mappings, key=lambda m: m.pk):
        by_source[m.source].append(m)
    return by_source


def standing(facts: RunFacts) -> Standing:
    """Every member record's disposition and the run's approval blockers, in a stable order."""
    by_source = grouped_by_source(facts.mappings)
    records = list(facts.records)
    known = {r.record_id for r in records}
    for source, rows in by_source.items():
        if source not in known:  # a statement's source that no current member declares
            records.append(RecordFact(member=rows[0].member or "statements", record_id=source))
            known.add(source)
    dispositions = [dispose(r, by_source.get(r.record_id, [])) for r in records]
    by_record = {d.record: d for d in dispositions}
    reading = Reading(facts, by_source, records, by_record)
    per_record = [record_blockers(reading, d) for d in dispositions]
    return assembled(facts, reading, records, dispositions, per_record)


def assembled(facts: RunFacts, reading: Reading, records: list[RecordFact], dispositions: list[Disposition],
              per_record: list[tuple[Blocker, ...]]) -> Standing:
    """The standing from its dispositions and each record's blockers (in record order), the run's
    preconditions first and the blockers about the run's mappings, issues and amendments last."""
    blockers: list[Blocker] = list(facts.preconditions)
    for found in per_record:
        blockers += found
    blockers += run_blockers(reading, facts)
    return Standing(dispositions=tuple(dispositions), blockers=tuple(blockers), by_record=reading.by_record,
                    parts=StandingParts(facts, records, reading.by_source, tuple(dispositions), tuple(per_record)))


def record_blockers(reading: Reading, d: Disposition) -> tuple[Blocker, ...]:
    """The blockers about one record: from its own mappings, their targets and the records it is part of."""
    link, link_of, without_place = reading.link, reading.link_of, reading.without_place
    rows = reading.by_source.get(d.record, [])
    blockers: list[Blocker] = []
    accepted = [m for m in rows if m.state == ACCEPTED]
    if d.disposition == OPEN and len(accepted) <= 1:
        open_rows = [m for m in rows if m.state in OPEN_STATES]
        names = [mapping_name(d.record, m.relation, m.target)
                 + (", stale since the record changed" if m.state == STALE else "")
                 for m in open_rows]
        what = ("no mapping is proposed for it: propose one" if not rows else
                f"accept or reject {names[0]}" if len(names) == 1 else
                "accept the right one of " + ", ".join(names) + " and reject the others")
        blockers.append(Blocker(OPEN_DISPOSITION, d.record, f"{d.record} ({d.member}) has no place yet: {what}",
                                link_of(d.record), open_rows[0].pk if open_rows else None))
    if len(accepted) > 1:
        message = (f"{d.record} has {len(accepted)} accepted mappings ("
                   + "; ".join(mapping_name(d.record, a.relation, a.target) for a in accepted)
                   + "): a record has one place; reopen all but one")
        refusal = (f"{d.record} would have {len(accepted)} places ("
                   + "; ".join(mapping_name(d.record, a.relation, a.target) for a in accepted)
                   + "), and a record has one")
        for m in accepted:
            blockers.append(Blocker(SEVERAL_PLACES, d.record, message, link(d.member, m.pk), m.pk,
                                    f"mapping:{m.pk}", refusal))
    if d.disposition in PLACED + (NO_COUNTERPART,):
        for m in rows:
            if m.state in OPEN_STATES:
                blockers.append(Blocker(
                    OPEN_ALTERNATIVE, d.record,
                    f"{d.record} is placed by {mapping_name(d.record, d.relation, d.target)}, but the "
                    f"alternative {mapping_name(d.record, m.relation, m.target)} is still undecided: reject it",
                    link(d.member, m.pk), m.pk, f"mapping:{m.pk}"))
    for m in accepted:
        if m.relation == "no-counterpart":
            continue
        target = reading.canonical.get(m.target)
        if m.relation == "new" and (target is None or target.state != REJECTED_STATE):
            # The record the acceptance entered; only its later rejection contradicts the mapping
            # (the result would cite a canonical ID its Shared records leave out).
            continue
        if target is None:
            name = mapping_name(d.record, m.relation, m.target)
            blockers.append(Blocker(UNKNOWN_TARGET, d.record,
                                    f"The accepted {name} points at {m.target}, which is not a canonical record "
                                    f"of the run: reopen it", link(d.member, m.pk), m.pk,
                                    f"mapping:{m.pk}",
                                    f"{name} would point at {m.target}, which is not a canonical record of the "
                                    f"run"))
        elif target.state == REJECTED_STATE:
            name = mapping_name(d.record, m.relation, m.target)
            blockers.append(Blocker(REJECTED_TARGET, d.record,
                                    f"The accepted {name} points at {m.target}, which was rejected: "
                                    f"{_quoted(target.rationale)}; reopen it or choose another target",
                                    link(d.member, m.pk), m.pk, f"mapping:{m.pk}",
                                    f"{name} would point at {m.target}, which was rejected: "
                                    f"{_quoted(target.rationale)}"))
    if d.disposition in PLACED:
        record = reading.members.get(d.record)
        for parent in (record.part_of if record else ()):
            why = without_place(parent)
            if why:
                blockers.append(Blocker(PART_OF_REJECTED, d.record,
                                        f"{d.record} is placed in the shared set but is part of {parent}, and "
                                        f"{why}", link_of(d.record), d.mapping, f"mapping:{d.mapping}",
                                        f"{d.record} is part of {parent}, and {why}"))
    return tuple(blockers)


def run_blockers(reading: Reading, facts: RunFacts) -> list[Blocker]:
    """The blockers about the run's mappings taken together, its integration issues and its amendments."""
    link, page, without_place, by_source, by_record = (reading.link, reading.page, reading.without_place,
                                                      reading.by_source, reading.by_record)
    blockers: list[Blocker] = []
    # Two records of one member accepted as the same canonical record: one member, one referent, one ID.
    claims: dict[tuple[str, str], list[MappingFact]] = defaultdict(list)
    for m in facts.mappings:
        if m.state == ACCEPTED and m.relation in IDENTITY and m.target and m.member:
            claims[(m.member, m.target)].append(m)
    for (member, target), rivals in sorted(claims.items()):
        sources = sorted({m.source for m in rivals})
        if len(sources) < 2:
            continue
        for m in sorted(rivals, key=lambda m: m.pk):
            blockers.append(Blocker(CONFLICTING_CLAIM, m.source,
                                    f"{' and '.join(sources)} (both {member}) are each accepted as {target}: two "
                                    f"records of one member cannot be one canonical record; reopen one",
                                    link(member, m.pk), m.pk, f"mapping:{m.pk}",
                                    f"{' and '.join(sources)} (both {member}) would each be {target}: two records "
                                    f"of one member cannot be one canonical record"))

    # One canonical ID allocated by two accepted `new` mappings: each new record gets its own ID. (Judged
    # here, on the decisions, for approval and finalization alike: issue 24 item 7.)
    allocations: dict[str, list[MappingFact]] = defaultdict(list)
    for m in facts.mappings:
        if m.state == ACCEPTED and m.relation == "new" and m.target:
            allocations[m.target].append(m)
    for target, rows in sorted(allocations.items()):
        sources = sorted({m.source for m in rows})
        if len(sources) < 2:
            continue
        for m in sorted(rows, key=lambda m: m.pk):
            blockers.append(Blocker(ALLOCATED_TWICE, m.source,
                                    f"canonical ID {target} is allocated by {len(sources)} accepted new mappings "
                                    f"({', '.join(sources)}): each new record gets its own ID; reopen all but one",
                                    link(m.member, m.pk), m.pk, f"mapping:{m.pk}",
                                    refusal=f"{target} would then be the new ID of "
                                            f"{' and '.join(sources)}; each new record gets an ID of its own"))

    for issue in facts.issues:
        record, where = f"{issue.member} issue {issue.index}", f"{issue.member} integration issue {issue.index}"
        link = page(issue.member, f"issue-{issue.pk}", "issues=all")
        if issue.state in OPEN_STATES:
            blockers.append(Blocker(OPEN_ISSUE, record, f"{_upper_first(where)} is undecided: accept or reject it"
                                    + (" (stale: its text changed since it was decided)" if issue.state == STALE
                                       else ""), link))
        elif issue.state == ACCEPTED:
            for ref in issue.references:
                disposition = by_record.get(ref)
                why = without_place(ref) if disposition is None or disposition.disposition != NO_COUNTERPART else ""
                if why:
                    blockers.append(Blocker(ISSUE_NAMES_REJECTED, ref,
                                            f"The accepted {where} names {ref}, and {why}; "
                                            f"reject the issue or place {ref}", link, _first_mapping(by_source, ref),
                                            f"issue:{issue.pk}", f"{_upper_first(where)} names {ref}, and {why}"))

    for amendment in facts.amendments:
        label = "unresolved conflict" if amendment.kind == "unresolved-conflict" else "amendment"
        where = f"the {label} at line {amendment.line} of the {amendment.member} report"
        link = page(anchor=f"amendment-{amendment.pk}" if amendment.pk else "amendments")
        if amendment.is_open:
            blockers.append(Blocker(OPEN_AMENDMENT, where, f"{_upper_first(where)} is undecided"
                                    + {"not yet synced": " (not yet read into decisions)",
                                       "text changed since its decision": " (its text changed since its decision)",
                                       STALE: " (stale: the report changed since it was decided)",
                                       }.get(amendment.state, "") + ": accept, reject or carry it", link))
            continue
        if amendment.state != ACCEPTED or amendment.supersession:
            continue
        for ref in ids_in(amendment.text):
            why = without_place(ref)
            if why:
                blockers.append(Blocker(AMENDMENT_ON_REJECTED, ref,
                                        f"{_upper_first(where)} is accepted and names {ref}, but {why}; reject or "
                                        f"carry the amendment, or place {ref}", link, _first_mapping(by_source, ref),
                                        f"amendment:{amendment.pk}",
                                        f"{_upper_first(where)} names {ref}, but {why}"))
    return blockers


def _first_mapping(by_source: dict[str, list[MappingFact]], record_id: str) -> int | None:
    rows = by_source.get(record_id, [])
    return rows[0].pk if rows else None


def _quoted(rationale: str) -> str:
    return f"“{rationale.strip()}”" if (rationale or "").strip() else "no rationale given"


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]

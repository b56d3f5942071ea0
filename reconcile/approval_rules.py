"""The rule book of approval (DESIGN §5): every rule that can block a run's approval, listed once in `RULES`.

Each rule is one pure function from the run's facts (`reconcile.dispositions.RunFacts`, read from the
database in one place: `reconcile.blockers.run_facts`) to its blockers, marked with the codes it may
produce; each code of `dispositions.BLOCKER_CODES` belongs to exactly one rule. A new rule is one
function and one line in `RULES`. The run page, the reconciliation page, `GET …/blockers/`, approval
(and its last look at the stored bytes: `stored_bytes_blockers`), finalization's re-check and the kept
standing (`reconcile.standing_update`) all read this list, so they can never disagree.

A rule is one of three kinds, by what it judges; `RULES` lists them in this order, the order of the
blockers of a standing:

- RUN: the run as a whole (status, members, corrections, independent reviews, validation): `rule(facts)`;
- RECORD: one member record's disposition, its mappings and what they point at: `rule(reading, disposition)`,
  judged per record, in record order (again only for the records a decision touched, by the kept standing);
- DECISIONS: the run's mappings taken together, its integration issues and its amendments:
  `rule(reading, facts)`.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from django.urls import reverse

from . import dispositions as d
from .dispositions import (ACCEPTED, IDENTITY, IN_REVIEW, NO_COUNTERPART, OPEN, OPEN_STATES, PLACED, REJECTED,
                           REJECTED_STATE, STALE, Blocker, Disposition, MappingFact, Reading, RecordFact, RunFacts,
                           Standing, StandingParts, dispose, grouped_by_source, ids_in, mapping_name, quoted)

RUN, RECORD, DECISIONS = "run", "record", "decisions"
KINDS = (RUN, RECORD, DECISIONS)


def rule(kind: str, *codes: str):
    """Mark a function as an approval rule of `kind` that produces blockers with these codes, and no other."""
    def mark(function):
        function.kind, function.codes = kind, codes
        return function
    return mark


# --- the run as a whole ---------------------------------------------------------------------------

@rule(RUN, d.RUN_STATUS)
def run_status(facts: RunFacts) -> tuple[Blocker, ...]:
    if facts.status == IN_REVIEW:
        return ()
    return (Blocker(d.RUN_STATUS, facts.run_id, f"The run is {facts.status}; only a run in review can be approved.",
                    reverse("run-detail", args=[facts.run_id])),)


@rule(RUN, d.NO_MEMBERS)
def no_members(facts: RunFacts) -> tuple[Blocker, ...]:
    """Nothing else about the run is read without members (no corrections, passes or validation facts)."""
    if facts.has_members:
        return ()
    return (Blocker(d.NO_MEMBERS, facts.run_id, "The run has no member reports.",
                    reverse("run-detail", args=[facts.run_id])),)


@rule(RUN, d.CORRECTION_OPEN, d.CORRECTION_ANSWERED)
def pending_corrections(facts: RunFacts) -> list[Blocker]:
    """A correction request open (waiting for the analyst) or answered (waiting for a reviewer) blocks approval."""
    if not facts.corrections:
        return []
    page = reverse("run-corrections", args=[facts.run_id]) + "#correction"
    found = []
    for c in facts.corrections:
        about = f"{c.member} {c.record_id}" if c.record_id else f"the {c.member} report"
        shown = c.text if len(c.text) <= 120 else c.text[:117] + "…"
        if c.state == "open":
            found.append(Blocker(d.CORRECTION_OPEN, c.record_id or c.member,
                                 f"Correction request #{c.pk} to {about} is open, waiting for a corrected version: "
                                 f"“{shown}”", f"{page}-{c.pk}"))
        else:
            found.append(Blocker(d.CORRECTION_ANSWERED, c.record_id or c.member,
                                 f"Correction request #{c.pk} to {about} is answered: resolve it or reopen it: "
                                 f"“{shown}”", f"{page}-{c.pk}"))
    return found


@rule(RUN, d.PASS_MISSING, d.CONSENSUS_PENDING, d.CONFLICT_OPEN)
def independent_reviews(facts: RunFacts) -> list[Blocker]:
    """Passes still to submit, and conflicts between submitted ones not yet adjudicated (DESIGN §3)."""
    passes = facts.passes
    if passes is None:
        return []
    page = reverse("run-reconcile", args=[facts.run_id])
    submitted = passes.submitted
    if len(submitted) < passes.required:
        done = f"{len(submitted)} submitted ({', '.join(submitted)})" if submitted else "none submitted yet"
        return [Blocker(d.PASS_MISSING, facts.run_id, f"The run needs {passes.required} independent reviews, "
                        f"{done}: each reviewer submits their own from the reconciliation page.", page)]
    if not passes.consensus_made:
        return [Blocker(d.CONSENSUS_PENDING, facts.run_id, f"The {passes.required} independent reviews are "
                        "submitted; a worker is turning their agreements into the run's decisions and their "
                        "disagreements into conflicts.", page)]
    conflicts = reverse("run-conflicts", args=[facts.run_id])
    return [Blocker(d.CONFLICT_OPEN, name, f"The reviews disagree on {name}: an adjudicator settles it.",
                    f"{conflicts}#conflict-{pk}") for pk, name in passes.conflicts]


@rule(RUN, d.VALIDATION_STALE, d.VALIDATION_PENDING, d.VALIDATION_ERROR)
def validation(facts: RunFacts) -> list[Blocker]:
    """The run's validation: of the current member versions (from their recorded hashes: asked on every page
    and decision, this must not read and hash every member's bytes), found without error; and, once approval
    has hashed the stored bytes, of those."""
    v = facts.validation
    if v is None:
        return []
    run_id = facts.run_id
    page = reverse("run-detail", args=[run_id])
    if v.validated != v.current:
        return [Blocker(d.VALIDATION_STALE, run_id,
                        f"Validation is stale: the run's manifest hash {v.validated or '(none yet)'} "
                        f"does not match the current member versions ({v.current}); wait for validation to "
                        f"finish.", page)]
    if v.stored and v.stored != v.validated:
        return [Blocker(d.VALIDATION_STALE, run_id,
                        f"The stored member bytes hash to manifest {v.stored}, not the validated {v.validated}: "
                        "a member no longer matches its recorded SHA-256. Upload the members again.", page)]
    if v.errors is None:
        return [Blocker(d.VALIDATION_PENDING, run_id, "The current member versions have not been "
                        "validated yet; wait for validation to finish.", page)]
    blockers = []
    for f in v.first_errors:
        blockers.append(Blocker(d.VALIDATION_ERROR, f.record_id or f.member or run_id,
                                f"Validation error {f.code} in {f.member or 'the set'}"
                                f"{' at ' + f.record_id if f.record_id else ''}"
                                f"{f' line {f.line}' if f.line else ''}: {f.message}", page + "#validation"))
    if v.errors > len(v.first_errors):
        blockers.append(Blocker(d.VALIDATION_ERROR, run_id,
                                f"… and {v.errors - len(v.first_errors)} more validation errors.", page + "#validation"))
    return blockers


# --- one record -----------------------------------------------------------------------------------

@rule(RECORD, d.OPEN_DISPOSITION)
def open_disposition(reading: Reading, disposition: Disposition) -> tuple[Blocker, ...]:
    """A record with no place yet (and not several accepted places: `several_places`)."""
    if disposition.disposition != OPEN:
        return ()
    record = disposition.record
    rows = reading.by_source.get(record, [])
    if sum(1 for m in rows if m.state == ACCEPTED) > 1:
        return ()
    open_rows = [m for m in rows if m.state in OPEN_STATES]
    names = [mapping_name(record, m.relation, m.target) + (", stale since the record changed" if m.state == STALE else "")
             for m in open_rows]
    what = ("no mapping is proposed for it: propose one" if not rows else
            f"accept or reject {names[0]}" if len(names) == 1 else
            "accept the right one of " + ", ".join(names) + " and reject the others")
    return (Blocker(d.OPEN_DISPOSITION, record, f"{record} ({disposition.member}) has no place yet: {what}",
                    reading.link_of(record), open_rows[0].pk if open_rows else None),)


@rule(RECORD, d.SEVERAL_PLACES)
def several_places(reading: Reading, disposition: Disposition) -> tuple[Blocker, ...]:
    if disposition.disposition != OPEN:  # several accepted mappings leave a record open
        return ()
    record = disposition.record
    accepted = [m for m in reading.by_source.get(record, []) if m.state == ACCEPTED]
    if len(accepted) < 2:
        return ()
    places = "; ".join(mapping_name(record, a.relation, a.target) for a in accepted)
    message = f"{record} has {len(accepted)} accepted mappings ({places}): a record has one place; reopen all but one"
    refusal = f"{record} would have {len(accepted)} places ({places}), and a record has one"
    return tuple(Blocker(d.SEVERAL_PLACES, record, message, reading.link(disposition.member, m.pk), m.pk,
                         f"mapping:{m.pk}", refusal) for m in accepted)


@rule(RECORD, d.OPEN_ALTERNATIVE)
def open_alternative(reading: Reading, disposition: Disposition) -> list[Blocker]:
    if disposition.disposition not in PLACED + (NO_COUNTERPART,):
        return ()
    record, member = disposition.record, disposition.member
    blockers = []
    for m in reading.by_source.get(record, ()):
        if m.state in OPEN_STATES:
            blockers.append(Blocker(
                d.OPEN_ALTERNATIVE, record,
                f"{record} is placed by {mapping_name(record, disposition.relation, disposition.target)}, but the "
                f"alternative {mapping_name(record, m.relation, m.target)} is still undecided: reject it",
                reading.link(member, m.pk), m.pk, f"mapping:{m.pk}"))
    return blockers


@rule(RECORD, d.UNKNOWN_TARGET, d.REJECTED_TARGET)
def accepted_target(reading: Reading, disposition: Disposition) -> list[Blocker]:
    """An accepted mapping pointing at no canonical record of the run, or at a rejected one."""
    if disposition.disposition == REJECTED:  # no accepted mapping
        return []
    record, member = disposition.record, disposition.member
    blockers = []
    for m in reading.by_source.get(record, []):
        if m.state != ACCEPTED or m.relation == "no-counterpart":
            continue
        target = reading.canonical.get(m.target)
        if m.relation == "new" and (target is None or target.state != REJECTED_STATE):
            # The record the acceptance entered; only its later rejection contradicts the mapping
            # (the result would cite a canonical ID its Shared records leave out).
            continue
        if target is None:
            name = mapping_name(record, m.relation, m.target)
            blockers.append(Blocker(d.UNKNOWN_TARGET, record,
                                    f"The accepted {name} points at {m.target}, which is not a canonical record "
                                    f"of the run: reopen it", reading.link(member, m.pk), m.pk,
                                    f"mapping:{m.pk}",
                                    f"{name} would point at {m.target}, which is not a canonical record of the "
                                    f"run"))
        elif target.state == REJECTED_STATE:
            name = mapping_name(record, m.relation, m.target)
            blockers.append(Blocker(d.REJECTED_TARGET, record,
                                    f"The accepted {name} points at {m.target}, which was rejected: "
                                    f"{quoted(target.rationale)}; reopen it or choose another target",
                                    reading.link(member, m.pk), m.pk, f"mapping:{m.pk}",
                                    f"{name} would point at {m.target}, which was rejected: "
                                    f"{quoted(target.rationale)}"))
    return blockers


@rule(RECORD, d.PART_OF_REJECTED)
def part_of_rejected(reading: Reading, disposition: Disposition) -> list[Blocker]:
    if disposition.disposition not in PLACED:
        return []
    record_id = disposition.record
    record = reading.members.get(record_id)
    blockers = []
    for parent in (record.part_of if record else ()):
        why = reading.without_place(parent)
        if why:
            blockers.append(Blocker(d.PART_OF_REJECTED, record_id,
                                    f"{record_id} is placed in the shared set but is part of {parent}, and "
                                    f"{why}", reading.link_of(record_id), disposition.mapping,
                                    f"mapping:{disposition.mapping}", f"{record_id} is part of {parent}, and {why}"))
    return blockers


# --- the decisions taken together -----------------------------------------------------------------

@rule(DECISIONS, d.CONFLICTING_CLAIM)
def conflicting_claim(reading: Reading, facts: RunFacts) -> list[Blocker]:
    """Two records of one member accepted as the same canonical record: one member, one referent, one ID."""
    claims: dict[tuple[str, str], list[MappingFact]] = defaultdict(list)
    for m in facts.mappings:
        if m.state == ACCEPTED and m.relation in IDENTITY and m.target and m.member:
            claims[(m.member, m.target)].append(m)
    return [Blocker(d.CONFLICTING_CLAIM, m.source,
                    f"{' and '.join(sources)} (both {member}) are each accepted as {target}: two "
                    f"records of one member cannot be one canonical record; reopen one",
                    reading.link(member, m.pk), m.pk, f"mapping:{m.pk}",
                    f"{' and '.join(sources)} (both {member}) would each be {target}: two records "
                    f"of one member cannot be one canonical record")
            for (member, target), sources, rivals in _rivals(claims) for m in rivals]


@rule(DECISIONS, d.ALLOCATED_TWICE)
def allocated_twice(reading: Reading, facts: RunFacts) -> list[Blocker]:
    """One canonical ID allocated by two accepted `new` mappings: each new record gets its own ID. (Judged
    here, on the decisions, for approval and finalization alike: issue 24 item 7.)"""
    allocations: dict[str, list[MappingFact]] = defaultdict(list)
    for m in facts.mappings:
        if m.state == ACCEPTED and m.relation == "new" and m.target:
            allocations[m.target].append(m)
    return [Blocker(d.ALLOCATED_TWICE, m.source,
                    f"canonical ID {target} is allocated by {len(sources)} accepted new mappings "
                    f"({', '.join(sources)}): each new record gets its own ID; reopen all but one",
                    reading.link(m.member, m.pk), m.pk, f"mapping:{m.pk}",
                    refusal=f"{target} would then be the new ID of "
                            f"{' and '.join(sources)}; each new record gets an ID of its own")
            for target, sources, rivals in _rivals(allocations) for m in rivals]


def _rivals(groups: dict) -> list[tuple]:
    """Each group of accepted mappings that names two sources or more, in the order of its key: (key, its
    sources in order, its mappings in pk order)."""
    found = []
    for key, rows in sorted(groups.items()):
        sources = sorted({m.source for m in rows})
        if len(sources) > 1:
            found.append((key, sources, sorted(rows, key=lambda m: m.pk)))
    return found


@rule(DECISIONS, d.OPEN_ISSUE, d.ISSUE_NAMES_REJECTED)
def integration_issues(reading: Reading, facts: RunFacts) -> list[Blocker]:
    """An integration issue undecided, or accepted while it names a record without a place."""
    blockers = []
    for issue in facts.issues:
        record, where = f"{issue.member} issue {issue.index}", f"{issue.member} integration issue {issue.index}"
        link = reading.page(issue.member, f"issue-{issue.pk}", "issues=all")
        if issue.state in OPEN_STATES:
            blockers.append(Blocker(d.OPEN_ISSUE, record, f"{upper_first(where)} is undecided: accept or reject it"
                                    + (" (stale: its text changed since it was decided)" if issue.state == STALE
                                       else ""), link))
        elif issue.state == ACCEPTED:
            for ref in issue.references:
                disposition = reading.by_record.get(ref)
                why = (reading.without_place(ref) if disposition is None or disposition.disposition != NO_COUNTERPART
                       else "")
                if why:
                    blockers.append(Blocker(d.ISSUE_NAMES_REJECTED, ref,
                                            f"The accepted {where} names {ref}, and {why}; "
                                            f"reject the issue or place {ref}", link, first_mapping(reading, ref),
                                            f"issue:{issue.pk}", f"{upper_first(where)} names {ref}, and {why}"))
    return blockers


@rule(DECISIONS, d.OPEN_AMENDMENT, d.AMENDMENT_ON_REJECTED)
def amendments(reading: Reading, facts: RunFacts) -> list[Blocker]:
    """An amendment or unresolved conflict undecided, or accepted while it names a record without a place."""
    blockers = []
    for amendment in facts.amendments:
        label = "unresolved conflict" if amendment.kind == "unresolved-conflict" else "amendment"
        where = f"the {label} at line {amendment.line} of the {amendment.member} report"
        link = reading.page(anchor=f"amendment-{amendment.pk}" if amendment.pk else "amendments")
        if amendment.is_open:
            blockers.append(Blocker(d.OPEN_AMENDMENT, where, f"{upper_first(where)} is undecided"
                                    + {"not yet synced": " (not yet read into decisions)",
                                       "text changed since its decision": " (its text changed since its decision)",
                                       STALE: " (stale: the report changed since it was decided)",
                                       }.get(amendment.state, "") + ": accept, reject or carry it", link))
            continue
        if amendment.state != ACCEPTED or amendment.supersession:
            continue
        for ref in ids_in(amendment.text):
            why = reading.without_place(ref)
            if why:
                blockers.append(Blocker(d.AMENDMENT_ON_REJECTED, ref,
                                        f"{upper_first(where)} is accepted and names {ref}, but {why}; reject or "
                                        f"carry the amendment, or place {ref}", link, first_mapping(reading, ref),
                                        f"amendment:{amendment.pk}",
                                        f"{upper_first(where)} names {ref}, but {why}"))
    return blockers


# The rule book: every rule of approval, once, in the order of the blockers they produce.
RULES = (
    run_status,
    no_members,
    pending_corrections,
    independent_reviews,
    validation,
    open_disposition,
    several_places,
    open_alternative,
    accepted_target,
    part_of_rejected,
    conflicting_claim,
    allocated_twice,
    integration_issues,
    amendments,
)
_OF_KIND = {kind: tuple(r for r in RULES if r.kind == kind) for kind in KINDS}
_RECORD_RULES = _OF_KIND[RECORD]


def codes_of(*rules) -> tuple[str, ...]:
    """The blocker codes these rules may produce."""
    return tuple(code for r in rules for code in r.codes)


def run_blockers(facts: RunFacts) -> list[Blocker]:
    """The blockers about the run as a whole (the RUN rules)."""
    return [b for judge in _OF_KIND[RUN] for b in judge(facts)]


def record_blockers(reading: Reading, disposition: Disposition) -> tuple[Blocker, ...]:
    """The blockers about one record (the RECORD rules): its own mappings, their targets, the records it is part of."""
    found: list[Blocker] = []
    for judge in _RECORD_RULES:  # per record, 50,000 times a standing: a loop, not a generator
        found += judge(reading, disposition)
    return tuple(found)


def decision_blockers(reading: Reading, facts: RunFacts) -> list[Blocker]:
    """The blockers about the run's mappings taken together, its integration issues and its amendments."""
    return [b for judge in _OF_KIND[DECISIONS] for b in judge(reading, facts)]


def stored_bytes_blockers(facts: RunFacts, stored: str) -> list[Blocker]:
    """What blocks approval once approval has hashed the stored member bytes to manifest `stored`: the RUN
    rules judged again with it (asked when nothing else blocks: every other RUN rule then finds nothing)."""
    return run_blockers(replace(facts, validation=replace(facts.validation, stored=stored)))


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
    by_record = {disposition.record: disposition for disposition in dispositions}
    reading = Reading(facts, by_source, records, by_record)
    per_record = [record_blockers(reading, disposition) for disposition in dispositions]
    return assembled(facts, reading, records, dispositions, per_record)


def assembled(facts: RunFacts, reading: Reading, records: list[RecordFact], dispositions: list[Disposition],
              per_record: list[tuple[Blocker, ...]]) -> Standing:
    """The standing from its dispositions and each record's blockers (in record order), the blockers about
    the run as a whole first and those about the decisions taken together last."""
    blockers: list[Blocker] = run_blockers(facts)
    for found in per_record:
        blockers += found
    blockers += decision_blockers(reading, facts)
    return Standing(dispositions=tuple(dispositions), blockers=tuple(blockers), by_record=reading.by_record,
                    parts=StandingParts(facts, records, reading.by_source, tuple(dispositions), tuple(per_record)))


def first_mapping(reading: Reading, record_id: str) -> int | None:
    rows = reading.by_source.get(record_id, [])
    return rows[0].pk if rows else None


def upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]

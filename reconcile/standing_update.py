"""A run's next standing built from its last one: only the records a change touched judged again (DESIGN §11).

A decision changes one mapping, or a few, of a run that may hold 50,000 records; building the standing
from scratch judged all of them again, on the decision's answer and on the view after it (1-2 s at
50,000). `standing_after(previous, facts)` compares the new facts with those `previous` was built from.
When the records and canonical records are the same, record IDs do not repeat, and the mappings that
changed are all of declared records, it disposes those records again, and judges again the blockers of
those records and of the records `Part of:` one whose disposition moved (the rule book's RECORD rules:
`approval_rules.record_blockers`); the RUN and DECISIONS rules (status, validation, claims, allocations,
issues, amendments: a pass over the mappings, and few items) are judged in full. Anything else is built
from scratch. Either way the standing equals `approval_rules.standing(facts)`:
a Hypothesis property (tests/reconcile/test_standing_update.py) holds it to that after any sequence of
decisions, and approval never builds on an earlier standing (`reconcile.blockers.run_facts`).
"""
from __future__ import annotations

from collections import defaultdict

from . import approval_rules as rules
from . import dispositions as d


def standing_after(previous: d.Standing | None, facts: d.RunFacts) -> d.Standing:
    """`approval_rules.standing(facts)`, built from `previous` (any earlier standing of the same run) where
    that is safe."""
    parts = previous.parts if previous is not None else None
    if parts is None or not _same_ground(parts.facts, facts):
        return rules.standing(facts)
    index = _index(parts)
    changed = _changed_sources(parts.facts.mappings, facts.mappings)
    declared = len(facts.records)
    if index is None or any(index.get(source, declared) >= declared for source in changed):
        # A statement's source (no member declares it) appended after the records: its place and member
        # come from the mappings themselves.
        return rules.standing(facts)
    by_source = dict(parts.by_source)
    fresh: dict[str, list[d.MappingFact]] = defaultdict(list)
    for m in facts.mappings:
        if m.source in changed:
            fresh[m.source].append(m)
    for source in changed:
        if source in fresh:
            by_source[source] = sorted(fresh[source], key=lambda m: m.pk)
        else:
            by_source.pop(source, None)
    records, dispositions = parts.records, list(parts.dispositions)
    by_record = dict(previous.by_record)
    again = set(changed)
    children = _children(parts)
    for source in changed:
        place = index[source]
        now = d.dispose(records[place], by_source.get(source, []))
        if now != dispositions[place]:
            dispositions[place] = by_record[source] = now
            again.update(children.get(source, ()))
    reading = d.Reading(facts, by_source, records, by_record)
    per_record = list(parts.per_record)
    for record_id in again:
        place = index[record_id]
        per_record[place] = rules.record_blockers(reading, dispositions[place])
    standing = rules.assembled(facts, reading, records, dispositions, per_record)
    standing.parts.index, standing.parts.children = index, children
    return standing


def _same_ground(before: d.RunFacts, now: d.RunFacts) -> bool:
    """The same run, records and canonical records (a page's records are the same object when the
    versions are: `reconcile.blockers._record_facts`)."""
    return (before.run_id == now.run_id and (before.records is now.records or before.records == now.records)
            and before.canonical == now.canonical)


def _changed_sources(before: tuple[d.MappingFact, ...], now: tuple[d.MappingFact, ...]) -> set[str]:
    """The sources of every mapping added, removed or changed in any field."""
    was = {m.pk: m for m in before}
    changed = set()
    for m in now:
        old = was.pop(m.pk, None)
        if old != m:
            changed.add(m.source)
            if old is not None:
                changed.add(old.source)
    changed.update(m.source for m in was.values())  # removed
    return changed


def _index(parts: d.StandingParts) -> dict[str, int] | None:
    """Record ID → place in the records, or None when an ID repeats (its last record would answer)."""
    if parts.index is None:
        index = {r.record_id: place for place, r in enumerate(parts.records)}
        parts.index = index if len(index) == len(parts.records) else {}
    return parts.index or None


def _children(parts: d.StandingParts) -> dict[str, tuple[str, ...]]:
    if parts.children is None:
        found: dict[str, list[str]] = defaultdict(list)
        for r in parts.records:
            for parent in r.part_of:
                found[parent].append(r.record_id)
        parts.children = {parent: tuple(ids) for parent, ids in found.items()}
    return parts.children

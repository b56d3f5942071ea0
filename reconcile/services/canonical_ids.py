"""Canonical IDs: how a stated ID resolves, and how numbers are allocated (monotonic, never reused)."""
from __future__ import annotations

from typing import Callable, Collection, Iterable

from django.db import IntegrityError, transaction
from django.db.models import Max

from records.ids import parse_id
from reviews.models import Run

from ..models import CanonicalRecord, KindCounter, Mapping
from ..vocabulary import State


def canonical_id_for(record_id: str) -> tuple[str, int | None]:
    """The canonical ID a runtime or result declaration seeds: numbered → bare, slug → itself."""
    parsed = parse_id(record_id)
    if parsed is None:
        return record_id, None
    _prefix, kind, tail = parsed
    if tail.isdigit():
        return f"{kind}-{int(tail)}", int(tail)
    return record_id, None


def kind_of(record_id: str) -> str:
    parsed = parse_id(record_id)
    return parsed[1] if parsed else ""


def resolve_stated_id(stated: str, canonical_ids: Collection[str], accepted_targets: dict[str, str]) -> str:
    """The canonical ID a stated target means: itself, its bare numbered form (`RT-RTE-7` → `RTE-7`),
    or the canonical record a member record (`MEM-OBJ-2`) was accepted into by a same or new mapping
    (`accepted_targets`: source → target). Unresolvable: as given. Pure, so that sync, decisions and
    the result read a stated ID the same way."""
    if not stated or stated in canonical_ids:
        return stated
    parsed = parse_id(stated)
    if parsed and parsed[2].isdigit() and parsed[0] in ("", "RT"):
        bare, _ = canonical_id_for(stated)
        if bare in canonical_ids:
            return bare
    return accepted_targets.get(stated, stated)


def accepted_targets(mappings) -> dict[str, str]:
    """source → target of accepted same and new mappings (the first accepted one per source)."""
    targets: dict[str, str] = {}
    for mapping in sorted(mappings, key=lambda m: m.pk):
        if (mapping.state == State.ACCEPTED and mapping.target
                and mapping.relation in (Mapping.Relation.SAME, Mapping.Relation.NEW)):
            targets.setdefault(mapping.source, mapping.target)
    return targets


def resolver(run: Run):
    canonical_ids = set(CanonicalRecord.objects.filter(run=run).values_list("canonical_id", flat=True))
    accepted = accepted_targets(Mapping.objects.filter(run=run, state=State.ACCEPTED).only(
        "pk", "source", "relation", "target", "state"))
    return lambda stated: resolve_stated_id(stated, canonical_ids, accepted)


def resolve_target(run: Run, target: str) -> str:
    """`_resolver(run)(target)`, reading only what `resolve_stated_id` can consult for this one target
    (see `resolve_one`). Every acceptance resolves its target: reading the whole run's canonical IDs
    and accepted mappings here, as `_resolver` does, made a bulk accept quadratic in the run."""
    return resolve_one(
        target,
        lambda ids: set(CanonicalRecord.objects.filter(run=run, canonical_id__in=ids)
                        .values_list("canonical_id", flat=True)),
        lambda source: Mapping.objects.filter(run=run, state=State.ACCEPTED, source=source).only(
            "pk", "source", "relation", "target", "state"))


def resolve_one(target: str, existing: Callable[[set[str]], set[str]],
                accepted_from: Callable[[str], Iterable[Mapping]]) -> str:
    """How `resolve_stated_id` resolves `target`, given `existing(ids)`, which of `ids` are canonical
    IDs of the run, and `accepted_from(source)`, the run's accepted mappings from `source`: it asks
    about `target` and its bare numbered form only, and about the mappings from `target` only when
    neither is a canonical ID (resolve_stated_id answers from the canonical IDs first)."""
    if not target:
        return target
    canonical_ids = existing({target, canonical_id_for(target)[0]})
    if canonical_ids:
        resolved = resolve_stated_id(target, canonical_ids, {})
        if resolved != target or target in canonical_ids:
            return resolved
    return resolve_stated_id(target, canonical_ids, accepted_targets(accepted_from(target)))


def insert_once(row) -> bool:
    """Insert `row`; False when a unique constraint says it (or what it stands for) exists already."""
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:
        return False
    return True


def insert_all(rows: list) -> list[bool]:
    """Insert `rows` of one model in one statement; when a unique constraint refuses the batch, fall back
    to `_insert_once` row by row. Returns, per row, whether it was inserted (as `_insert_once` would)."""
    if not rows:
        return []
    try:
        with transaction.atomic():
            type(rows[0]).objects.bulk_create(rows)
    except IntegrityError:
        for row in rows:  # the batch rolled back: insert each afresh
            row.pk = None
            row._state.adding = True
        return [insert_once(row) for row in rows]
    return [True] * len(rows)


def raise_counter(run: Run, kind: str, number: int) -> None:
    counter, _ = KindCounter.objects.get_or_create(run=run, kind=kind)
    KindCounter.objects.filter(pk=counter.pk, last_number__lt=number).update(last_number=number)


def next_number(run: Run, kind: str) -> int:
    """The next canonical number of a kind: above every number ever allocated (never reused)."""
    KindCounter.objects.get_or_create(run=run, kind=kind)
    counter = KindCounter.objects.select_for_update().get(run=run, kind=kind)
    top = CanonicalRecord.objects.filter(run=run, kind=kind).aggregate(m=Max("number"))["m"] or 0
    number = max(counter.last_number, top) + 1
    counter.last_number = number
    counter.save(update_fields=["last_number"])
    return number

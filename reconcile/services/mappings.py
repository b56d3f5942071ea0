"""Proposing mappings, checking targets, allocating canonical records, marking mappings stale."""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F

from records.ids import parse_id
from records.models import Record
from reviews.actions import Action
from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run

from ..models import CanonicalRecord, Mapping
from .canonical_ids import insert_once, kind_of, next_number, raise_counter, resolve_target
from ..errors import ProposalError, RunFinal, RunLocked
from .snapshots import mapping_snapshot
from ..vocabulary import LOCKED_STATUSES, State
from .summary import SyncSummary



def ensure_open(run: Run) -> Run:
    """Take the run's row lock (first, as every writer of a run does: see reviews.audit.lock_run) and
    refuse while the run is approved or later; return the locked row. Holding it also keeps approval
    from slipping in between a decision's check and its write."""
    locked = lock_run(run)
    status = locked.status
    if status == Run.Status.FINAL:
        raise RunFinal(f"run {run.run_id} is final and closed for good: revise it to change its reconciliation")
    if status in LOCKED_STATUSES:
        raise RunLocked(f"run {run.run_id} is {status}: reopen it before changing its reconciliation")
    return locked


def current_declaration(run: Run, record_id: str) -> Record | None:
    """The declaration of `record_id` in a current member version, if any."""
    return (Record.objects.filter(run=run, record_id=record_id, record_type=Record.Type.DECLARATION,
                                  member_version__member__current_version=F("member_version"))
            .select_related("member_version__member").first())


def check_target(run: Run, *, source: str, kind: str, relation: str, target: str,
                  allow_own: bool = False, canonical=None) -> None:
    """Raise ProposalError unless `target` suits `relation` for a source of `kind`. `canonical(id)`, when
    given, reads the run's canonical record `id` (or None), as the query here would."""
    if relation == Mapping.Relation.NO_COUNTERPART:
        if target:
            raise ProposalError("a no-counterpart mapping takes no target; leave target empty", "target")
        return
    if not target:
        if relation == Mapping.Relation.NEW:
            return  # the app allocates on accept
        raise ProposalError(f"a {relation} mapping needs a target: the canonical record {source} maps to", "target")
    parsed = parse_id(target)
    if parsed is None or parsed[1] == "SRC":
        raise ProposalError(f"target {target!r} is not a record ID (e.g. OBJ-5 or RT-OBJ-store)", "target")
    # Identity (same, supersedes) keeps the kind; a part may belong to a whole of another kind (an
    # object that is part of a component).
    if kind and parsed[1] != kind and relation != Mapping.Relation.PART_OF:
        raise ProposalError(f"kinds differ: {source} is {kind} but {target} is {parsed[1]}", "target")
    existing = (canonical(target) if canonical is not None
                else CanonicalRecord.objects.filter(run=run, canonical_id=target).first())
    if relation == Mapping.Relation.NEW:
        if parsed[2].isdigit() and parsed[0]:
            raise ProposalError(f"a numbered canonical ID is bare: use {parsed[1]}-{int(parsed[2])}, not {target}",
                                "target")
        if existing is not None and not (allow_own and existing.origin == CanonicalRecord.Origin.MAPPING
                                         and existing.source_record_id == source):
            state = " (rejected; numbers are never reused)" if existing.state == CanonicalRecord.State.REJECTED else ""
            raise ProposalError(f"{target} is already taken{state}; give a free ID or leave target empty", "target")
        return
    if existing is None:
        resolved = resolve_target(run, target)
        hint = f"; did you mean {resolved}?" if resolved != target else ""
        raise ProposalError(f"{target} is not a canonical record of run {run.run_id}{hint}", "target")
    if existing.state == CanonicalRecord.State.REJECTED:
        raise ProposalError(f"{target} was rejected ({existing.rationale or 'no rationale'}); choose another target",
                            "target")


def _open_proposal(run: Run, source: str, relation: str, target: str) -> Mapping | None:
    return (Mapping.objects.filter(run=run, origin=Mapping.Origin.AGENT, source=source, relation=relation,
                                   target=target, state__in=[State.PROPOSED, State.STALE])
            .order_by("pk").first())


def propose_mapping(*, run: Run, source: str, relation: str, target: str | None,
                    actor: Actor) -> tuple[Mapping, bool]:
    """An agent's or reviewer's proposal: a member record → a canonical record, under a relation.

    Returns (mapping, created). Idempotent: while an identical proposal (same source, relation and
    target) is open, proposing it again returns that one and audits nothing. A different proposal
    for the same source is a new row: a conflict for the reviewer to resolve.
    """
    source = (source or "").strip()
    target = (target or "").strip()
    if relation not in Mapping.Relation.values:
        raise ProposalError(f"relation must be one of {', '.join(Mapping.Relation.values)}", "relation")
    if parse_id(source) is None or kind_of(source) == "SRC":
        raise ProposalError(f"source {source!r} is not a record ID (e.g. MEM-OBJ-1)", "source")
    with transaction.atomic():
        ensure_open(run)
        record = current_declaration(run, source)
        if record is None and not Mapping.objects.filter(run=run, origin=Mapping.Origin.RESULT, source=source).exists():
            raise ProposalError(f"{source} is not declared by a current member report of run {run.run_id}", "source")
        check_target(run, source=source, kind=record.kind if record else kind_of(source), relation=relation,
                      target=target)
        existing = _open_proposal(run, source, relation, target)
        if existing is not None:
            return existing, False
        try:
            with transaction.atomic():
                mapping = Mapping.objects.create(run=run, source=source, source_record=record, relation=relation,
                                                 target=target, origin=Mapping.Origin.AGENT, proposed_by=actor.label)
                record_event(run=run, actor=actor, action=Action.MAPPING_PROPOSED, object_type="mapping",
                             object_id=mapping.pk,
                             after=mapping_snapshot(mapping) | {"member": record.member_version.member.role if record else None})
        except IntegrityError:
            existing = _open_proposal(run, source, relation, target)  # a concurrent identical proposal won
            if existing is None:
                raise
            return existing, False
        return mapping, True


def mark_mapping_stale(run: Run, mapping: Mapping, actor: Actor, summary: SyncSummary, reason: str) -> None:
    before = {"state": mapping.state, "target": mapping.target}
    mapping.state, mapping.version = State.STALE, mapping.version + 1
    mapping.save(update_fields=["state", "version"])
    summary.marked_stale += 1
    record_event(run=run, actor=actor, action=Action.MAPPING_MARKED_STALE, object_type="mapping", object_id=mapping.pk,
                 before=before, after={"state": State.STALE, "reason": reason})


def allocate(run: Run, mapping: Mapping, explicit: str) -> tuple[CanonicalRecord, bool]:
    """The canonical record an accepted `new` mapping enters as: (record, created)."""
    record = mapping.source_record
    kind = record.kind if record else kind_of(mapping.source)
    label, text = (record.label, record.text) if record else ("", "")
    if explicit:
        existing = CanonicalRecord.objects.filter(run=run, canonical_id=explicit).first()
        if existing is not None:
            if existing.origin != CanonicalRecord.Origin.MAPPING or existing.source_record_id != mapping.source:
                raise ProposalError(f"{explicit} is already taken; give a free ID or leave target empty", "target")
            # This mapping's own earlier allocation (accepted, then reopened or made stale): take it back.
            existing.state, existing.rationale = CanonicalRecord.State.ACTIVE, ""
            existing.label, existing.text, existing.version = label, text, existing.version + 1
            existing.save(update_fields=["state", "rationale", "label", "text", "version"])
            return existing, False
        canonical_id = explicit
        tail = parse_id(explicit)[2]
        number = int(tail) if tail.isdigit() else None
        if number is not None:
            raise_counter(run, kind, number)
    elif parse_id(mapping.source) and parse_id(mapping.source)[2].isdigit():
        number = next_number(run, kind)
        canonical_id = f"{kind}-{number}"
    else:
        canonical_id, number = mapping.source, None
        if CanonicalRecord.objects.filter(run=run, canonical_id=canonical_id).exists():
            raise ProposalError(f"{canonical_id} is already a canonical record: map {mapping.source} to it as same, "
                                f"or give the new record another ID", "target")
    created = CanonicalRecord(run=run, canonical_id=canonical_id, kind=kind, number=number, label=label, text=text,
                              origin=CanonicalRecord.Origin.MAPPING, source_record_id=mapping.source)
    if not insert_once(created):
        raise ProposalError(f"{canonical_id} is already taken; give a free ID", "target")
    return created, True

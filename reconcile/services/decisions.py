"""Decisions on mappings, integration issues, amendments and canonical records; decision progress."""
from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from reviews.actions import Action
from reviews.audit import Actor, appending, record_event
from reviews.free_text import too_long
from reviews.models import Run

from ..models import AmendmentDecision, CanonicalRecord, IssueDecision, Mapping
from .amendments import CARRIED, DECIDED_STATES, follow_decided_mapping, linked_mappings, current_amendment_decisions
from .acceptance import BulkReads, DecisionReads
from .canonical_ids import kind_of
from .coherence import refuse_incoherent
from ..blind import blind_decision, is_settling
from ..errors import InvalidDecision, ProposalError, RunLocked, StaleVersion, StateConflict, TargetNotSettled
from .mappings import allocate, check_target, ensure_open, current_declaration
from ..dispositions import mapping_name
from .snapshots import amendment_snapshot, canonical_snapshot, issue_snapshot, mapping_snapshot
from ..vocabulary import ACCEPT, AMENDMENT_DECISIONS, CARRY, DECISIONS, REJECT, REOPEN, State


def _check_decision(decision: str, rationale: str, allowed: tuple[str, ...] = DECISIONS) -> str:
    """The stripped rationale; ProposalError for a decision not `allowed`, or a reject or carry without one."""
    if decision not in allowed:
        raise ProposalError(f"decision must be one of {', '.join(allowed)}, not {decision!r}", "decision")
    rationale = _limited(rationale)
    if decision == REJECT and not rationale:
        raise ProposalError("a rejection needs a rationale: say why", "rationale")
    if decision == CARRY and not rationale:
        raise ProposalError("carrying it into the result's Limitations needs a rationale: say why it stays open",
                            "rationale")
    return rationale


def _limited(rationale: str) -> str:
    """The stripped rationale, refused past the one limit on a caller's text (reviews.free_text). What consensus
    writes is no caller's text: it joins the passes' rationales, each within the limit (reconcile.passes.consensus)."""
    rationale = (rationale or "").strip()
    if (refusal := too_long("rationale", rationale)) and not is_settling():
        raise ProposalError(refusal, "rationale")
    return rationale


def _check_transition(item, decision: str) -> str:
    """The state the decision leads to, or InvalidDecision."""
    if decision == REOPEN:
        if item.state == State.PROPOSED:
            raise InvalidDecision(f"{_upper_first(item_name(item))} is already open")
        return State.PROPOSED
    if item.state in DECIDED_STATES:
        raise InvalidDecision(f"{_upper_first(item_name(item))} is already {item.state}; reopen it first")
    return {ACCEPT: State.ACCEPTED, REJECT: State.REJECTED, CARRY: CARRIED}[decision]


def item_name(item) -> str:
    """The item as the reviewer's page names it: records and lines, never database IDs."""
    if isinstance(item, CanonicalRecord):
        return f"canonical record {item.canonical_id}"
    if isinstance(item, Mapping):
        return mapping_name(item.source, item.relation, item.target)
    if isinstance(item, AmendmentDecision):
        return (f"the {item.label.lower()} at line {item.line} of the {item.member_version.member.role} report "
                f"(version {item.member_version.version})")
    issue = item.issue
    return f"{issue.member_version.member.role} integration issue {issue.index}"


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _decision_values(state: str, rationale: str, actor: Actor, *, member_sha256: str,
                     content_sha256: str) -> dict[str, Any]:
    """The columns a decision writes: who decided, when, and what it saw; a reopened item (proposed) clears them."""
    if state == State.PROPOSED:
        return {"state": state, "rationale": rationale, "decided_by": "", "decided_at": None,
                "decided_member_sha256": "", "decided_content_sha256": ""}
    return {"state": state, "rationale": rationale, "decided_by": actor.label, "decided_at": timezone.now(),
            "decided_member_sha256": member_sha256, "decided_content_sha256": content_sha256}


def _claim(model, item, expected_version: int | None, **values) -> None:
    """The conditional UPDATE that makes one decision win: 0 rows means someone else got there first."""
    if expected_version is None or item.version != expected_version:
        raise StaleVersion(item)
    updated = model.objects.filter(pk=item.pk, version=expected_version).update(version=F("version") + 1, **values)
    if not updated:
        raise StaleVersion(_fresh(model, item.pk))


def _read_for_decision(model, pk: int, expected_version: int | None, decision: str):
    """The item as it is now and the state `decision` leads to; StaleVersion or InvalidDecision otherwise."""
    current = _fresh(model, pk)
    if expected_version is None or current.version != expected_version:
        raise StaleVersion(current)
    return current, _check_transition(current, decision)


# A member version's bytes and parse: what a decision never reads of its record's report (2 MB for a large one).
_REPORT_BYTES = ("source_record__member_version__content", "source_record__member_version__parsed")


def _fresh(model, pk):
    query = model.objects.all()
    if model is Mapping:
        query = query.select_related("source_record__member_version__member").defer(*_REPORT_BYTES)
    elif model is AmendmentDecision:
        query = query.select_related("member_version__member").defer("member_version__content",
                                                                     "member_version__parsed")
    else:
        query = query.select_related("issue__member_version__member")
    return query.get(pk=pk)


@blind_decision(lambda kwargs: kwargs["mapping"].run)
def decide_mapping(*, mapping: Mapping, decision: str, rationale: str, actor: Actor,
                   expected_version: int | None, target: str | None = None, check_coherence: bool = True) -> Mapping:
    """Accept, reject or reopen a mapping. Accepting a `new` mapping allocates its canonical record;
    `target` changes the target as the mapping is accepted. An acceptance that would contradict
    another decision is refused (IncoherentDecision) unless `check_coherence` is off (bulk accept,
    where approval's blockers still catch it)."""
    rationale = _check_decision(decision, rationale)
    run = mapping.run
    with transaction.atomic():
        ensure_open(run)
        current, new_state = _read_for_decision(Mapping, mapping.pk, expected_version, decision)
        return _decide_mapping(run, current, new_state, decision, rationale, actor, expected_version,
                               target=(target or "").strip(), check_coherence=check_coherence,
                               reads=DecisionReads(run))


def _decide_mapping(run: Run, current: Mapping, new_state: str, decision: str, rationale: str, actor: Actor,
                    expected_version: int | None, *, target: str, check_coherence: bool,
                    reads: DecisionReads, in_bulk: bool = False) -> Mapping:
    """decide_mapping on `current`, the mapping as it is now in the caller's transaction (the run
    locked, `new_state` the state `decision` leads to), reading the run through `reads`.

    `in_bulk` (bulk_accept): the decided row is what this function wrote over `current` (nothing else in
    the transaction writes it), so it is not read back."""
    before = mapping_snapshot(current)
    extra: dict[str, Any] = {}
    canonical = None
    record = current.source_record
    if decision == ACCEPT:
        chosen = target or current.target
        if current.relation != Mapping.Relation.NEW:
            chosen = reads.resolve(chosen)
            if chosen and reads.canonical(chosen) is None and current_declaration(run, chosen) is not None:
                raise TargetNotSettled(chosen)
        check_target(run, source=current.source, kind=record.kind if record else kind_of(current.source),
                      relation=current.relation, target=chosen, allow_own=True, canonical=reads.canonical)
        # One place per record (DESIGN §5): a second accepted mapping, of any relation, would
        # state two places for it in the result.
        other = reads.placed(current.source, other_than=current.pk)
        if other is not None:
            raise InvalidDecision(f"Not accepted: {current.source} already has its place, "
                                  f"{item_name(other)} is accepted. A record has one place: reject this "
                                  f"one as the alternative, or reopen that one first")
    values = _decision_values(new_state, rationale, actor,
                              member_sha256=record.member_version.sha256 if record else "",
                              content_sha256=record.content_sha256 if record else "")
    if decision == ACCEPT:
        values["target"] = chosen
    try:
        # No savepoint of its own (its SAVEPOINT and RELEASE were two of the seven statements a bulk accept spent
        # per suggestion): the caller's block (decide_mapping's, _accept_suggestion's) is what a refusal rolls back.
        with transaction.atomic(savepoint=False):
            _claim(Mapping, current, expected_version, **values)
    except IntegrityError:
        raise InvalidDecision(f"Another open mapping proposes {item_name(current)} again; "
                              f"decide that one instead") from None
    if decision == ACCEPT and current.relation == Mapping.Relation.NEW:
        canonical, created = allocate(run, current, values["target"])
        Mapping.objects.filter(pk=current.pk).update(target=canonical.canonical_id)
        values["target"] = canonical.canonical_id
        extra = {"canonical_id": canonical.canonical_id, "canonical_created": created}
    if decision == REOPEN and before["state"] == State.ACCEPTED and current.relation == Mapping.Relation.NEW:
        # The allocated ID stays burnt: the canonical record is rejected, never renumbered.
        withdrawn = CanonicalRecord.objects.filter(
            run=run, canonical_id=current.target, origin=CanonicalRecord.Origin.MAPPING,
            source_record_id=current.source, state=CanonicalRecord.State.ACTIVE,
        ).update(state=CanonicalRecord.State.REJECTED, version=F("version") + 1,
                 rationale=f"withdrawn when {item_name(current)} was reopened: {rationale}")
        if withdrawn:
            extra = {"canonical_withdrawn": current.target}
    if decision == ACCEPT and check_coherence:
        refuse_incoherent(run, f"mapping:{current.pk}")
    result = _as_claimed(current, expected_version, values) if in_bulk else _fresh(Mapping, current.pk)
    # A supersession amendment follows its mapping; this event is the decision of both.
    followed = follow_decided_mapping(run, result)
    if followed:
        extra = extra | {"amendments": followed}
    record_event(run=run, actor=actor, action=_DECIDED["mapping"][decision], object_type="mapping",
                 object_id=result.pk, before=before,
                 after=mapping_snapshot(result) | extra | {
                     "decided_member_sha256": result.decided_member_sha256,
                     "decided_content_sha256": result.decided_content_sha256})
    if decision == ACCEPT:
        reads.accepted(result, canonical)
    return result


def _as_claimed(current: Mapping, expected_version: int, values: dict[str, Any]) -> Mapping:
    """`current` as `_claim(…, expected_version, **values)` left its row (and the allocation its target)."""
    for name, value in values.items():
        setattr(current, name, value)
    current.version = expected_version + 1
    return current


# The event each decision on each kind of item writes.
_DECIDED = {
    "mapping": {ACCEPT: Action.MAPPING_ACCEPTED, REJECT: Action.MAPPING_REJECTED, REOPEN: Action.MAPPING_REOPENED},
    "issue": {ACCEPT: Action.ISSUE_ACCEPTED, REJECT: Action.ISSUE_REJECTED, REOPEN: Action.ISSUE_REOPENED},
    "amendment": {ACCEPT: Action.AMENDMENT_ACCEPTED, REJECT: Action.AMENDMENT_REJECTED,
                  REOPEN: Action.AMENDMENT_REOPENED, CARRY: Action.AMENDMENT_CARRIED},
}


def _settle(model, current, expected_version: int | None, new_state: str, decision: str, rationale: str,
            actor: Actor, *, run: Run, member_version, content_sha256: str, item: str, kind: str,
            object_type: str, before: dict, snapshot, extra, check_coherence: bool = True) -> Any:
    """The shared ending of an issue's or an amendment's decision, inside the caller's transaction:
    claim the row at `expected_version`, refuse an incoherent acceptance (rolling the claim back),
    and write the one audit event of the decision on that `kind` of item."""
    values = _decision_values(new_state, rationale, actor, member_sha256=member_version.sha256,
                              content_sha256=content_sha256)
    _claim(model, current, expected_version, **values)
    if decision == ACCEPT and check_coherence:
        refuse_incoherent(run, item)
    result = _fresh(model, current.pk)
    record_event(run=run, actor=actor, action=_DECIDED[kind][decision],
                 object_type=object_type, object_id=result.pk, before=before,
                 after=snapshot(result) | extra(result) | {"decided_member_sha256": result.decided_member_sha256})
    return result


@blind_decision(lambda kwargs: kwargs["issue_decision"].run)
def decide_issue(*, issue_decision: IssueDecision, decision: str, rationale: str, actor: Actor,
                 expected_version: int | None, check_coherence: bool = True) -> IssueDecision:
    """Accept, reject or reopen one integration issue (`check_coherence` as for decide_mapping)."""
    rationale = _check_decision(decision, rationale)
    run = issue_decision.run
    with transaction.atomic():
        ensure_open(run)
        current, new_state = _read_for_decision(IssueDecision, issue_decision.pk, expected_version, decision)
        before = issue_snapshot(current)
        return _settle(IssueDecision, current, expected_version, new_state, decision, rationale, actor,
                       run=run, member_version=current.issue.member_version,
                       content_sha256=current.issue.content_sha256, item=f"issue:{current.issue_id}",
                       kind="issue", object_type="issue_decision", before=before, snapshot=issue_snapshot,
                       check_coherence=check_coherence,
                       extra=lambda result: {"member": result.issue.member_version.member.role,
                                             "index": result.issue.index})


@blind_decision(lambda kwargs: kwargs["amendment"].run)
def decide_amendment(*, amendment: AmendmentDecision, decision: str, rationale: str, actor: Actor,
                     expected_version: int | None, check_coherence: bool = True) -> AmendmentDecision:
    """Accept, reject, carry into the result's Limitations, or reopen one amendment or unresolved
    conflict of a current member version; a rejection or a carry needs a rationale. Writes one
    `amendment.<accepted|rejected|carried|reopened>` event.

    A supersession (`X is superseded by Y`, with the supersedes mapping sync derived from it) is
    decided by its mapping, and the amendment follows it: accepting or rejecting it here decides each
    of its mappings through `decide_mapping` (each writes its one `mapping.<decision>` event, naming
    the amendment), exactly as deciding the mapping directly would, so the two never disagree. It
    cannot be carried: reject it with the reason to keep the supersession out of the shared set.
    """
    rationale = _check_decision(decision, rationale, allowed=AMENDMENT_DECISIONS)
    run = amendment.run
    with transaction.atomic():
        ensure_open(run)
        current = _fresh(AmendmentDecision, amendment.pk)
        if expected_version is None or current.version != expected_version:
            raise StaleVersion(current)
        member = current.member_version.member
        if member.current_version_id != current.member_version_id:
            raise InvalidDecision(f"{_upper_first(item_name(current))} is not in the current {member.role} report; "
                                  f"a later version replaced it")
        mappings = linked_mappings(run, current)
        if mappings:
            return _decide_supersession(current, mappings, decision, rationale, actor, check_coherence)
        new_state = _check_transition(current, decision)
        before = amendment_snapshot(current)
        return _settle(AmendmentDecision, current, expected_version, new_state, decision, rationale, actor,
                       run=run, member_version=current.member_version, content_sha256=current.content_sha256,
                       item=f"amendment:{current.pk}", kind="amendment", object_type="amendment_decision",
                       before=before, check_coherence=check_coherence,
                       snapshot=amendment_snapshot, extra=lambda result: {"member": member.role})


def _decide_supersession(amendment: AmendmentDecision, mappings: list[Mapping], decision: str, rationale: str,
                         actor: Actor, check_coherence: bool = True) -> AmendmentDecision:
    """Decide a supersession amendment through its mappings (in the caller's transaction, run locked)."""
    if decision == CARRY:
        raise InvalidDecision(
            f"{_upper_first(item_name(amendment))} states a supersession that its mapping {item_name(mappings[0])} "
            f"decides: accept or reject it; a rejection goes into the result's Limitations with its rationale")
    wanted = {ACCEPT: State.ACCEPTED, REJECT: State.REJECTED, REOPEN: State.PROPOSED}[decision]
    pending = [m for m in mappings if m.state != wanted]
    if not pending:
        raise InvalidDecision(f"{_upper_first(item_name(amendment))} is already {amendment.state}"
                              + ("; reopen it first" if decision != REOPEN else ""))
    for mapping in pending:
        decide_mapping(mapping=mapping, decision=decision, rationale=rationale, actor=actor,
                       expected_version=mapping.version, check_coherence=check_coherence)
    return _fresh(AmendmentDecision, amendment.pk)


def bulk_accept_candidates(run: Run, min_score: float):
    """The open suggestions a bulk accept at `min_score` would accept, in the order it accepts them
    (what its preview lists)."""
    return (Mapping.objects.filter(run=run, origin=Mapping.Origin.SUGGESTED, state=State.PROPOSED,
                                   score__gte=min_score)
            .select_related("source_record__member_version__member").defer(*_REPORT_BYTES).order_by("pk"))


def bulk_accept_suggestions(*, run: Run, min_score: float, actor: Actor, rationale: str,
                            only: list[int] | None = None) -> int:
    """Accept every open suggestion scoring at least `min_score`, each audited; return how many."""
    return len(bulk_accept(run=run, min_score=min_score, actor=actor, rationale=rationale, only=only))


@blind_decision(lambda kwargs: kwargs["run"])
def bulk_accept(*, run: Run, min_score: float, actor: Actor, rationale: str,
                only: list[int] | None = None) -> list[Mapping]:
    """Accept the open suggestions scoring at least `min_score` (of `only`, the pks the reviewer's
    preview listed, when given: never a row the preview did not show), each one `mapping.accepted`
    event; the accepted mappings, at their new versions, are what `undo_bulk_accept` takes back.

    Each is accepted as decide_mapping accepts it (coherence left to approval's blockers), in one
    transaction that locks the run once: the suggestions are read once, under that lock, and what
    their acceptances read of the run (`BulkReads`) too, so a bulk accept's statements per
    suggestion do not grow with the run."""
    rationale = _check_decision(ACCEPT, rationale)
    with transaction.atomic():
        locked = ensure_open(run)
        pending = bulk_accept_candidates(run, min_score)
        if only is not None:
            pending = pending.filter(pk__in=only)
        pending = list(pending)
        reads = BulkReads(run, pending)
        accepted = []
        with appending(locked):  # one move of the run's chain head for all the events
            for mapping in pending:
                mapping.run = locked  # the run this transaction locked, not one read again per suggestion
                try:
                    accepted.append(_accept_suggestion(mapping=mapping, actor=actor, rationale=rationale,
                                                       reads=reads))
                except RunLocked:
                    raise
                except (StateConflict, ProposalError):
                    continue  # someone decided it meanwhile, or its target no longer fits: leave it to a human
    return accepted


@blind_decision(lambda kwargs: kwargs["mapping"].run)
def _accept_suggestion(*, mapping: Mapping, actor: Actor, rationale: str, reads: BulkReads) -> Mapping:
    """One acceptance of bulk_accept, in its transaction: `mapping` as read under its lock (no
    acceptance of a bulk accept changes another mapping), routed through a pass as decide_mapping is."""
    with transaction.atomic():
        return _decide_mapping(run=mapping.run, current=mapping, new_state=_check_transition(mapping, ACCEPT),
                               decision=ACCEPT, rationale=rationale, actor=actor,
                               expected_version=mapping.version, target="", check_coherence=False, reads=reads,
                               in_bulk=True)


@blind_decision(lambda kwargs: kwargs["run"])
def undo_bulk_accept(*, run: Run, decisions: list[tuple[int, int]], actor: Actor, rationale: str) -> list[Mapping]:
    """Reopen exactly the mappings one bulk accept accepted, `decisions` being their (pk, version) as it
    left them, all or none in one transaction: each reopen is its `mapping.reopened` event. A mapping
    anyone changed since is not the bulk accept's decision any more: StaleVersion, nothing undone."""
    rationale = (rationale or "").strip() or "Undo of a bulk accept."
    with transaction.atomic():
        ensure_open(run)
        found = {m.pk: m for m in Mapping.objects.filter(run=run, pk__in=[pk for pk, _ in decisions])
                 .select_related("source_record__member_version__member")}
        reopened = []
        for pk, version in decisions:
            mapping = found.get(pk)
            if mapping is None:
                continue
            if mapping.version != version or mapping.state != State.ACCEPTED:
                raise StaleVersion(mapping)
            reopened.append(decide_mapping(mapping=mapping, decision=REOPEN, rationale=rationale, actor=actor,
                                           expected_version=version))
    return reopened


class DecisionsPointAtIt(InvalidDecision):
    """Rejecting the canonical record would leave accepted decisions pointing at a rejected record;
    `mappings` names them. The reviewer sees them and confirms (`acknowledged`), or decides otherwise."""

    code = "decisions_point_at_it"

    def __init__(self, record: CanonicalRecord, mappings: list[Mapping]):
        self.mappings = mappings
        names = ", ".join(item_name(m) for m in mappings)
        super().__init__(f"Not rejected yet: {len(mappings)} accepted decision{'s' if len(mappings) != 1 else ''} "
                         f"point{'s' if len(mappings) == 1 else ''} at {record.canonical_id} ({names}). Rejecting "
                         f"it makes each one a blocker until it is reopened or retargeted; confirm to reject anyway")


def accepted_decisions_on(record: CanonicalRecord) -> list[Mapping]:
    """The accepted mappings (same, part-of, supersedes; a `new` one other than the record's own
    allocation) whose target is `record`: what its rejection would contradict."""
    return list(Mapping.objects.filter(run=record.run_id, target=record.canonical_id, state=State.ACCEPTED)
                .exclude(relation=Mapping.Relation.NO_COUNTERPART).order_by("source", "pk"))


@blind_decision(lambda kwargs: kwargs["record"].run)
def reject_canonical_record(*, record: CanonicalRecord, rationale: str, actor: Actor,
                            acknowledged: set[int] | None = None) -> CanonicalRecord:
    """Take a canonical record out of the shared set; its ID is never given to another record.
    With `acknowledged` (the mappings the reviewer was shown), an accepted decision pointing at it
    that is not among them refuses the rejection (DecisionsPointAtIt) before anything is saved; the
    API, without it, rejects and leaves the contradiction to the blockers."""
    rationale = _limited(rationale)
    if not rationale:
        raise ProposalError("rejecting a canonical record needs a rationale", "rationale")
    with transaction.atomic():
        ensure_open(record.run)
        if acknowledged is not None:
            dependents = accepted_decisions_on(record)
            if any(m.pk not in acknowledged for m in dependents):
                raise DecisionsPointAtIt(record, dependents)
        before = canonical_snapshot(record)
        updated = CanonicalRecord.objects.filter(pk=record.pk, state=CanonicalRecord.State.ACTIVE).update(
            state=CanonicalRecord.State.REJECTED, rationale=rationale, version=F("version") + 1)
        if not updated:
            raise InvalidDecision(f"canonical record {record.canonical_id} is already rejected")
        record.refresh_from_db(fields=["state", "rationale", "version"])
        record_event(run=record.run, actor=actor, action=Action.CANONICAL_REJECTED, object_type="canonical_record",
                     object_id=record.canonical_id, before=before, after=canonical_snapshot(record))
    return record


def current_issue_decisions(run: Run):
    """Issue decisions on the issues of each member's current version (what approval waits for)."""
    return IssueDecision.objects.filter(
        run=run, issue__member_version__member__current_version=F("issue__member_version"))


def decision_progress(run: Run) -> dict[str, Any]:
    """Counts of decided and open items: {"mappings": {...}, "issues": {...}, "amendments": {...},
    "total", "decided", "undecided", "stale"}; amendments count the current members' amendments and
    unresolved conflicts (also `carried` and `conflicts`). Three queries, whatever the run's size."""
    def counts(query) -> dict[str, int]:
        row = query.aggregate(
            total=Count("id"),
            accepted=Count("id", filter=Q(state=State.ACCEPTED)),
            rejected=Count("id", filter=Q(state=State.REJECTED)),
            proposed=Count("id", filter=Q(state=State.PROPOSED)),
            stale=Count("id", filter=Q(state=State.STALE)),
        )
        row["decided"] = row["accepted"] + row["rejected"]
        row["undecided"] = row["proposed"] + row["stale"]
        return row

    mappings = counts(Mapping.objects.filter(run=run))
    issues = counts(current_issue_decisions(run))
    amendments = current_amendment_decisions(run).aggregate(
        total=Count("id"),
        accepted=Count("id", filter=Q(state=State.ACCEPTED)),
        rejected=Count("id", filter=Q(state=State.REJECTED)),
        carried=Count("id", filter=Q(state=CARRIED)),
        proposed=Count("id", filter=Q(state=State.PROPOSED)),
        stale=Count("id", filter=Q(state=State.STALE)),
        conflicts=Count("id", filter=Q(kind=AmendmentDecision.Kind.UNRESOLVED_CONFLICT)),
    )
    amendments["decided"] = amendments["accepted"] + amendments["rejected"] + amendments["carried"]
    amendments["undecided"] = amendments["proposed"] + amendments["stale"]
    blocks = (mappings, issues, amendments)
    return {"mappings": mappings, "issues": issues, "amendments": amendments,
            **{key: sum(block[key] for block in blocks) for key in ("total", "decided", "undecided", "stale")}}

"""Submitting a review pass, the consensus of the submitted passes, and adjudicating their conflicts
(DESIGN §2 "Review pass", §5 "Independent reviews", §9 adjudicate).

A pass is submitted once nothing in it is open, judged by the run's own blockers read in the pass's
world. It is then frozen: `ReviewPass.decisions` keeps what it decided on each item. When the last
required pass is submitted, every item the passes decided alike becomes the run's decision, through
the same services a single reviewer uses (audited as the consensus of the passes), and every item
they decided differently becomes a `Conflict`. An adjudicator who wrote none of the passes settles
each, again through those services, and an adjudication that would leave the settled decisions
incoherent is refused with the rule it breaks.
"""
from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from reviews.access import may_adjudicate
from reviews.actions import Action
from reviews.audit import Actor, appending, lock_run, record_event
from reviews.free_text import too_long
from reviews.models import Run
from reviews.queue import Job

from .. import dispositions
from ..blind import PassRefused, active_world, consensus_made, settling
from ..blockers import run_standing
from ..models import AmendmentDecision, CanonicalRecord, Conflict, IssueDecision, Mapping, ReviewPass
from ..services import decisions
from ..services.coherence import IncoherentDecision
from ..errors import InvalidDecision, ProposalError, StaleVersion, StateConflict
from ..vocabulary import ACCEPT, CARRY, REJECT, State
from .world import effective_entries, pass_world

# The items passes are compared on: a canonical record a pass allocated, a kind's counter and a
# supersession amendment (it follows its mapping) are consequences of these, not decisions of their own.
COMPARED = ("mapping", "issue", "amendment", "canonical")
KEEP = "keep"  # an adjudication keeping a canonical record some pass rejected


class PassNotFinished(StateConflict):
    code = "pass_open_items"

    def __init__(self, message: str, blockers: list):
        super().__init__(message)
        self.blockers = blockers


def _rows(run: Run, keys: set[tuple[str, str]]) -> dict[tuple[str, str], Any]:
    """The shared rows the keys name."""
    found: dict[tuple[str, str], Any] = {}

    def pks(model: str) -> list[int]:
        return [int(k) for m, k in keys if m == model]

    for m in Mapping.objects.filter(run=run, pk__in=pks("mapping")):
        found[("mapping", str(m.pk))] = m
    for i in IssueDecision.objects.filter(run=run, pk__in=pks("issue")).select_related("issue__member_version__member"):
        found[("issue", str(i.pk))] = i
    for a in (AmendmentDecision.objects.filter(run=run, pk__in=pks("amendment"))
              .select_related("member_version__member").defer("member_version__content", "member_version__parsed")):
        found[("amendment", str(a.pk))] = a
    for c in CanonicalRecord.objects.filter(run=run, canonical_id__in=[k for m, k in keys if m == "canonical"]):
        found[("canonical", c.canonical_id)] = c
    return found


def _decision_of(model: str, row, values: dict[str, Any]) -> dict[str, Any]:
    """What a pass decided on a row, as compared: its state, and the target an accepted mapping names
    (a `new` mapping's allocated ID depends on the order decisions came in, so it is not compared)."""
    target = ""
    if model == "mapping" and values.get("state") == State.ACCEPTED and row.relation != Mapping.Relation.NEW:
        target = values.get("target", row.target)
    return {"state": values.get("state"), "target": target, "rationale": values.get("rationale", "")}


def _compared(model: str, row) -> bool:
    """False for a supersession amendment: its mapping decides it, and is compared instead."""
    return not (model == "amendment" and row.mapping_id is not None)


def frozen_decisions(run: Run, review_pass: ReviewPass) -> dict[str, dict[str, Any]]:
    entries = [e for e in effective_entries(review_pass, run) if e.model in COMPARED and not e.created]
    rows = _rows(run, {(e.model, e.key) for e in entries})
    frozen = {}
    for entry in entries:
        row = rows.get((entry.model, entry.key))
        if row is None or not _compared(entry.model, row):
            continue
        frozen[f"{entry.model}:{entry.key}"] = {"name": decisions.item_name(row), "decided": True,
                                                **_decision_of(entry.model, row, entry.values)}
    return frozen


def submit_pass(*, run: Run, reviewer, actor: Actor) -> ReviewPass:
    """Submit the reviewer's pass (PassNotFinished naming what is open in it); the last required one
    brings the consensus and the conflicts."""
    if active_world(run) is not None:
        raise RuntimeError("submit_pass runs outside a pass world: its view must not enter one "
                           "(`decides_in_review_pass`)")
    with transaction.atomic():
        lock_run(run)
        run.refresh_from_db(fields=["reviews_required", "status"])
        if run.reviews_required < 2:
            raise PassRefused(f"Run {run.run_id} needs one review: its decisions are the run's as they are taken")
        review_pass = ReviewPass.objects.filter(run=run, reviewer=reviewer).first()
        if review_pass is None:
            raise PassRefused(f"You have no review of run {run.run_id} to submit: decide its items first")
        if review_pass.state == ReviewPass.State.SUBMITTED:
            raise PassRefused(f"Your review of run {run.run_id} (pass {review_pass.number}) is already submitted")
        with pass_world(run, reviewer) as world:
            open_items = [b for b in run_standing(run).blockers
                          if b.code in dispositions.OPEN_CODES or b.code in dispositions.CONFLICT_CODES]
            world.pending.clear()
        if open_items:
            shown = "; ".join(b.message for b in open_items[:3])
            more = f" (and {len(open_items) - 3} more)" if len(open_items) > 3 else ""
            raise PassNotFinished(f"Not submitted: {len(open_items)} item{'s are' if len(open_items) != 1 else ' is'} "
                                  f"still open or contradictory in your review: {shown}{more}", open_items)
        review_pass.decisions = frozen_decisions(run, review_pass)
        review_pass.state, review_pass.submitted_at = ReviewPass.State.SUBMITTED, timezone.now()
        review_pass.save(update_fields=["decisions", "state", "submitted_at"])
        record_event(run=run, actor=actor, action=Action.PASS_SUBMITTED, object_type="review_pass",
                     object_id=review_pass.number,
                     after={"pass": review_pass.number, "reviewer": reviewer.get_username(),
                            "decisions": len(review_pass.decisions)})
        if ReviewPass.objects.filter(run=run, state=ReviewPass.State.SUBMITTED).count() >= run.reviews_required:
            # Consensus decides every agreed item through the services: seconds per thousand items, too
            # long for a request, so a worker does it (and the sweep queues it again if it was lost).
            CONSENSUS.after_commit(run.pk)
    return review_pass


CONSENSUS = Job("reconcile.build_consensus")


def build_consensus(*, run: Run) -> bool:
    """The consensus of the run's submitted passes, once (idempotent: False when it is made, or not due)."""
    with transaction.atomic():
        lock_run(run)
        run.refresh_from_db(fields=["reviews_required", "status"])
        submitted = list(ReviewPass.objects.filter(run=run, state=ReviewPass.State.SUBMITTED)
                         .select_related("reviewer").order_by("number"))
        if len(submitted) < run.reviews_required or consensus_made(run):
            return False
        with appending(run):  # an event per agreed item, the run's chain head moved once
            _consensus(run, submitted)
    return True


def runs_awaiting_consensus() -> list[int]:
    """Runs whose passes are all submitted and whose consensus is not made (what the sweep queues)."""
    return list(Run.objects.filter(reviews_required__gt=1).annotate(
        submitted=Count("review_passes", filter=Q(review_passes__state=ReviewPass.State.SUBMITTED)))
        .filter(submitted__gte=F("reviews_required"))
        .exclude(audit_events__action=Action.PASS_CONSENSUS).values_list("pk", flat=True))


def _consensus_actor(passes: list[ReviewPass]) -> Actor:
    return Actor(label="consensus:" + ",".join(f"pass {p.number} ({p.reviewer.get_username()})" for p in passes))


def _joined_rationale(passes: list[ReviewPass], values: list[dict[str, Any]]) -> str:
    said = [f"{p.reviewer.get_username()}: {v['rationale']}" for p, v in zip(passes, values) if v.get("rationale")]
    return "; ".join(said) or "Agreed by " + " and ".join(f"pass {p.number}" for p in passes) + "."


def _apply_order(model: str, key: str, decided: dict[str, Any], row) -> tuple[int, int]:
    """Acceptances first (a `new` mapping's allocation before what may name it), then rejections and
    carries, canonical records last (a rejection of one an accepted mapping names is then a conflict)."""
    if model == "canonical":
        return (3, 0)
    if decided["state"] == State.ACCEPTED:
        return (0 if model == "mapping" and row.relation == Mapping.Relation.NEW else 1, int(key))
    return (2, int(key))


def _consensus(run: Run, passes: list[ReviewPass]) -> None:
    """Agreements become the run's decisions; disagreements become conflicts (run locked by the caller)."""
    keys = {tuple(key.split(":", 1)) for p in passes for key in p.decisions}
    rows = _rows(run, keys)
    actor = _consensus_actor(passes)
    agreed, conflicts = [], []
    for model, key in sorted(keys):
        row = rows.get((model, key))
        if row is None:
            continue
        as_is = _decision_of(model, row, {"state": row.state, "target": getattr(row, "target", ""),
                                          "rationale": row.rationale})
        values = [p.decisions.get(f"{model}:{key}", as_is | {"rationale": "", "name": decisions.item_name(row),
                                                             "decided": False}) for p in passes]
        for p, value in zip(passes, values):  # every pass names every compared item, for the agreement figures
            p.decisions.setdefault(f"{model}:{key}", value)
        if len({(v["state"], v["target"]) for v in values}) == 1:
            agreed.append((model, key, values))
        else:
            conflicts.append((model, key, values, ""))
    for p in passes:
        p.save(update_fields=["decisions"])
    applied = 0
    for model, key, values in sorted(agreed, key=lambda i: _apply_order(i[0], i[1], i[2][0], rows[(i[0], i[1])])):
        try:
            applied += _settle(rows[(model, key)], model, values[0], _joined_rationale(passes, values), actor,
                               check=False)
        except (StateConflict, ProposalError) as refused:
            conflicts.append((model, key, values, f"The reviews agreed, but the decision was refused: {refused}"))
    for model, key, values, note in conflicts:
        Conflict.objects.create(run=run, model=model, key=key, name=decisions.item_name(rows[(model, key)]),
                                note=note, decisions=[{"pass": p.number, "reviewer": p.reviewer.get_username(), **v}
                                           for p, v in zip(passes, values)])
    record_event(run=run, actor=actor, action=Action.PASS_CONSENSUS, object_type="run", object_id=run.run_id,
                 after={"passes": [{"pass": p.number, "reviewer": p.reviewer.get_username()} for p in passes],
                        "agreed": len(agreed) - sum(1 for c in conflicts if c[3]), "applied": applied,
                        "conflicts": [decisions.item_name(rows[(m, k)]) for m, k, _, _ in conflicts]})


_DECISION_FOR = {State.ACCEPTED: ACCEPT, State.REJECTED: REJECT, "carried": CARRY}


def _settle(row, model: str, decided: dict[str, Any], rationale: str, actor: Actor, *, check: bool = True) -> int:
    """Make `decided` the shared row's decision through the single-review services; 1 if it changed it.
    Consensus leaves out the per-item coherence check (`check`): each pass was coherent, and what the
    agreed set with the conflicts left out contradicts shows once, as approval's blockers, for an
    adjudicator; asking it per item made the last submission quadratic in the run's size."""
    with settling():
        row = type(row).objects.get(pk=row.pk)
        if model == "canonical":
            if decided["state"] != CanonicalRecord.State.REJECTED or row.state == CanonicalRecord.State.REJECTED:
                return 0
            decisions.reject_canonical_record(record=row, rationale=rationale, actor=actor)
            return 1
        if decided["state"] == row.state or decided["state"] not in _DECISION_FOR:
            return 0
        decision = _DECISION_FOR[decided["state"]]
        if model == "mapping":
            decisions.decide_mapping(mapping=row, decision=decision, rationale=rationale, actor=actor,
                                     expected_version=row.version, target=decided.get("target") or None,
                                     check_coherence=check)
        elif model == "issue":
            decisions.decide_issue(issue_decision=row, decision=decision, rationale=rationale, actor=actor,
                                   expected_version=row.version, check_coherence=check)
        else:
            decisions.decide_amendment(amendment=row, decision=decision, rationale=rationale, actor=actor,
                                       expected_version=row.version, check_coherence=check)
    return 1


ADJUDICATIONS = {"mapping": (ACCEPT, REJECT), "issue": (ACCEPT, REJECT), "amendment": (ACCEPT, REJECT, CARRY),
                 "canonical": (KEEP, REJECT)}
_STATE_FOR = {ACCEPT: State.ACCEPTED, REJECT: State.REJECTED, CARRY: "carried", KEEP: CanonicalRecord.State.ACTIVE}


def settle_conflict(*, conflict: Conflict, decision: str, rationale: str, reviewer, actor: Actor,
                    expected_version: int | None, target: str | None = None) -> Conflict:
    """An adjudicator's decision on one conflict (DESIGN §9): refused to a reviewer without the
    permission or who wrote one of its passes, and when it would leave the decisions incoherent."""
    if not may_adjudicate(reviewer):
        raise PermissionDenied("Settling a conflict between reviews needs the adjudicate permission "
                               "(issue_token NAME --role reviewer --adjudicate)")
    authors = {d["reviewer"] for d in conflict.decisions}
    if reviewer.get_username() in authors:
        raise PermissionDenied(f"You wrote one of the reviews that disagree on {conflict.name}: another "
                               "adjudicator settles it")
    allowed = ADJUDICATIONS[conflict.model]
    if decision not in allowed:
        raise ProposalError(f"decision must be one of {', '.join(allowed)}, not {decision!r}", "decision")
    rationale = (rationale or "").strip()
    if not rationale:
        raise ProposalError("an adjudication needs a rationale: say why this decision and not the other", "rationale")
    if refusal := too_long("rationale", rationale):
        raise ProposalError(refusal, "rationale")
    run = conflict.run
    with transaction.atomic():
        lock_run(run)
        current = Conflict.objects.get(pk=conflict.pk)
        if expected_version is None or current.version != expected_version:
            raise StaleVersion(current)
        if current.state != Conflict.State.OPEN:
            raise InvalidDecision(f"The conflict on {current.name} is already settled")
        before = _incoherences(run)
        row = _rows(run, {(current.model, current.key)})[(current.model, current.key)]
        chosen = {"state": _STATE_FOR[decision], "target": (target or "").strip()}
        if decision != KEEP:  # keeping a canonical record writes nothing but the adjudication
            # Coherence judged once, below, over every blocker the settlement makes, not per item.
            _settle(row, current.model, chosen, rationale, actor, check=False)
        made = [b for b in _incoherences(run).values() if (b.code, b.item, b.record, b.message) not in before]
        if made:
            raise IncoherentDecision("Not settled: it would contradict another decision. "
                                     + "; ".join(dict.fromkeys(b.refusal or b.message for b in made)) + ".", made)
        Conflict.objects.filter(pk=current.pk).update(
            state=Conflict.State.SETTLED, decision=decision, rationale=rationale, settled_by=actor.label,
            settled_at=timezone.now(), version=F("version") + 1)
        current.refresh_from_db()
        record_event(run=run, actor=actor, action=Action.CONFLICT_SETTLED, object_type="conflict", object_id=current.pk,
                     before={"state": Conflict.State.OPEN, "decisions": current.decisions},
                     after={"item": current.name, "decision": decision, "rationale": rationale})
    return current


def _incoherences(run: Run) -> dict[tuple, Any]:
    return {(b.code, b.item, b.record, b.message): b for b in run_standing(run).blockers
            if b.code in dispositions.CONFLICT_CODES}

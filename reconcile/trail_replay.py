"""The run's decisions replayed from its signed trail (DESIGN §8 "The result comes from the signed trail").

The app's database role can UPDATE the decision tables: a mapping flipped from accepted to rejected,
or given another target, with a plain UPDATE leaves no event, and the result would be rendered from
it. Approval and finalization therefore ask `trail_blockers(run)`, which

- checks the run's chain (`reviews.audit_check.verify_chain`: every link, every signature, unsigned
  events only in sealed history), and the chain of each run it revises, whose trail its carried
  decisions come from;
- folds the decision events, in sequence order, into what each item's row must say now, and names
  every row that says otherwise, with the event that says what it should.

What a decision event determines, and so what is compared (nothing else is: a re-upload moves rows
to new record versions, bumps versions and rewrites labels without an event of its own):

- a mapping, an issue decision, an amendment decision whose row is decided (accepted, rejected,
  carried): the state, and the target, source, relation and rationale, the item's last event recorded
  (an amendment that followed its supersedes mapping: the state only, its rationale is its
  mappings'); a decided row the trail never decided is named. An open row (proposed, stale) is not
  compared: it blocks approval as it is;
- a canonical record: its state (active unless an event rejected, withdrew or reactivated it; a
  `new` mapping's acceptance allocates or takes back its own, its reopening withdraws it), and a
  rejected one's rationale where the event recorded it;
- a pass entry (`PassEntry`): the state, rationale and target its last `pass.decided` event recorded.

A revision (`reconcile.services.revisions`) copies the final run's rows in one go and audits only
counts: its carried rows start from what the predecessor's trail says of the rows they copy, paired
in the order the copy made them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import F

from reviews.actions import Action
from reviews.audit_check import verify_chain
from reviews.models import AuditEvent, Run

from .dispositions import Blocker
from .models import AmendmentDecision, CanonicalRecord, IssueDecision, Mapping, PassEntry
from .vocabulary import State

TRAIL_CODE = "trail_differs"  # a row the trail does not say, or a chain that does not verify
CARRIED = AmendmentDecision.State.CARRIED
DECIDED = frozenset({State.ACCEPTED, State.REJECTED, CARRIED})
SHOWN = 20  # blockers named one by one; the rest counted in one more

_ITEM_EVENTS = {
    "mapping": {Action.MAPPING_PROPOSED, Action.MAPPING_ACCEPTED, Action.MAPPING_REJECTED, Action.MAPPING_REOPENED,
                Action.MAPPING_MARKED_STALE},
    "issue_decision": {Action.ISSUE_ACCEPTED, Action.ISSUE_REJECTED, Action.ISSUE_REOPENED,
                       Action.ISSUE_MARKED_STALE},
    "amendment_decision": {Action.AMENDMENT_ACCEPTED, Action.AMENDMENT_REJECTED, Action.AMENDMENT_CARRIED,
                           Action.AMENDMENT_REOPENED, Action.AMENDMENT_MARKED_STALE,
                           Action.AMENDMENT_FOLLOWED_MAPPING},
    "canonical_record": {Action.CANONICAL_REJECTED, Action.CANONICAL_WITHDRAWN, Action.CANONICAL_REACTIVATED},
}
_FOLDED = sorted({*(a for actions in _ITEM_EVENTS.values() for a in actions), Action.PASS_DECIDED,
                  Action.RUN_REVISION_CREATED})


@dataclass(frozen=True)
class Said:
    """What the trail says one row is now, and the event that said it last."""

    state: str
    run_id: str
    seq: int
    action: str
    values: tuple[tuple[str, Any], ...] = ()  # the other columns it determines (target, rationale, …)

    def event(self) -> str:
        return f"event #{self.seq} ({self.action}) of run {self.run_id}'s trail"


@dataclass
class Replayed:
    mappings: dict[int, Said] = field(default_factory=dict)
    issues: dict[int, Said] = field(default_factory=dict)
    amendments: dict[int, Said] = field(default_factory=dict)
    canonical: dict[str, Said] = field(default_factory=dict)
    entries: dict[tuple[int, str, str], Said] = field(default_factory=dict)  # (pass, model, key)


def _said(event: dict, run_id: str, state: str, **values) -> Said:
    return Said(state, run_id, event["seq"], event["action"],
                tuple((name, value) for name, value in values.items() if value is not None))


def _update(table: dict, key, event: dict, run_id: str, after: dict, names: tuple[str, ...]) -> None:
    """The row's new state from `after`, keeping what the trail said before of the columns `after` omits."""
    known = dict(table[key].values) if key in table else {}
    known |= {name: after[name] for name in names if name in after}
    table[key] = _said(event, run_id, after.get("state", table[key].state if key in table else ""), **known)


_MAPPING = ("source", "relation", "target", "rationale")


def _fold(replayed: Replayed, event: dict, run_id: str) -> None:
    action, after, object_id = event["action"], event["after"] or {}, event["object_id"]
    if action in _ITEM_EVENTS["mapping"]:
        pk = int(object_id)
        _update(replayed.mappings, pk, event, run_id, after, _MAPPING)
        if after.get("canonical_id"):  # a `new` mapping's allocation (or its own taken back)
            replayed.canonical[after["canonical_id"]] = _said(event, run_id, CanonicalRecord.State.ACTIVE,
                                                              rationale="")
        if after.get("canonical_withdrawn"):
            replayed.canonical[after["canonical_withdrawn"]] = _said(event, run_id, CanonicalRecord.State.REJECTED)
        for followed in after.get("amendments") or ():  # supersessions following their mapping: state only
            replayed.amendments[int(followed["amendment"])] = _said(event, run_id, followed["state"])
    elif action in _ITEM_EVENTS["issue_decision"]:
        _update(replayed.issues, int(object_id), event, run_id, after, ("rationale",))
    elif action in _ITEM_EVENTS["amendment_decision"]:
        _update(replayed.amendments, int(object_id), event, run_id, after, ("rationale",))
    elif action in _ITEM_EVENTS["canonical_record"]:
        replayed.canonical[object_id] = _said(event, run_id, after.get("state", ""), rationale=after.get("rationale"))
    elif action == Action.PASS_DECIDED:
        number = int(after.get("pass", object_id))
        for change in after.get("changes") or ():
            model, _, key = str(change.get("item", "")).partition(":")
            values = {"rationale": change.get("rationale", "")}
            if "target" in change:
                values["target"] = change["target"]
            replayed.entries[(number, model, key)] = _said(event, run_id, change.get("state") or "", **values)


def replay(run: Run, *, _seen: dict[int, Replayed] | None = None) -> Replayed:
    """What the run's trail (and, for a revision, the trail of the run it revises) says each row is now."""
    seen = _seen if _seen is not None else {}
    if run.pk in seen:
        return seen[run.pk]
    replayed = Replayed()
    events = (AuditEvent.objects.filter(run=run, action__in=_FOLDED).order_by("seq")
              .values("seq", "action", "object_id", "after"))
    for event in events.iterator(chunk_size=2000):
        if event["action"] == Action.RUN_REVISION_CREATED:
            if run.revises_id is not None:
                _carry(replayed, replay(run.revises, _seen=seen), run.revises, run, (event["after"] or {}).get("carried"))
            continue
        _fold(replayed, event, run.run_id)
    seen[run.pk] = replayed
    return replayed


def _carry(replayed: Replayed, old: Replayed, old_run: Run, new_run: Run, counts: dict | None) -> None:
    """The predecessor's replayed rows as the revision copied them onto `new_run`: its first rows of each
    table, in the order `_carry_decisions` read the old ones (a row keeps its pk when a re-upload moves it)."""
    counts = counts or {}
    replayed.canonical |= old.canonical  # copied under the same IDs
    tables = (
        (replayed.mappings, old.mappings, Mapping.objects.filter(run=old_run).order_by("pk"),
         Mapping.objects.filter(run=new_run), counts.get("mappings", 0)),
        (replayed.issues, old.issues,
         IssueDecision.objects.filter(run=old_run, issue__member_version__member__current_version=F(
             "issue__member_version")).order_by("issue_id"),
         IssueDecision.objects.filter(run=new_run), counts.get("issue_decisions", 0)),
        (replayed.amendments, old.amendments,
         AmendmentDecision.objects.filter(run=old_run, member_version__member__current_version=F("member_version"))
         .order_by("member_version_id", "index"),
         AmendmentDecision.objects.filter(run=new_run), counts.get("amendment_decisions", 0)),
    )
    for into, said, old_rows, new_rows, count in tables:
        old_pks = old_rows.values_list("pk", flat=True)[:count]
        for old_pk, new_pk in zip(old_pks, new_rows.order_by("pk").values_list("pk", flat=True)[:count]):
            if old_pk in said:
                into[new_pk] = said[old_pk]


def _decidable(name: str, state: str, columns: dict[str, Any], said: Said | None) -> str:
    """Why a mapping's, issue's or amendment's row differs from what the trail says of it ('' when it does not)."""
    if state not in DECIDED:
        return ""  # open (proposed or stale), whatever the trail says: approval's blockers name it
    if said is None:
        return f"{name} is {state} in the database, but its trail has no decision on it"
    if state != said.state:
        return f"{name} is {state} in the database, but {said.event()} left it {said.state}"
    wrong = [f"{column} {columns[column]!r} (the trail: {value!r})" for column, value in said.values
             if column in columns and columns[column] != value]
    return f"{name} has {', '.join(wrong)} in the database, not what {said.event()} recorded" if wrong else ""


def _canonical(row: dict[str, Any], said: Said | None) -> str:
    name = f"Canonical record {row['canonical_id']}"
    state = said.state if said is not None else CanonicalRecord.State.ACTIVE
    where = said.event() if said is not None else "its trail (no event rejected it)"
    if row["state"] != state:
        return f"{name} is {row['state']} in the database, but {where} left it {state}"
    rationale = dict(said.values).get("rationale") if said is not None else None
    if state == CanonicalRecord.State.REJECTED and rationale is not None and row["rationale"] != rationale:
        return f"{name} has rationale {row['rationale']!r} in the database, not what {where} recorded"
    return ""


def _entry(row: dict[str, Any], said: Said | None) -> str:
    values = row["values"] or {}
    name = f"Pass {row['review_pass__number']}'s entry on {row['model']}:{row['key']}"
    if said is None:
        return f"{name} is in the database, but no pass.decided event of its trail records it"
    found = {"state": values.get("state") or "", "rationale": values.get("rationale", ""),
             **({"target": values.get("target")} if "target" in values else {})}
    wanted = {"state": said.state, **dict(said.values)}
    wrong = [f"{column} {found.get(column)!r} (the trail: {value!r})" for column, value in wanted.items()
             if found.get(column) != value]
    return f"{name} has {', '.join(wrong)} in the database, not what {said.event()} recorded" if wrong else ""


def _differences(run: Run, replayed: Replayed) -> list[tuple[str, str]]:
    """(item, why) for every row of `run` that differs from the trail."""
    found = []
    for row in Mapping.objects.filter(run=run).order_by("pk").values("pk", "state", *_MAPPING):
        name = f"Mapping {row['pk']} ({row['source']} {row['relation']} {row['target'] or '∅'})"
        found.append((f"mapping:{row['pk']}", _decidable(name, row["state"], row, replayed.mappings.get(row["pk"]))))
    for model, table, said in (("issue", IssueDecision, replayed.issues), ("amendment", AmendmentDecision,
                                                                          replayed.amendments)):
        for row in table.objects.filter(run=run).order_by("pk").values("pk", "state", "rationale"):
            name = f"{'Issue' if model == 'issue' else 'Amendment'} decision {row['pk']}"
            found.append((f"{model}:{row['pk']}", _decidable(name, row["state"], row, said.get(row["pk"]))))
    for row in CanonicalRecord.objects.filter(run=run).order_by("pk").values("canonical_id", "state", "rationale"):
        found.append((f"canonical:{row['canonical_id']}", _canonical(row, replayed.canonical.get(row["canonical_id"]))))
    entries = (PassEntry.objects.filter(review_pass__run=run).exclude(model="counter").order_by("pk")
               .values("review_pass__number", "model", "key", "values"))
    for row in entries:
        key = (row["review_pass__number"], row["model"], row["key"])
        found.append((f"pass {key[0]} {key[1]}:{key[2]}", _entry(row, replayed.entries.get(key))))
    return [(item, why) for item, why in found if why]


def _chains(run: Run) -> list[Run]:
    """The run and every run it revises, whose trails its decisions come from."""
    chain = [run]
    while chain[-1].revises_id is not None:
        chain.append(chain[-1].revises)
    return chain


def trail_blockers(run: Run) -> list[Blocker]:
    """What stops the run's result coming from its signed trail ([] when nothing does): each chain that
    does not verify, else each row that differs from the trail's replay, named with its event."""
    blockers = []
    for each in _chains(run):
        check = verify_chain(each)
        if not check.ok:
            where = f"event #{check.broken_seq}" + (f" (id {check.broken_event_id})" if check.broken_event_id else "")
            blockers.append(Blocker(TRAIL_CODE, each.run_id, f"The audit trail of run {each.run_id} does not verify "
                                    f"at {where}: {check.reason}. The decisions cannot be read from it."))
    if blockers:
        return blockers
    differences = _differences(run, replay(run))
    blockers = [Blocker(TRAIL_CODE, item, f"{why}: changed outside the app's services. Its decisions come from "
                        f"the signed trail; restore the row or decide it again.", item=item)
                for item, why in differences[:SHOWN]]
    if len(differences) > SHOWN:
        blockers.append(Blocker(TRAIL_CODE, run.run_id, f"And {len(differences) - SHOWN} more rows differ from "
                                f"the trail of run {run.run_id}."))
    return blockers

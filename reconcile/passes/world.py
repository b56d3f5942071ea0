"""A reviewer's own review pass, laid over the run's shared rows (DESIGN §5 "Independent reviews").

A pass is not a second reconciliation with rules of its own: it is the values its reviewer's
decisions gave the shared rows (`PassEntry`). Inside a *pass world* those values are written over
the rows in a savepoint that is always rolled back, so every rule of `reconcile.services`
(transitions, one place per record, targets, coherence) and every page and API reply read the pass
exactly as they read a run with one reviewer. A decision taken in a pass world runs the real
service there; what it changed is read back (the tracked rows before and after), the savepoint is
rolled back, and the change is kept as the pass's entries with one `pass.decided` event. Nothing of
a pass reaches the shared rows before every pass is submitted (`reconcile.passes.consensus`).

A request enters the world of its caller's pass when `reviews.access.run_for` lets a reviewer read
a run that is in independent review, or post a decision to it from a view marked `in_pass_world`
(`enter_for_request`); `PassWorldMiddleware` leaves it once the response is rendered. Outside a
request, a decision enters and leaves a world of its own.
"""
from __future__ import annotations

import contextvars
import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import wraps
from typing import Any, Callable

from django.contrib.auth import get_user_model
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.models import Max
from django.utils.dateparse import parse_datetime

from reviews.access import ADMIN, REVIEWER, may_adjudicate, roles_of
from reviews.actions import Action
from reviews.audit import Actor, lock_run, record_event
from reviews.models import AuditEvent, Run

from ..models import AmendmentDecision, CanonicalRecord, Conflict, IssueDecision, KindCounter, Mapping, PassEntry, ReviewPass
from ..errors import StateConflict

DECIDED = ["state", "version", "rationale", "decided_by", "decided_at", "decided_member_sha256",
           "decided_content_sha256"]


@dataclass(frozen=True)
class Tracked:
    model: type
    key: str  # the field naming a row within its run
    fields: tuple[str, ...]


# The shared rows a decision can change, and which of their columns.
TRACKED = {
    "mapping": Tracked(Mapping, "pk", (*DECIDED, "target")),
    "issue": Tracked(IssueDecision, "pk", tuple(DECIDED)),
    "amendment": Tracked(AmendmentDecision, "pk", tuple(DECIDED)),
    "canonical": Tracked(CanonicalRecord, "canonical_id", ("kind", "number", "label", "text", "origin",
                                                           "source_record_id", "state", "rationale", "version",
                                                           "created_at")),
    "counter": Tracked(KindCounter, "kind", ("last_number",)),
}
# Applied in this order: a canonical record a pass allocated exists before the mapping naming it.
APPLY_ORDER = ("counter", "canonical", "mapping", "issue", "amendment")


class PassRefused(StateConflict):
    """A decision the reviewer's pass cannot take (submitted, or the passes are all taken)."""

    code = "review_pass"


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(values, cls=DjangoJSONEncoder))


def snapshot(run: Run) -> dict[tuple[str, str], dict[str, Any]]:
    """Every tracked row of the run as plain JSON values, keyed by (model, key)."""
    rows = {}
    for name, tracked in TRACKED.items():
        for row in tracked.model.objects.filter(run=run).values(tracked.key, *tracked.fields):
            key = str(row.pop(tracked.key))  # before `_plain(row)`: it must not carry the key
            rows[(name, key)] = _plain(row)
    return rows


def _python(values: dict[str, Any]) -> dict[str, Any]:
    return {name: (parse_datetime(value) if name.endswith("_at") and isinstance(value, str) else value)
            for name, value in values.items()}


def effective_entries(review_pass: ReviewPass, run: Run | None = None) -> list[PassEntry]:
    """The pass's entries that still apply: rows created in the pass, and rows still at the version the
    pass decided on (a row a re-upload changed since is open again in the pass)."""
    run = run or review_pass.run
    entries = list(review_pass.entries.all())
    world = active_world(run)
    if world is not None and world.review_pass is not None and world.review_pass.pk == review_pass.pk:
        return [e for e in entries if (e.model, e.key) in world.applied]  # the rows carry the pass's versions now
    versions = {}
    for name, tracked in TRACKED.items():
        keys = [e.key for e in entries if e.model == name and not e.created]
        if keys and name != "counter":
            lookup = "pk__in" if tracked.key == "pk" else f"{tracked.key}__in"
            versions |= {(name, str(k)): v for k, v in tracked.model.objects.filter(run=run, **{lookup: keys})
                         .values_list(tracked.key, "version")}
    return [e for e in entries if e.created or e.model == "counter" or versions.get((e.model, e.key)) == e.base_version]


def apply_entries(run: Run, entries: list[PassEntry]) -> None:
    """Write the entries' values over the shared rows (the caller holds a savepoint it will roll back)."""
    for name in APPLY_ORDER:
        tracked = TRACKED[name]
        mine = [e for e in entries if e.model == name]
        if not mine:
            continue
        if name == "counter":
            for entry in mine:
                counter, _ = KindCounter.objects.get_or_create(run=run, kind=entry.key)
                if entry.values["last_number"] > counter.last_number:
                    KindCounter.objects.filter(pk=counter.pk).update(last_number=entry.values["last_number"])
            continue
        created = [e for e in mine if e.created]
        if created:
            tracked.model.objects.bulk_create(
                [tracked.model(run=run, **{tracked.key: e.key}, **_python(e.values)) for e in created],
                ignore_conflicts=True)
        changed = [e for e in mine if not e.created]
        if not changed:
            continue
        if tracked.key == "pk":
            pks = {e.key: int(e.key) for e in changed}
        else:
            pks = {str(k): pk for k, pk in tracked.model.objects.filter(
                run=run, **{f"{tracked.key}__in": [e.key for e in changed]}).values_list(tracked.key, "pk")}
        _update(tracked, [(pks[e.key], _python(e.values)) for e in changed if e.key in pks])


def _update(tracked: Tracked, rows: list[tuple[int, dict[str, Any]]]) -> None:
    """Give each row (pk, values) its values: on PostgreSQL one UPDATE … FROM (VALUES …) per batch
    (Django's bulk_update builds a CASE per field and row, about 50 ms for a few dozen rows), else row by row."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        for pk, values in rows:
            tracked.model.objects.filter(pk=pk).update(**values)
        return
    meta = tracked.model._meta
    fields = [meta.get_field(name) for name in tracked.fields]
    columns = [f.column for f in fields]
    casts = [f.db_type(connection) for f in fields]
    table = connection.ops.quote_name(meta.db_table)
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(c)} = v.{quote(c)}" for c in columns)
    row_sql = f"(%s::{meta.pk.db_type(connection)}, " + ", ".join(f"%s::{cast}" for cast in casts) + ")"
    names = ", ".join(["id", *(quote(c) for c in columns)])
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 500):
            batch = rows[start:start + 500]
            params = [value for pk, values in batch
                      for value in (pk, *(f.get_db_prep_save(values[f.name], connection) for f in fields))]
            cursor.execute(f"UPDATE {table} SET {assignments} FROM (VALUES {', '.join([row_sql] * len(batch))}) "
                           f"AS v({names}) WHERE {table}.id = v.id", params)


_active: contextvars.ContextVar["PassWorld | None"] = contextvars.ContextVar("reconcile_pass_world", default=None)
# Set while consensus or an adjudication writes the settled decisions: those go to the shared rows.
_settling: contextvars.ContextVar[bool] = contextvars.ContextVar("reconcile_settling", default=False)


@contextmanager
def settling():
    token = _settling.set(True)
    try:
        yield
    finally:
        _settling.reset(token)


def is_settling() -> bool:
    """Whether consensus or an adjudication is writing settled decisions now (inside `settling()`)."""
    return _settling.get()


def passes_complete(run: Run) -> bool:
    """Every required pass is submitted: no pass takes a decision any more (its consensus made or being made)."""
    return ReviewPass.objects.filter(run=run, state=ReviewPass.State.SUBMITTED).count() >= run.reviews_required


def consensus_made(run: Run) -> bool:
    """The submitted passes' agreements are the run's decisions and their disagreements conflicts."""
    return AuditEvent.objects.filter(run=run, action=Action.PASS_CONSENSUS).exists()


class _Overlay(Exception):
    """What leaving a pass world raises into its overlay block, so that block is rolled back."""


@dataclass
class Decided:
    """One decision taken in a pass world, waiting for the world to be left to be kept."""

    action: str
    actor: Actor
    summary: dict[str, Any]
    before: dict[tuple[str, str], dict[str, Any]]
    changes: dict[tuple[str, str], dict[str, Any]]


@dataclass
class PassWorld:
    run: Run
    reviewer: Any
    review_pass: ReviewPass | None = None
    applied: set[tuple[str, str]] = field(default_factory=set)
    pending: list[Decided] = field(default_factory=list)
    depth: int = 0

    def enter(self) -> None:
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        # The run first, as every writer does (reviews.audit.lock_run), also for a reading: laying a pass over
        # the rows locks them, and two reviewers' overlays locking rows in different orders could deadlock.
        lock_run(self.run)
        self.review_pass = ReviewPass.objects.filter(run=self.run, reviewer=self.reviewer).first()
        # A nested atomic block, not a bare savepoint: rolling it back also drops the on-commit callbacks
        # (task sends, event wake-ups) the services registered inside it.
        self._overlay = transaction.atomic()
        self._overlay.__enter__()
        if self.review_pass is not None:
            entries = effective_entries(self.review_pass, self.run)
            apply_entries(self.run, entries)
            self.applied = {(e.model, e.key) for e in entries}
        self._token = _active.set(self)

    def leave(self, *, keep: bool = True, error: BaseException | None = None) -> None:
        """Roll the overlay back, keep what was decided in it (unless `keep` is off), and commit."""
        _active.reset(self._token)
        try:
            self._overlay.__exit__(_Overlay, _Overlay(), None)
            if keep and error is None and self.pending:
                self._keep()
        except BaseException as failure:
            self._atomic.__exit__(type(failure), failure, failure.__traceback__)
            raise
        if error is not None:
            self._atomic.__exit__(type(error), error, error.__traceback__)
        else:
            self._atomic.__exit__(None, None, None)

    def decide(self, service: Callable, kwargs: dict[str, Any]):
        """Run one decision service in the world and note what it changed."""
        if self.depth:
            return service(**kwargs)  # a service another service calls: the outer call notes the change
        self._refuse_unless_open()
        before = snapshot(self.run)
        self.depth += 1
        try:
            result = service(**kwargs)
        finally:
            self.depth -= 1
        after = snapshot(self.run)
        changes = {key: values for key, values in after.items() if before.get(key) != values}
        if changes:
            self.pending.append(Decided(action=service.__name__, actor=kwargs["actor"],
                                        summary=_summary(kwargs), before=before, changes=changes))
        return result

    def _refuse_unless_open(self) -> None:
        if self.review_pass is not None and self.review_pass.state == ReviewPass.State.SUBMITTED:
            raise PassRefused(f"Your review of run {self.run.run_id} (pass {self.review_pass.number}) is submitted; "
                              "it takes no more decisions")
        if self.review_pass is None:
            taken = list(ReviewPass.objects.filter(run=self.run).select_related("reviewer"))
            if len(taken) >= self.run.reviews_required:
                names = " and ".join(p.reviewer.get_username() for p in taken)
                raise PassRefused(f"Run {self.run.run_id} takes {self.run.reviews_required} independent reviews, "
                                  f"and {names} are writing them; another reviewer cannot start one")

    def _keep(self) -> None:
        review_pass = self.review_pass or _start_pass(self.run, self.reviewer)
        self.review_pass = review_pass
        existing = {(e.model, e.key): e for e in review_pass.entries.all()}
        for decided in self.pending:
            for (model, key), values in decided.changes.items():
                entry = existing.get((model, key))
                was = decided.before.get((model, key))
                live = entry is not None and ((model, key) in self.applied or entry.created)
                if entry is None:
                    entry = PassEntry(review_pass=review_pass, model=model, key=key)
                    existing[(model, key)] = entry
                if not live:  # a new entry, or one a changed row had made inert: based on the row as it is
                    entry.base_version = was.get("version") if was else None
                    entry.created = was is None
                    self.applied.add((model, key))
                entry.values = values
                entry.save()
            record_event(run=self.run, actor=decided.actor, action=Action.PASS_DECIDED, object_type="review_pass",
                         object_id=review_pass.number,
                         after={"pass": review_pass.number, "reviewer": self.reviewer.get_username(),
                                "decision": decided.action, **decided.summary,
                                "changes": [_change(model, key, values)
                                            for (model, key), values in sorted(decided.changes.items())
                                            if model != "counter"]})


def _change(model: str, key: str, values: dict[str, Any]) -> dict[str, Any]:
    return {"item": f"{model}:{key}", "state": values.get("state"), "rationale": values.get("rationale", ""),
            **({"target": values["target"]} if "target" in values else {})}


def _summary(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {name: kwargs[name] for name in ("decision", "rationale", "min_score", "target") if name in kwargs}


def _start_pass(run: Run, reviewer) -> ReviewPass:
    number = (ReviewPass.objects.filter(run=run).aggregate(top=Max("number"))["top"] or 0) + 1
    review_pass = ReviewPass.objects.create(run=run, number=number, reviewer=reviewer)
    record_event(run=run, actor=Actor.for_user(reviewer), action=Action.PASS_STARTED, object_type="review_pass",
                 object_id=number, after={"pass": number, "reviewer": reviewer.get_username(),
                                          "reviews_required": run.reviews_required})
    return review_pass


@contextmanager
def pass_world(run: Run, reviewer):
    """The reviewer's pass laid over the run for the block; what it decides is kept on leaving."""
    active = _active.get()
    if active is not None and active.run.pk == run.pk:
        yield active
        return
    world = PassWorld(run=run, reviewer=reviewer)
    world.enter()
    try:
        yield world
    except BaseException as error:
        world.leave(error=error)
        raise
    world.leave()


def active_world(run: Run) -> PassWorld | None:
    world = _active.get()
    return world if world is not None and world.run.pk == run.pk else None


def _reviewer_of(actor: Actor):
    return get_user_model().objects.filter(pk=actor.user_id).first() if actor.user_id else None


def in_review_pass(run_of: Callable[[dict[str, Any]], Run]):
    """Route a decision service through the deciding reviewer's pass while `run_of(kwargs)` is in
    independent review; once the passes are complete only an adjudicator decides, on no item of an
    open conflict. A run needing one review never notices."""
    def wrap(service: Callable):
        @wraps(service)
        def decide(**kwargs):
            run = run_of(kwargs)
            if run.reviews_required < 2 or _settling.get():
                return service(**kwargs)
            world = active_world(run)
            if world is not None:
                return world.decide(service, kwargs)
            reviewer = _reviewer_of(kwargs["actor"])
            if passes_complete(run):
                _refuse_after_passes(run, reviewer, kwargs)
                return service(**kwargs)
            if reviewer is None:
                raise PassRefused(f"Run {run.run_id} is in independent review: only a reviewer decides, in their pass")
            with pass_world(run, reviewer) as world:
                return world.decide(service, kwargs)
        return decide
    return wrap


def _refuse_after_passes(run: Run, reviewer, kwargs: dict[str, Any]) -> None:
    if not consensus_made(run):
        raise PassRefused(f"The independent reviews of run {run.run_id} are all submitted: a worker is turning them "
                          "into the run's decisions and its conflicts; this takes a moment")
    if not may_adjudicate(reviewer):
        raise PassRefused(f"The independent reviews of run {run.run_id} are complete: their agreements are its "
                          "decisions, and only an adjudicator changes them, settling the conflicts")
    item = item_of(kwargs)
    if item and Conflict.objects.filter(run=run, model=item[0], key=item[1], state=Conflict.State.OPEN).exists():
        raise PassRefused("The reviews disagree on this item: settle it as a conflict, on the adjudication page")


def item_of(kwargs: dict[str, Any]) -> tuple[str, str] | None:
    """The (model, key) a decision service's arguments name, if it names one item."""
    for argument, model in (("mapping", "mapping"), ("issue_decision", "issue"), ("amendment", "amendment")):
        if argument in kwargs:
            return model, str(kwargs[argument].pk)
    if "record" in kwargs:
        return "canonical", kwargs["record"].canonical_id
    return None


def enter_for_request(request, run: Run) -> None:
    """`reviews.access.run_for`'s hook: a reviewer reading or deciding on a run in independent review
    sees it through their own pass (left by PassWorldMiddleware)."""
    if run.reviews_required < 2:
        return
    http = getattr(request, "_request", request)
    if getattr(http, "_pass_world", None) is not None:
        return
    safe = request.method in ("GET", "HEAD", "OPTIONS")
    # A write other than a decision (a correction request, a proposal, a submission) is not the pass's:
    # it must reach the shared rows, so only the views that post decisions enter the world to write.
    if not safe and not getattr(_view_of(http), "in_pass_world", False):
        return
    user = request.user
    if not roles_of(user) & {REVIEWER, ADMIN} or passes_complete(run):
        return
    if safe and not ReviewPass.objects.filter(run=run, reviewer=user).exists():
        return  # nothing of theirs to lay over the shared rows
    world = PassWorld(run=run, reviewer=user)
    world.enter()
    http._pass_world = world


def _view_of(request):
    match = getattr(request, "resolver_match", None)
    func = getattr(match, "func", None)
    return getattr(func, "view_class", None) or getattr(func, "cls", None) or func


class PassWorldMiddleware:
    """Leave the request's pass world once its response is rendered (see `enter_for_request`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            response = self.get_response(request)
        except BaseException as error:
            world = getattr(request, "_pass_world", None)
            if world is not None:
                request._pass_world = None
                world.leave(error=error)
            raise
        world = getattr(request, "_pass_world", None)
        if world is not None:
            request._pass_world = None
            world.leave(keep=response.status_code < 500)
        return response

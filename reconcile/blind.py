"""Decisions on a run in independent review are taken blind (DESIGN §5 "Independent reviews").

The seam between the decision services and the review passes; neither imports the other. A decision
service is marked `@blind_decision(run_of)`; on a run that takes more than one review it runs

- inside the deciding reviewer's own pass world, which notes what the service changed for the pass
  (`reconcile.passes.world` sets the world a block decides in with `entered`/`left`; a view enters
  its caller's world with `reconcile.passes.entering.decides_in_review_pass`);
- while consensus or an adjudication writes the settled decisions to the shared rows (`settling`);
- once every pass is submitted and their consensus made, for an adjudicator, on no item of an open
  conflict;

and refuses otherwise: called outside the caller's pass world while the passes are being written,
with `ReviewsBlind` (HTTP 409 `reviews_blind`). So a view or a script that forgets to enter the world
cannot write a reviewer's decision to the shared rows for everyone to see. A run needing one review
never notices.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from functools import wraps
from typing import Any, Callable, Protocol

from django.contrib.auth import get_user_model

from reviews.actions import Action
from reviews.access import may_adjudicate
from reviews.audit import Actor
from reviews.models import AuditEvent, Run

from .errors import StateConflict
from .models import Conflict, ReviewPass


class PassRefused(StateConflict):
    """A decision the reviewer's pass cannot take (submitted, or the passes are all taken)."""

    code = "review_pass"


class ReviewsBlind(StateConflict):
    """A decision on a run in independent review taken outside the deciding reviewer's own pass."""

    code = "reviews_blind"


class World(Protocol):
    """What a decision service needs of a pass world (`reconcile.passes.world.PassWorld`)."""

    run: Run
    reviewer: Any

    def decide(self, service: Callable, kwargs: dict[str, Any]) -> Any: ...


_current: contextvars.ContextVar[World | None] = contextvars.ContextVar("reconcile_pass_world", default=None)
# Set while consensus or an adjudication writes the settled decisions: those go to the shared rows.
_settling: contextvars.ContextVar[bool] = contextvars.ContextVar("reconcile_settling", default=False)


def entered(world: World) -> contextvars.Token:
    """`world` is where this context's decisions on its run are taken, until `left(token)`."""
    return _current.set(world)


def left(token: contextvars.Token) -> None:
    _current.reset(token)


def active_world(run: Run) -> World | None:
    """The pass world this context is in on `run`, if any."""
    world = _current.get()
    return world if world is not None and world.run.pk == run.pk else None


@contextmanager
def settling():
    """Consensus or an adjudication writing the settled decisions to the shared rows."""
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


def _reviewer_of(actor: Actor):
    return get_user_model().objects.filter(pk=actor.user_id).first() if actor.user_id else None


def blind_decision(run_of: Callable[[dict[str, Any]], Run]):
    """Take the decision service's call in the caller's pass world while `run_of(kwargs)` is in
    independent review, and refuse it (`ReviewsBlind`) outside one; once the passes are complete only
    an adjudicator decides, on no item of an open conflict. A run needing one review never notices."""
    def wrap(service: Callable):
        @wraps(service)
        def decide(**kwargs):
            run = run_of(kwargs)
            if run.reviews_required < 2 or _settling.get():
                return service(**kwargs)
            world = active_world(run)
            actor = kwargs["actor"]
            if world is not None and actor.user_id is not None and actor.user_id == world.reviewer.pk:
                return world.decide(service, kwargs)
            if passes_complete(run):
                _refuse_after_passes(run, _reviewer_of(actor), kwargs)
                return service(**kwargs)
            raise ReviewsBlind(f"Run {run.run_id} is in independent review: each reviewer decides in their own "
                               "review, blind to the others, and this decision was not taken in the deciding "
                               "reviewer's review")
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

"""Views that read or decide inside the caller's own review pass say so where they are defined.

On a run in independent review (more than one review required, not every pass submitted yet):

- `@in_review_pass`: a safe request (GET, HEAD, OPTIONS) of a reviewer or admin who has a pass on the
  run is answered through that pass (`reconcile.passes.world`): the pages, htmx regions and API
  replies read the rows as their pass left them. Its other requests (a proposal, a correction
  request) write to the shared rows, outside any pass.
- `@decides_in_review_pass`: as `in_review_pass`, and every request of the view decides in the
  caller's pass, started by their first decision.

The world is entered before the view runs, for its whole duration, and left once its response is
rendered (a template or an API reply read inside it), kept unless the response is a server error;
a view that raises leaves it without keeping anything. A view with neither decorator reads the
shared rows only, and a decision service it calls on a run in independent review refuses
(`reconcile.blind.ReviewsBlind`, 409 `reviews_blind`).

The world is entered before the view's own access check (`reviews.access.route_policy` or `run_for`)
and only for a reviewer or an admin, whom every role set these views ask for admits: the check then passes, so no
audited denial is ever written inside a world (whose writes are rolled back). A function view takes
the decorator innermost (below `login_required` and the method checks); a DRF view, on its handler
method (`get`, `post`), where the caller is authenticated.
"""
from __future__ import annotations

from functools import wraps
from typing import Callable

from rest_framework.views import APIView

from reviews.access import ADMIN, REVIEWER, roles_of
from reviews.models import Run

from ..blind import active_world, passes_complete
from ..models import ReviewPass
from .world import PassWorld

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
IN_PASS = {REVIEWER, ADMIN}


def in_review_pass(view: Callable) -> Callable:
    """The view's safe requests read through the caller's own review pass (see the module)."""
    return _through_pass(view, deciding=False)


def decides_in_review_pass(view: Callable) -> Callable:
    """The view's requests read and decide in the caller's own review pass (see the module)."""
    return _through_pass(view, deciding=True)


def enter_pass_world(request, run_id: str | None, *, deciding: bool) -> PassWorld | None:
    """The caller's pass world on the run named `run_id`, entered, if the request is to be answered
    in it; the caller leaves it (`PassWorld.leave`)."""
    safe = request.method in SAFE_METHODS
    if run_id is None or not (safe or deciding) or not roles_of(request.user) & IN_PASS:
        return None
    run = Run.objects.filter(run_id=run_id, reviews_required__gt=1).first()
    if run is None or active_world(run) is not None or passes_complete(run):
        return None
    if safe and not ReviewPass.objects.filter(run=run, reviewer=request.user).exists():
        return None  # nothing of theirs to lay over the shared rows
    world = PassWorld(run=run, reviewer=request.user)
    world.enter()
    return world


def _through_pass(view: Callable, *, deciding: bool) -> Callable:
    @wraps(view)
    def answered(*args, **kwargs):
        handler = args[0] if args and isinstance(args[0], APIView) else None
        request = args[1] if handler is not None else args[0]
        world = enter_pass_world(request, kwargs.get("run_id"), deciding=deciding)
        if world is None:
            return view(*args, **kwargs)
        try:
            response = _rendered(view(*args, **kwargs), handler, request, args[2:], kwargs)
        except BaseException as error:
            world.leave(error=error)
            raise
        world.leave(keep=response.status_code < 500)
        return response

    answered.review_pass = "decides" if deciding else "reads"
    return answered


def _rendered(response, handler: APIView | None, request, args, kwargs):
    """The response rendered now, inside the world: a DRF reply is finalized first as its dispatch would
    (doing it again after is harmless), a template response rendered (Django then leaves it be)."""
    if handler is not None:
        response = handler.finalize_response(request, response, *args, **kwargs)
    if callable(getattr(response, "render", None)) and not response.is_rendered:
        response.render()
    return response

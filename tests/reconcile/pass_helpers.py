"""Deciding on a run in independent review from a test as a reviewer's request does: each decision in
the deciding reviewer's own pass world, entered explicitly (`reconcile.passes.world.pass_world`), one
world per decision as one request is. Outside it the decision services refuse (`reviews_blind`)."""
from __future__ import annotations

from contextlib import contextmanager
from functools import wraps

from django.contrib.auth import get_user_model

from reconcile import services
from reconcile.passes.world import pass_world

# Each decision service, and how its arguments name the run.
DECISIONS = {
    "decide_mapping": lambda kwargs: kwargs["mapping"].run,
    "decide_issue": lambda kwargs: kwargs["issue_decision"].run,
    "decide_amendment": lambda kwargs: kwargs["amendment"].run,
    "bulk_accept": lambda kwargs: kwargs["run"],
    "undo_bulk_accept": lambda kwargs: kwargs["run"],
    "reject_canonical_record": lambda kwargs: kwargs["record"].run,
}


def own_pass(service):
    """`service` (one of DECISIONS), each call taken in its actor's own pass world; on a run needing one
    review, called as it is."""
    run_of = DECISIONS[service.__name__]

    @wraps(service)
    def decide(**kwargs):
        run = run_of(kwargs)
        if run.reviews_required < 2:
            return service(**kwargs)
        with pass_world(run, get_user_model().objects.get(pk=kwargs["actor"].user_id)):
            return service(**kwargs)

    return decide


class _ServicesInOwnPass:
    """`reconcile.services`, its decisions taken in their actor's own pass world."""

    def __getattr__(self, name):
        found = getattr(services, name)
        return own_pass(found) if name in DECISIONS else found


@contextmanager
def decisions_in_own_pass(module):
    """Within the block, `module.services` (a test module's `reconcile.services`) takes every decision
    in its actor's own pass world."""
    saved = module.services
    module.services = _ServicesInOwnPass()
    try:
        yield
    finally:
        module.services = saved

"""What of a run's trail a reader may not see yet (DESIGN §2 "Review pass": blind until submitted).

An independent review pass's decisions are audited as they are taken (`pass.decided`), but another
reviewer reading the trail must not learn them before submitting their own pass. The rule reads only
the trail itself: a `pass.decided` event is shown to the pass's own reviewer, to a reader whose own
pass is submitted (`pass.submitted`), and to everyone once every required pass is submitted (as
`reconcile.passes.listing` shows the passes' decisions); until then its content is withheld, its
chain hashes still listed.
"""
from __future__ import annotations

from .actions import Action
from .models import AuditEvent, Run

PASS_DECIDED = Action.PASS_DECIDED
WITHHELD = {"withheld": "a decision of another reviewer's independent review, shown once your own review "
                        "is submitted or every review is"}


def withheld_events(run: Run, user, events) -> set[int]:
    """The pks among `events` whose content `user` may not read yet."""
    blind = [e for e in events if e.action == PASS_DECIDED]
    if not blind:
        return set()
    submitted = set(AuditEvent.objects.filter(run=run, action=Action.PASS_SUBMITTED)
                    .values_list("after__reviewer", flat=True))
    if len(submitted) >= run.reviews_required:
        return set()  # every pass is in
    name = user.get_username() if user is not None and user.is_authenticated else None
    if name in submitted:
        return set()
    return {e.pk for e in blind if not name or (e.after or {}).get("reviewer") != name}


def shown(event: AuditEvent, withheld: set[int]) -> tuple:
    """(before, after) as the reader may see them."""
    return (None, WITHHELD) if event.pk in withheld else (event.before, event.after)

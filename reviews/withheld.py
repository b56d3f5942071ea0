"""What of a run's trail a reader may not see yet (DESIGN §2 "Review pass": blind until submitted).

An independent review pass's decisions are audited as they are taken (`pass.decided`), but another
reviewer reading the trail must not learn them before submitting their own pass. The rule reads only
the trail itself: a `pass.decided` event is shown to the pass's own reviewer, to a reader whose own
pass is submitted (`pass.submitted`), and to everyone once every required pass is submitted (as
`reconcile.passes.listing` shows the passes' decisions); until then its content is withheld, and its
salt with it (DESIGN §8 "Blind by construction"): the hash of a salted event confirms no guess.

An event written before salts has none, so its hash would confirm a guess of its content: while such
a `pass.decided` event is withheld, its hash, prev_hash and signature are withheld too, and so is every
hash after it (the next event's prev_hash is its hash, and every later hash follows from it and
contents that are shown) up to the next withheld salted event, whose own hash depends on a withheld salt.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable

from .actions import Action
from .models import AuditEvent, Run

PASS_DECIDED = Action.PASS_DECIDED
WITHHELD = {"withheld": "a decision of another reviewer's independent review, shown once your own review "
                        "is submitted or every review is"}
# What goes with a withheld content: the salt always; for an unsalted event, what would confirm a guess.
CHAIN_FIELDS = ("prev_hash", "hash", "signature")


def _hides(run: Run, user) -> Callable[[dict | None], bool] | None:
    """Whether `user` may not yet read a pass.decided event with this `after` (None: every one is shown)."""
    submitted = set(AuditEvent.objects.filter(run=run, action=Action.PASS_SUBMITTED)
                    .values_list("after__reviewer", flat=True))
    if len(submitted) >= run.reviews_required:
        return None  # every pass is in
    name = user.get_username() if user is not None and user.is_authenticated else None
    if name in submitted:
        return None
    return lambda after: not name or (after or {}).get("reviewer") != name


def withheld_events(run: Run, user, events) -> set[int]:
    """The pks among `events` whose content (and salt) `user` may not read yet."""
    blind = [e for e in events if e.action == PASS_DECIDED]
    if not blind:
        return set()
    hides = _hides(run, user)
    return set() if hides is None else {e.pk for e in blind if hides(e.after)}


def withheld_chain(run: Run, user, events, withheld: set[int]) -> dict[int, tuple[str, ...]]:
    """For the pks among `events` (whose withheld contents are `withheld`), the chain fields `user` may not
    read: what would let a guess of an unsalted withheld event be checked. Empty for a run whose
    pass.decided events are all salted."""
    if not AuditEvent.objects.filter(run=run, action=PASS_DECIDED, salt="").exists():
        return {}
    hides = _hides(run, user)
    if hides is None:
        return {}
    blind = [(seq, salt) for seq, salt, reviewer in AuditEvent.objects.filter(run=run, action=PASS_DECIDED)
             .order_by("seq").values_list("seq", "salt", "after__reviewer") if hides({"reviewer": reviewer})]
    seqs = [seq for seq, _salt in blind]
    hidden = {}
    for event in events:
        before = bisect_left(seqs, event.seq)  # the withheld events before this one
        tainted = before > 0 and not blind[before - 1][1]
        if event.pk in withheld and not event.salt:
            hidden[event.pk] = CHAIN_FIELDS
        elif tainted:
            hidden[event.pk] = ("prev_hash",) if event.pk in withheld else CHAIN_FIELDS
    return hidden


def shown(event: AuditEvent, withheld: set[int]) -> tuple:
    """(before, after) as the reader may see them."""
    return (None, WITHHELD) if event.pk in withheld else (event.before, event.after)

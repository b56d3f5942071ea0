"""Refusing an acceptance that would make the run's decisions contradict each other (DESIGN §5).

The same rules that list incoherent decisions as approval blockers (`reconcile.dispositions`)
decide here, inside the decision's transaction, whether the acceptance just written created one
about the accepted item: then the transaction is rolled back and the reviewer told why (409).
Rejections and reopenings are never refused: a decision they make incoherent shows as a blocker.
"""
from __future__ import annotations

from reviews.models import Run

from .. import dispositions
from ..blockers import run_standing
from ..errors import InvalidDecision


class IncoherentDecision(InvalidDecision):
    """Accepting the item would contradict another decision (`blockers` names how)."""

    code = "incoherent_decision"

    def __init__(self, message: str, blockers: list):
        super().__init__(message)
        self.blockers = blockers


def refuse_incoherent(run: Run, item: str) -> None:
    """Raise IncoherentDecision when an incoherent-decision blocker of `run` is about `item`."""
    # The records' facts as last read for these same current versions (`blockers._record_facts`): an
    # acceptance changes mappings, never records, and at 50,000 records reading them was a third of this.
    found = [b for b in run_standing(run, kept=True).blockers if b.item == item and b.code in dispositions.CONFLICT_CODES]
    if found:
        # The blockers' messages describe the state the acceptance would have made: say it was not made.
        raise IncoherentDecision("Not accepted: it would contradict another decision. "
                                 + "; ".join(dict.fromkeys(b.refusal or b.message for b in found)) + ".", found)

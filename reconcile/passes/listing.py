"""What a caller may read of a run's review passes (DESIGN §4 `GET …/passes/`): every pass's reviewer,
state and count; the decisions of their own pass; those of the others only once their own pass is
submitted or every pass is (blind until submitted, §2)."""
from __future__ import annotations

from typing import Any

from reviews.models import Run

from ..models import Conflict, ReviewPass
from .consensus import frozen_decisions
from ..blind import passes_complete


def pass_decisions(run: Run, review_pass: ReviewPass) -> dict[str, dict[str, Any]]:
    """An open pass's decisions as they stand, a submitted one's as frozen."""
    if review_pass.state == ReviewPass.State.SUBMITTED:
        return {key: value for key, value in review_pass.decisions.items() if value.get("decided", True)}
    return frozen_decisions(run, review_pass)


def may_see_others(run: Run, viewer) -> bool:
    if passes_complete(run):
        return True
    return ReviewPass.objects.filter(run=run, reviewer=viewer, state=ReviewPass.State.SUBMITTED).exists()


def passes_for(run: Run, viewer) -> dict[str, Any]:
    passes = list(ReviewPass.objects.filter(run=run).select_related("reviewer").order_by("number"))
    others_visible = may_see_others(run, viewer)
    shown = []
    for p in passes:
        own = p.reviewer_id == getattr(viewer, "pk", None)
        visible = own or (others_visible and p.state == ReviewPass.State.SUBMITTED)
        decisions = pass_decisions(run, p) if visible else None
        shown.append({"pass": p.number, "reviewer": p.reviewer.get_username(), "state": p.state,
                      "started_at": p.started_at, "submitted_at": p.submitted_at, "mine": own,
                      "decided": len(decisions) if decisions is not None else None,
                      "decisions": [{"item": key, **value} for key, value in sorted(decisions.items())]
                      if decisions is not None else None})
    return {"reviews_required": run.reviews_required, "complete": passes_complete(run) if run.reviews_required > 1
            else None, "passes": shown}


def conflict_data(conflict: Conflict) -> dict[str, Any]:
    return {"id": conflict.pk, "item": f"{conflict.model}:{conflict.key}", "kind": conflict.model,
            "name": conflict.name, "state": conflict.state, "version": conflict.version, "note": conflict.note,
            "decisions": conflict.decisions, "decision": conflict.decision or None, "rationale": conflict.rationale,
            "settled_by": conflict.settled_by or None, "settled_at": conflict.settled_at}

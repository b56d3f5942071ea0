"""The review passes, adjudications and agreement a signed statement records (DESIGN §7 "Signed").

One function, so the statement reads them from one place: `reconcile.passes.record`, which the
result's Semantic verification reads too. A run that took one review has no pass and no adjudication
(both lists empty) and no agreement (None, and the predicate leaves the key out)."""
from __future__ import annotations

from reconcile.passes.record import independent_reviews
from reviews.models import Run


def review_record(run: Run) -> tuple[list[dict], list[dict], dict | None]:
    """(review passes, adjudications, agreement) of `run`, passes and adjudications oldest first."""
    reviews = independent_reviews(run)
    if reviews is None:
        return [], [], None
    # An adjudication as signed: without each pass's side of it, which the trail's events carry.
    adjudications = [{"item": a["item"], "decision": a["decision"], "rationale": a["rationale"],
                      "adjudicator": a["adjudicator"], "settled_at": a["settled_at"]} for a in reviews["adjudications"]]
    return reviews["passes"], adjudications, reviews["agreement"]

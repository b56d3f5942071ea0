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
    passes = [{"pass": p["pass"], "reviewer": p["reviewer"], "submitted_at": p["submitted_at"],
               "decisions": p["decisions"]} for p in reviews["passes"]]
    adjudications = [{"item": a["item"], "decision": a["decision"], "rationale": a["rationale"],
                      "adjudicator": a["adjudicator"], "settled_at": a["settled_at"]} for a in reviews["adjudications"]]
    return passes, adjudications, reviews["agreement"]

"""What a result and its signed statement say of a run's independent reviews (DESIGN §7): every
pass with its reviewer, every adjudication with its adjudicator, and the agreement figures."""
from __future__ import annotations

from typing import Any

from reviews.models import Run

from ..models import Conflict, ReviewPass
from .agreement import agreement


def independent_reviews(run: Run) -> dict[str, Any] | None:
    """Plain JSON, or None for a run that needed one review."""
    if run.reviews_required < 2:
        return None
    passes = [{"pass": p.number, "reviewer": p.reviewer.get_username(),
               "submitted_at": p.submitted_at.isoformat(timespec="seconds") if p.submitted_at else None,
               "decisions": sum(1 for v in p.decisions.values() if v.get("decided", True))}
              for p in ReviewPass.objects.filter(run=run, state=ReviewPass.State.SUBMITTED)
              .select_related("reviewer").order_by("number")]
    adjudications = [{"item": c.name, "decision": c.decision, "rationale": c.rationale, "adjudicator": c.settled_by,
                      "settled_at": c.settled_at.isoformat(timespec="seconds") if c.settled_at else None,
                      "passes": [{"pass": d["pass"], "reviewer": d["reviewer"], "state": d["state"],
                                  "target": d.get("target") or None, "rationale": d.get("rationale", "")}
                                 for d in c.decisions]}
                     for c in Conflict.objects.filter(run=run, state=Conflict.State.SETTLED).order_by("pk")]
    figures = agreement(run)
    return {"reviews_required": run.reviews_required, "passes": passes, "adjudications": adjudications,
            "agreement": {"kinds": figures["kinds"], "overall": figures["overall"]}}

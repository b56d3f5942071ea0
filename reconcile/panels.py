"""What the pages' approval and final-run panels show, from the one source of blockers (DESIGN §3, §5).

Small functions that views of any app can merge into their context: the run page's approval panel,
the result page, the reconciliation page beside its counters (and out of band after each decision).
"""
from __future__ import annotations

from reviews.actions import Action
from reviews.models import AuditEvent, Run

from . import dispositions
from .blockers import run_standing

# How many blockers a page lists before it links to the full list (`GET /api/runs/{run_id}/blockers/`).
SHOWN_BLOCKERS = 12


def final_notice(run: Run) -> dict | None:
    """{"sha256", "successor"} for a final run (its pages say "Final: result <sha256> — closed"), else None."""
    if run.status != Run.Status.FINAL:
        return None
    # The result's hash as the trail's `run.finalized` event recorded it, in the same transaction that
    # stored the result (results/, above this app, owns the Result row).
    finalized = (AuditEvent.objects.filter(run=run, action=Action.RUN_FINALIZED).order_by("-seq")
                 .values_list("after", flat=True).first())
    successor = Run.objects.filter(revises=run).only("run_id").first()
    return {"sha256": (finalized or {}).get("result_sha256", ""), "successor": successor.run_id if successor else ""}


def blockers_context(run: Run, standing: dispositions.Standing | None = None) -> dict:
    """The blockers of a run in review, as the pages list them (the first SHOWN_BLOCKERS, and how many more)."""
    if run.status != Run.Status.IN_REVIEW:
        return {"blockers": [], "blockers_more": 0, "in_review": False}
    blockers = list((standing or run_standing(run)).blockers)
    return {"blockers": blockers[:SHOWN_BLOCKERS], "blockers_more": max(0, len(blockers) - SHOWN_BLOCKERS),
            "blockers_total": len(blockers), "in_review": True}

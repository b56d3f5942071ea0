"""How far the submitted review passes agreed (DESIGN §4 `GET …/agreement/`, §5, §7).

The items are those some pass decided (consensus fills in, for each pass, the state it left the
others in); a pass's value on an item is its decision (a state, and the target of an accepted
mapping). Per item kind and overall: how many items, how many the passes decided alike, the
percent agreement, Cohen's kappa when there are two passes (`cohens_kappa`, below) and Krippendorff's
alpha, nominal, for any number (`krippendorff`). Both are chance-corrected and undefined (None) when every
decision falls in one category.
"""
from __future__ import annotations

import math
from typing import Any

import krippendorff
import numpy as np

from reviews.models import Run

from ..models import ReviewPass

KINDS = ("mapping", "issue", "amendment", "canonical")
KIND_NAMES = {"mapping": "mappings", "issue": "integration issues", "amendment": "amendments and conflicts",
              "canonical": "canonical records"}


def _value(decision: dict[str, Any]) -> str:
    return decision["state"] + (f" {decision['target']}" if decision.get("target") else "")


def cohens_kappa(first: list[str], second: list[str]) -> float | None:
    """Cohen's kappa of two raters' values, 1 - observed / chance-expected disagreement; None when the
    chance-expected disagreement is 0 (both raters always chose the same one value).

    The arithmetic is scikit-learn's `cohen_kappa_score` (1.9), step for step and on the same float64
    arrays, so every figure, rounded, is the one it gave: a confusion matrix over the sorted values
    (rows the first rater), the expected counts from its margins, the off-diagonal sums.
    """
    index = {value: n for n, value in enumerate(sorted(set(first) | set(second)))}
    confusion = np.zeros((len(index), len(index)))
    for a, b in zip(first, second):
        confusion[index[a], index[b]] += 1
    expected = np.outer(confusion.sum(axis=0), confusion.sum(axis=1)) / confusion.sum()
    disagreeing = np.ones_like(confusion)
    np.fill_diagonal(disagreeing, 0)
    chance = np.sum(disagreeing * expected)
    return None if chance == 0 else float(1 - np.sum(disagreeing * confusion) / chance)


def figures_of(columns: list[list[str]]) -> dict[str, Any]:
    """columns: one list per item, a value per pass."""
    items = len(columns)
    agreements = sum(1 for values in columns if len(set(values)) == 1)
    figures = {"items": items, "agreements": agreements,
               "percent_agreement": round(100 * agreements / items, 1) if items else None,
               "cohens_kappa": None, "krippendorffs_alpha": None}
    if not items:
        return figures
    passes = len(columns[0])
    codes = {value: n for n, value in enumerate(sorted({v for values in columns for v in values}))}
    if len(codes) < 2:
        return figures  # one category only: chance-corrected agreement is undefined
    if passes == 2:
        kappa = cohens_kappa([values[0] for values in columns], [values[1] for values in columns])
        figures["cohens_kappa"] = None if kappa is None else round(kappa, 3)
    matrix = [[codes[values[p]] for values in columns] for p in range(passes)]
    alpha = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    figures["krippendorffs_alpha"] = None if math.isnan(alpha) else round(float(alpha), 3)
    return figures


def agreement(run: Run) -> dict[str, Any]:
    """{"passes": [...], "kinds": {kind: figures}, "overall": figures}; empty figures until two passes are in."""
    passes = list(ReviewPass.objects.filter(run=run, state=ReviewPass.State.SUBMITTED).select_related("reviewer")
                  .order_by("number"))
    shown = [{"pass": p.number, "reviewer": p.reviewer.get_username(), "submitted_at": p.submitted_at}
             for p in passes]
    complete = len(passes) >= max(run.reviews_required, 2)
    if not complete:
        return {"reviews_required": run.reviews_required, "passes": shown, "complete": False, "kinds": {},
                "overall": None}
    keys = sorted({key for p in passes for key in p.decisions})
    columns = {kind: [] for kind in KINDS}
    for key in keys:
        if all(key in p.decisions for p in passes):
            columns[key.split(":", 1)[0]].append([_value(p.decisions[key]) for p in passes])
    return {"reviews_required": run.reviews_required, "passes": shown, "complete": True,
            "kinds": {kind: {"name": KIND_NAMES[kind], **figures_of(values)} for kind, values in columns.items()
                      if values},
            "overall": figures_of([values for kind in KINDS for values in columns[kind]])}

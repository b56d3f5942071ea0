"""The review passes and adjudications a signed statement records (DESIGN §7 "Signed", §1 independent reviews).

One function, so the statement reads them from one place. Independent review passes are not built yet:
until they are, a run has none, and `review_record` returns `([], [])`; the predicate still carries both
keys as lists, so its shape does not change when they arrive.
"""
from __future__ import annotations

from reviews.models import Run


def review_record(run: Run) -> tuple[list[dict], list[dict]]:
    """(review passes, adjudications) of `run`, each a JSON object, oldest first; both empty for now."""
    return [], []

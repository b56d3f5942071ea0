"""Each run's latest validation counts, for lists of runs (issue 12 item 5)."""
from __future__ import annotations

from collections.abc import Iterable

from reviews.models import Run

from .models import ValidationReport


def validation_counts(runs: Iterable[Run]) -> dict[int, dict]:
    """`{run pk: {"validated", "errors", "warnings", "blocked"}}` from the report `services.latest_validation`
    would pick (the one on the run's current manifest, else the newest), in one query for any number of runs."""
    runs = list(runs)
    reports: dict[int, list[dict]] = {}
    for row in (ValidationReport.objects.filter(run__in=runs).order_by("-created_at", "-id")
                .values("run_id", "manifest_sha256", "errors", "warnings")):
        reports.setdefault(row["run_id"], []).append(row)
    counts = {}
    for run in runs:
        rows = reports.get(run.pk, [])
        chosen = next((r for r in rows if run.manifest_sha256 and r["manifest_sha256"] == run.manifest_sha256), None) \
            or (rows[0] if rows else None)
        if chosen is None:
            counts[run.pk] = {"validated": False, "errors": 0, "warnings": 0, "blocked": False}
        else:
            counts[run.pk] = {"validated": True, "errors": chosen["errors"], "warnings": chosen["warnings"],
                              "blocked": chosen["errors"] > 0}
    return counts

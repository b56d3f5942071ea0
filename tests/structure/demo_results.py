"""Print the SHA-256 of every demo run's final result, reconciled the same way each time.

    python tests/structure/demo_results.py [DB_PATH]

Loads the demo runs into a fresh SQLite database (tasks in process), under a
clock frozen at 2026-12-01T12:00Z so approval times do not vary, decides every
open item in the same order (suggestions accepted where coherent, else
rejected; issues and amendments accepted, else carried or rejected),
approves and finalizes, and prints one line per run: run ID, status, SHA-256
of result.md. Run it before and after a change that must not alter results
(a move of code, say) and compare the two outputs: they must be identical.
"""
from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DB = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "demo.sqlite3"
# Finalization signs: a key of this run's own (the signature is not part of result.md, whose hash is printed).
KEYS = Path(tempfile.mkdtemp())
os.environ.update(DEBUG="1", DATABASE_URL=f"sqlite:///{DB}", REDIS_URL="",
                  SIGNING_KEY_PATH=str(KEYS / "ed25519.pem"), SIGNING_PUBLIC_KEYS_DIR=str(KEYS / "public"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from results.signing import create_key  # noqa: E402

create_key()

from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402

FROZEN = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)


def services():
    """The decision and approval services, wherever the code keeps them."""
    from reconcile import services as reconcile_services
    try:
        from results import services as result_services
    except ImportError:
        from reconcile import approval as result_services
    return reconcile_services, result_services


def decide_everything(run, actor) -> None:
    from reconcile.models import AmendmentDecision, IssueDecision, Mapping

    rs, _ = services()
    rs.bulk_accept_suggestions(run=run, min_score=0.0, actor=actor, rationale="demo: confident suggestion")
    for mapping in Mapping.objects.filter(run=run, state=Mapping.State.PROPOSED).order_by("source", "id"):
        for decision in ("accept", "reject"):
            mapping.refresh_from_db()
            if mapping.state != Mapping.State.PROPOSED:
                break
            try:
                rs.decide_mapping(mapping=mapping, decision=decision, rationale=f"demo: {decision}", actor=actor,
                                  expected_version=mapping.version)
                break
            except Exception:  # noqa: BLE001 — an incoherent accept falls back to reject
                continue
    for issue in IssueDecision.objects.filter(issue__member_version__member__run=run).order_by("pk"):
        if issue.is_open:
            rs.decide_issue(issue_decision=issue, decision="accept", rationale="demo: accepted", actor=actor,
                            expected_version=issue.version)
    for amendment in AmendmentDecision.objects.filter(member_version__member__run=run).order_by("pk"):
        for decision in ("accept", "carry", "reject"):
            amendment.refresh_from_db()
            if not amendment.is_open:
                break
            try:
                rs.decide_amendment(amendment=amendment, decision=decision, rationale=f"demo: {decision}",
                                    actor=actor, expected_version=amendment.version)
            except Exception:  # noqa: BLE001
                continue


def main() -> None:
    from reviews.audit import Actor
    from reviews.models import Run

    from django.apps import apps

    # Fields whose default is the function `timezone.now` itself, which the patch below does not reach.
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if field.default is timezone.now:
                field.default = lambda: FROZEN
    with mock.patch.object(timezone, "now", lambda: FROZEN):
        call_command("migrate", verbosity=0)
        call_command("load_demo", stdout=open(os.devnull, "w"))
        _, results = services()
        actor = Actor("demo-reviewer")
        for run in Run.objects.order_by("run_id"):
            if run.status == Run.Status.IN_REVIEW:
                decide_everything(run, actor)
                try:
                    results.approve_run(run=run, note="demo: every item decided by the script", actor=actor)
                except Exception as refused:  # noqa: BLE001
                    print(f"{run.run_id} not approved: {str(refused)[:120]}")
                    continue
            run.refresh_from_db()
            result = getattr(run, "result", None)
            print(run.run_id, run.status, result.sha256 if result is not None else "-")


if __name__ == "__main__":
    main()

"""The reconciliation page of a run in independent review (DESIGN §11 last bullet): at 2,000 records with
two submitted passes, against the same page at 20 records (two submitted passes too), measured in the
same run. Targets (the page targets of §11): server time within 1.5x of the page at 20, under 600 KB,
the same query count as at 20.

Each run is built by `tests.reconcile.page_factories.build_reconcile_run`, set to two reviews
(`set_reviews_required`); two reviewers decide it through the services as themselves
(`Actor.for_user`): each bulk-accepts every suggestion and accepts every integration issue but one,
which the second reviewer rejects (one conflict, as dual reviews have); then both passes are
submitted (`reconcile.passes.consensus.submit_pass`), the second bringing the consensus. The page is
read by the first reviewer. Also printed, not targeted: the same page read by the second reviewer
while their pass is open and the first is submitted (their pass laid over the rows on every request),
and how long building the passes took (at 2,000 records about 3 minutes for the two passes and 8 for
the last submission's consensus on a shared 2-core machine: this part is the bench's slowest).
"""
from __future__ import annotations

import time

from bench_common import report
from bench_pages import _analyze, measure_against, measure_page

SIZES = (20, 2000)


def _reviewer(name: str):
    from django.contrib.auth import get_user_model

    from reviews.audit import Actor
    from reviews.services import issue_token

    if not get_user_model().objects.filter(username=name).exists():
        issue_token(name=name, role="reviewer", password=f"{name}-pass-123", actor=Actor.command("bench"))
    return get_user_model().objects.get(username=name)


def _decide_pass(run, user, *, reject_first_issue: bool) -> None:
    """Everything of the run decided in the user's pass: one bulk accept, then each integration issue."""
    from reconcile import services
    from reconcile.passes.world import pass_world
    from reviews.audit import Actor

    actor = Actor.for_user(user)
    # Each decision in the user's pass, entered as a decision's view enters it (one world per request).
    with pass_world(run, user):
        services.bulk_accept(run=run, min_score=0.0, actor=actor, rationale="bench: every suggestion")
    for n, decision in enumerate(services.current_issue_decisions(run).order_by("pk")):
        with pass_world(run, user):
            services.decide_issue(issue_decision=decision,
                                  decision="reject" if reject_first_issue and n == 0 else "accept",
                                  rationale="bench", actor=actor, expected_version=decision.version)


def bench_passes_page():
    from django.test import Client

    from reconcile.models import Conflict
    from reconcile.passes.consensus import submit_pass
    from reviews.audit import Actor
    from reviews.services import set_reviews_required

    try:
        from tests.reconcile.page_factories import build_reconcile_run
    except ImportError as error:
        report("reconciliation page with two passes", "skipped", "", f"no page factory ({error})")
        return
    first, second = _reviewer("bench-pass-1"), _reviewer("bench-pass-2")
    as_first, as_second = Client(), Client()
    as_first.force_login(first)
    as_second.force_login(second)
    measured, urls = {}, {}
    for size in SIZES:
        run, member = build_reconcile_run(records=size, run_id=f"AAS-2026-01-04-passes{size}-01")
        url = urls[size] = f"/runs/{run.run_id}/reconcile/?member={member}"
        set_reviews_required(run=run, count=2, actor=Actor.command("bench"))
        start = time.perf_counter()
        _decide_pass(run, first, reject_first_issue=False)
        _decide_pass(run, second, reject_first_issue=True)
        decided = time.perf_counter() - start
        submit_pass(run=run, reviewer=first, actor=Actor.for_user(first))
        _analyze()  # the rows the passes wrote in bulk, as autovacuum would have them by the time a reviewer reads
        open_pass = measure_page(as_second, url)  # the second reviewer's open pass laid over the rows per request
        start = time.perf_counter()
        submit_pass(run=run, reviewer=second, actor=Actor.for_user(second))
        consensus = time.perf_counter() - start
        conflicts = Conflict.objects.filter(run=run).count()
        _analyze()
        measured[size] = measure_page(as_first, url)
        seconds, queries, size_bytes = measured[size]
        label = f"reconciliation page, 2 passes, {size} records"
        report(f"{label}: building (not a figure)", (decided + consensus) * 1000, "ms",
               f"two passes decided {decided:.1f} s, last submission + consensus {consensus:.1f} s, "
               f"{conflicts} conflict{'s' if conflicts != 1 else ''}")
        report(f"{label}: server time", seconds * 1000, "ms", "median of 5, read by the first reviewer")
        report(f"{label}: SQL queries", queries, "queries")
        report(f"{label}: first view", size_bytes / 1024, "KB", "target < 600 KB" if size == SIZES[-1] else "")
        report(f"{label}: second pass open, server time", open_pass[0] * 1000, "ms",
               f"{open_pass[1]} queries, {open_pass[2] / 1024:.0f} KB; the pass laid over the rows (not targeted)")
    (_, small_q, _), (_, large_q, large_b) = measured[SIZES[0]], measured[SIZES[-1]]
    small, large = measure_against(as_first, urls[SIZES[0]], urls[SIZES[-1]])
    report(f"reconciliation page, 2 passes: {SIZES[-1]} / {SIZES[0]} records", large / small, "x",
           f"target <= 1.5x; {large * 1000:.1f} against {small * 1000:.1f} ms, medians of 7 read alternately; "
           f"queries {large_q} vs {small_q} (target: the same); {large_b / 1024:.0f} KB (target < 600 KB)")

"""Bulk accept at scale (DESIGN §5 bulk accept; the reviewer's "Accept all suggestions ≥ score" button):
every suggestion of a run built by `tests.reconcile.page_factories.build_reconcile_run` accepted by one
`reconcile.services.bulk_accept`, at 20 and 2,000 records, in a single review and in a review pass.
Printed: the time, and the SQL statements per accepted mapping (not targeted in a ratio: the time must
stay well inside gunicorn's 60 s timeout, and the statements per mapping must not grow with the run).
Before the bounded target resolution, 2,000 records took about 64 s at 16.5 statements per mapping.
"""
from __future__ import annotations

import os
import time
from contextlib import nullcontext

from bench_common import report
from bench_passes import _reviewer

SIZES = (20, 2000)


def bench_bulk():
    from django.db import connection

    from reconcile import services
    from reconcile.passes.world import pass_world
    from reviews.audit import Actor
    from reviews.services import set_reviews_required

    try:
        from tests.reconcile.page_factories import build_reconcile_run
    except ImportError as error:
        report("bulk accept", "skipped", "", f"no page factory ({error})")
        return
    user = _reviewer("bench-bulk-1")
    actor = Actor.for_user(user)
    per_mapping = {}
    for mode in ("single review", "in a review pass"):
        for size in SIZES:
            run, _member = build_reconcile_run(records=size, run_id=f"AAS-2026-01-06-bulk{size}{mode[0]}{os.getpid()}-01")
            if mode != "single review":
                set_reviews_required(run=run, count=2, actor=Actor.command("bench"))
            statements = []  # counted by a wrapper: CaptureQueriesContext keeps only the last 9,000

            def count(execute, sql, params, many, context):
                statements.append(1)
                return execute(sql, params, many, context)

            # In a review pass the bulk accept is taken in the reviewer's pass, entered as its view enters it.
            in_pass = pass_world(run, user) if mode != "single review" else nullcontext()
            with connection.execute_wrapper(count):
                start = time.perf_counter()
                with in_pass:
                    accepted = services.bulk_accept(run=run, min_score=0.0, actor=actor, rationale="bench")
                seconds = time.perf_counter() - start
            per_mapping[(mode, size)] = len(statements) / max(1, len(accepted))
            report(f"bulk accept, {mode}, {size} records", seconds * 1000, "ms",
                   f"{len(accepted)} mappings, {per_mapping[(mode, size)]:.2f} statements per mapping"
                   + ("; target well under 15 s" if size == SIZES[-1] else ""))
        report(f"bulk accept, {mode}: statements per mapping, {SIZES[-1]} / {SIZES[0]} records",
               per_mapping[(mode, SIZES[-1])] / per_mapping[(mode, SIZES[0])], "x", "target: not above 1x")

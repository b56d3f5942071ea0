"""Pages at scale (DESIGN §11): the reconciliation page and the member page at 20 records and at
2,000, 20,000 and 50,000, in process through Django's test client with DEBUG off as in production.

Each size prints the first view's SQL queries, server time (median of 5 after a warm-up request)
and size (and, for the reconciliation page, a decision's answer and the view after it, whose standing is
then computed again), and its time as a ratio to the same page at 20 records measured in the same run (targets:
≤ 1.5x at 2,000, ≤ 2x at 20,000 and 50,000; < 600 KB; the same query count as at 20).
`--profile-pages` prints a cProfile of both pages at BENCH_PROFILE_RECORDS (2,000) records instead.
"""
from __future__ import annotations

import os
import statistics
import time

from bench_common import alternately, report

# BENCH_PAGE_SIZES=20,2000 measures fewer sizes (the first is the baseline); the largest take minutes to build
SIZES = tuple(int(size) for size in os.environ.get("BENCH_PAGE_SIZES", "20,2000,20000,50000").split(","))
RECONCILE_SIZES = MEMBER_SIZES = SIZES


def _client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    from reviews.audit import Actor
    from reviews.services import issue_token

    if not get_user_model().objects.filter(username="bench-reviewer").exists():
        issue_token(name="bench-reviewer", role="reviewer", password="bench-pass-123", actor=Actor.command("bench"))
    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-reviewer"))
    return client


def _build(size: int):
    """A run of `size` memory records (tests/reconcile/page_factories), its member holding real bytes."""
    from records.models import MemberVersion
    from tests.reconcile.page_factories import build_reconcile_run, write_member_text

    run, member = build_reconcile_run(records=size, run_id=f"AAS-2026-01-02-pages{size}-01")
    version = MemberVersion.objects.get(member__run=run, member__role=member, version=1)
    if version.size < 100:
        write_member_text(version)
    return run, member


def _analyze() -> None:
    """Planner statistics for the tables just filled in bulk, as autovacuum keeps them in production: without
    them PostgreSQL guesses a handful of rows and sorts a 20,000-record version to read one page of it."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def _first_view(client, url: str, *, kept: bool = False, **headers):
    """One read of the page at `url` (asserted 200): a first view (the view kept for the run's chain head
    dropped before it: `reconcile.blockers.kept_page`) unless `kept`."""
    from reconcile.blockers import forget_kept

    if not kept:
        forget_kept(views_only=True)
    response = client.get(url, **headers)
    assert response.status_code == 200, (url, response.status_code)
    return response


def measure_page(client, url: str, *, kept: bool = False, **headers) -> tuple[float, int, int]:
    """Median server time (s) of 5 reads after a warm one, DEBUG off; the query count; the reply's size."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext, override_settings

    def read():
        return _first_view(client, url, kept=kept, **headers)

    read()  # warm: compiled templates, the per-process word-diff cache, the run's standing
    times = []
    with override_settings(DEBUG=False):
        for _ in range(5):
            start = time.perf_counter()
            read()
            times.append(time.perf_counter() - start)
    with CaptureQueriesContext(connection) as queries:
        response = read()
    return statistics.median(times), len(queries), len(response.content)


def measure_against(client, base_url: str, url: str, *, rounds: int = 7) -> tuple[float, float]:
    """Median first-view server time (s) of the page at `base_url` and at `url`, read alternately `rounds`
    times after a warm read of each, so that both medians come from the same minutes of the machine."""
    from django.test.utils import override_settings

    _first_view(client, base_url), _first_view(client, url)
    with override_settings(DEBUG=False):
        base, times = alternately(lambda: _first_view(client, base_url), lambda: _first_view(client, url), rounds)
    return statistics.median(base), statistics.median(times)


def _page_figures(name: str, sizes, url_of, client, built) -> None:
    base_url = url_of(*built[sizes[0]])
    base_queries = None
    for size in sizes:
        run, member = built[size]
        seconds, queries, size_bytes = measure_page(client, url_of(run, member))
        if base_queries is None:
            base_queries = queries
        target = 1.5 if size <= 2000 else 2.0
        report(f"{name} at {size} records: server time", seconds * 1000, "ms", "median of 5")
        report(f"{name} at {size} records: queries · first view", queries, "queries",
               f"{size_bytes / 1024:.0f} KB (target < 600 KB)"
               + ("" if size == sizes[0] else f"; {base_queries} at {sizes[0]}: "
                  + ("same" if queries == base_queries else "NOT the same")))
        if size != sizes[0]:
            base_time, seconds = measure_against(client, base_url, url_of(run, member))
            report(f"{name} at {size} / at {sizes[0]} records", seconds / base_time, "x",
                   f"target <= {target}; {seconds * 1000:.1f} against {base_time * 1000:.1f} ms, "
                   "medians of 7 read alternately")
    if not name.startswith("reconciliation"):
        return
    for size in sizes:  # after every ratio: these decisions change the runs the ratios read
        run, member = built[size]
        seconds, _queries, _size = measure_page(client, url_of(run, member), kept=True)
        report(f"{name} at {size} records: another reader's view of the same state", seconds * 1000, "ms",
               "median of 5; the view kept for the run's chain head (reconcile.blockers.kept_page)")
        after, answer = _after_decisions(client, run, url_of(run, member))
        report(f"{name} at {size} records: a decision's answer", answer * 1000, "ms",
               "median of 3 rejections posted as the page posts them (htmx), each computing the standing")
        report(f"{name} at {size} records: the view after a decision", after * 1000, "ms",
               "median of 3; its rows built again, the standing and counters the answer kept for the head it left")


def _after_decisions(client, run, url: str, decisions: int = 3) -> tuple[float, float]:
    """Median seconds of the page read after a real decision (a mapping rejected through the page's own
    POST, which moves the run's chain head), and of that POST's answer. Nothing is forgotten by hand: what
    a decision leaves unchanged (the records read for the current versions) stays as it would."""
    from django.test.utils import override_settings

    from reconcile.models import Mapping

    views, answers = [], []
    open_mappings = list(Mapping.objects.filter(run=run, state=Mapping.State.PROPOSED).order_by("pk")[:decisions])
    with override_settings(DEBUG=False):
        for mapping in open_mappings:
            start = time.perf_counter()
            response = client.post(f"/runs/{run.run_id}/reconcile/mappings/{mapping.pk}/decide/",
                                   {"decision": "reject", "rationale": "bench", "version": mapping.version},
                                   HTTP_HX_REQUEST="true")
            answers.append(time.perf_counter() - start)
            assert response.status_code == 200, response.status_code
            start = time.perf_counter()
            assert client.get(url).status_code == 200
            views.append(time.perf_counter() - start)
    return statistics.median(views), statistics.median(answers)


def bench_pages():
    client = _client()
    built = {size: _build(size) for size in sorted(set(RECONCILE_SIZES) | set(MEMBER_SIZES))}
    _analyze()
    _page_figures("reconciliation page", RECONCILE_SIZES,
                  lambda run, member: f"/runs/{run.run_id}/reconcile/?member={member}", client, built)
    second = SIZES[1] if len(SIZES) > 1 else SIZES[0]
    run, member = built[second]
    seconds, queries, size_bytes = measure_page(client, f"/runs/{run.run_id}/reconcile/?member={member}&offset=60",
                                            HTTP_HX_REQUEST="true")
    report(f"reconciliation page at {second} records: next rows (htmx)", seconds * 1000, "ms",
           f"{size_bytes / 1024:.0f} KB, {queries} queries")
    _page_figures("member page", MEMBER_SIZES,
                  lambda run, member: f"/runs/{run.run_id}/members/{member}/", client, built)
    run, member = built[MEMBER_SIZES[-1]]
    seconds, queries, size_bytes = measure_page(client, f"/runs/{run.run_id}/members/{member}/?offset=100",
                                            HTTP_HX_REQUEST="true")
    report(f"member page at {MEMBER_SIZES[-1]} records: next records (htmx)", seconds * 1000, "ms",
           f"{size_bytes / 1024:.0f} KB, {queries} queries")


def profile_pages():
    import cProfile
    import pstats

    from reconcile.blockers import forget_kept

    client = _client()
    size = int(os.environ.get("BENCH_PROFILE_RECORDS", "2000"))  # the largest sizes take minutes to build
    for url in ("/runs/{run}/members/{member}/", "/runs/{run}/reconcile/?member={member}"):
        run, member = _build(size)
        _analyze()
        address = url.format(run=run.run_id, member=member)
        client.get(address)
        profiler = cProfile.Profile()
        for _ in range(3):
            forget_kept(views_only=True)  # a first view, as `measure_page` times it
            profiler.enable()
            client.get(address)
            profiler.disable()
        print(f"--- {address} ({size} records), 3 requests")
        pstats.Stats(profiler).sort_stats(os.environ.get("BENCH_PROFILE_SORT", "cumulative")).print_stats(int(os.environ.get("BENCH_PROFILE_LINES", "30")))

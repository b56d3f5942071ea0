"""The reconciliation page makes as many SQL queries at 2,000 records as at 20 (DESIGN.md §11)."""
import html
import re
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reconcile.views import PAGE_ROWS
from tests.reconcile.page_factories import amendments, build_reconcile_run, make_member
from tests.reconcile.test_kept_page import _without_tokens

pytestmark = pytest.mark.django_db


def _page_queries(client, size: int, run_id: str) -> tuple[int, float, bytes]:
    run, member = build_reconcile_run(records=size, run_id=run_id)
    url = f"/runs/{run.run_id}/reconcile/?member={member}"
    client.get(url)  # warm the template cache
    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        response = client.get(url)
        elapsed = time.perf_counter() - start
    assert response.status_code == 200
    return len(queries), elapsed, response.content


def test_it_renders_the_page_with_the_same_number_of_queries_at_2000_records_as_at_20(client, reviewer):
    client.force_login(reviewer.user)
    small, _, small_page = _page_queries(client, 20, "AAS-2026-09-25-small-01")
    large, elapsed, large_page = _page_queries(client, 2000, "AAS-2026-09-25-large-01")
    assert small_page.count(b'class="pair state-') == 20 and b'id="more-rows"' not in small_page
    # At 2,000 the first view holds one page of rows; the rest arrive in pages (next test).
    assert large_page.count(b'class="pair state-') == PAGE_ROWS and b'id="more-rows"' in large_page
    assert large == small, f"{small} queries at 20 records, {large} at 2,000"
    print(f"\nreconciliation page: {large} queries; {elapsed * 1000:.0f} ms at 2,000 records")


def test_the_rows_arrive_in_pages_each_row_once_with_the_same_query_count(client, reviewer):
    client.force_login(reviewer.user)
    run, member = build_reconcile_run(records=2000, run_id="AAS-2026-09-25-large-04")
    first = client.get(f"/runs/{run.run_id}/reconcile/?member={member}").content.decode()
    seen = re.findall(r'<article id="(pair-\d+|record-\d+)" class="pair', first)
    counts = set()
    page = first
    while (more := re.search(r'id="more-rows" class="more-rows" hx-get="([^"]+)"', page)) is not None:
        # What the link says is left is what the next pages bring (one row per record in this run).
        assert int(re.search(r"Next records \((\d+) left\)", page).group(1)) == 2000 - len(seen)
        url = html.unescape(more.group(1))
        client.get(url, HTTP_HX_REQUEST="true")  # a page's first view also stores its word diffs
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url, HTTP_HX_REQUEST="true")
        assert response.status_code == 200 and b"<html" not in response.content
        counts.add(len(queries))
        page = response.content.decode()
        seen += re.findall(r'<article id="(pair-\d+|record-\d+)" class="pair', page)
    assert len(seen) == len(set(seen)) == 2000
    # Every page of rows costs the same queries, but two: a page without any pair skips the lookups of
    # its canonical records and of their stored word diffs.
    assert max(counts) - min(counts) <= 2, counts


def test_it_keeps_the_query_count_of_an_htmx_filter_swap_constant(client, reviewer):
    client.force_login(reviewer.user)
    counts = []
    for size, run_id in ((20, "AAS-2026-09-25-small-02"), (2000, "AAS-2026-09-25-large-02")):
        run, member = build_reconcile_run(records=size, run_id=run_id)
        url = f"/runs/{run.run_id}/reconcile/?member={member}&show=undecided"
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="pair-table")
        assert response.status_code == 200 and b"<html" not in response.content
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_it_keeps_the_query_count_constant_with_every_members_issues_amendments_and_a_proposer(client, agent):
    """The issues panel of all members (`issues=all`) and the amendments panel, seen by an agent,
    whose rows offer proposals."""
    client.force_login(agent.user)
    counts, pages = [], []
    for size, run_id in ((20, "AAS-2026-09-25-small-03"), (2000, "AAS-2026-09-25-large-03")):
        run, member = build_reconcile_run(records=size, run_id=run_id, issue_count=size // 4)
        amendments(make_member(run, "reconciliation"), [("unresolved-conflict", f"Conflict {n}.")
                                                        for n in range(size // 10)])
        url = f"/runs/{run.run_id}/reconcile/?member={member}&issues=all"
        client.get(url)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        counts.append(len(queries))
        pages.append(response.content)
    assert pages[1].count(b"Propose another mapping") == PAGE_ROWS and pages[1].count(b'class="issue state-') == 500
    assert pages[1].count(b'class="amendment state-') == 200
    assert counts[0] == counts[1], f"{counts[0]} queries at 20 records, {counts[1]} at 2,000"


def test_the_page_reuses_the_standing_of_the_runs_state_until_a_decision_changes_it(client, reviewer, monkeypatch):
    """The reconciliation page keeps the run's standing per audit chain head (reconcile.blockers.kept_standing):
    a second view of the same state computes no disposition again; a decision, which writes an event,
    moves the head, and the next view computes and shows the new state."""
    from reconcile import blockers, services
    from reconcile.models import Mapping
    from reviews.audit import Actor

    client.force_login(reviewer.user)
    run, member = build_reconcile_run(records=20, run_id="AAS-2026-09-25-kept-01")
    url = f"/runs/{run.run_id}/reconcile/?member={member}"
    computed = []
    real = blockers.run_standing
    monkeypatch.setattr(blockers, "run_standing", lambda *args, **kwargs: computed.append(1) or real(*args, **kwargs))

    def left(page: bytes) -> int:
        return int(re.search(rb'data-count="mappings-left">(\d+)<', page).group(1))

    first, again = client.get(url).content, client.get(url).content
    assert len(computed) == 1 and left(again) == left(first)
    mapping = Mapping.objects.filter(run=run, score=0.95).order_by("pk").first()
    services.decide_mapping(mapping=mapping, decision="accept", rationale="same slug", expected_version=mapping.version,
                            actor=Actor.for_user(reviewer.user))
    after = client.get(url).content
    assert len(computed) == 2 and left(after) == left(first) - 1
    assert f'id="pair-{mapping.pk}" class="pair state-accepted'.encode() in after


def test_the_page_lists_a_few_target_choices_per_kind_and_the_rest_as_the_reviewer_types(client, reviewer):
    from reconcile.models import CanonicalRecord
    from reconcile.selectors import TARGET_CHOICES

    client.force_login(reviewer.user)
    run, member = build_reconcile_run(records=2000, run_id="AAS-2026-09-25-large-05")
    page = client.get(f"/runs/{run.run_id}/reconcile/?member={member}").content.decode()
    kinds = set(CanonicalRecord.objects.filter(run=run, state="active").values_list("kind", flat=True))
    for kind in kinds:
        listed = re.search(rf'<datalist id="targets-{kind}">(.*?)</datalist>', page, re.S).group(1)
        shown = re.findall(r'<option value="([^"]+)"', listed)
        active = CanonicalRecord.objects.filter(run=run, state="active", kind=kind).count()
        assert len(shown) == min(active, TARGET_CHOICES)
    last = CanonicalRecord.objects.filter(run=run, state="active").order_by("-number").first()
    typed = client.get(f"/runs/{run.run_id}/reconcile/targets/",
                       {"kind": last.kind, "target": last.canonical_id}, HTTP_HX_REQUEST="true").content.decode()
    assert f'<option value="{last.canonical_id}">' in typed and "<html" not in typed
    by_label = client.get(f"/runs/{run.run_id}/reconcile/targets/",
                          {"kind": last.kind, "target": last.label[:12]}, HTTP_HX_REQUEST="true").content.decode()
    assert last.canonical_id in by_label


def test_the_runs_list_keeps_each_runs_progress_until_an_event_moves_its_head(client, reviewer, monkeypatch):
    """The runs list counts a run's decisions once per audit chain head (reconcile.blockers.kept_for_heads):
    a second view counts nothing again; a decision moves the head and the next view shows the new count,
    the same as a fresh count."""
    from reconcile import services
    from reconcile.models import Mapping
    from reconcile.views import runs
    from reviews.audit import Actor

    client.force_login(reviewer.user)
    run, _member = build_reconcile_run(records=20, run_id="AAS-2026-09-25-listed-01")
    counted = []
    real = runs._progress_by_run
    monkeypatch.setattr(runs, "_progress_by_run", lambda pks: counted.append(list(pks)) or real(pks))

    def decided(page: bytes) -> int:
        found = re.search(rf'id="decision-progress-{run.run_id}">.*?<a href="[^"]+">(\d+)/\d+ mapping'.encode(), page, re.S)
        return int(found.group(1))

    first, again = client.get("/").content, client.get("/").content
    assert decided(again) == decided(first) and [run.pk in pks for pks in counted].count(True) == 1
    mapping = Mapping.objects.filter(run=run, score=0.95).order_by("pk").first()
    services.decide_mapping(mapping=mapping, decision="accept", rationale="same slug", expected_version=mapping.version,
                            actor=Actor.for_user(reviewer.user))
    after = client.get("/").content
    assert decided(after) == decided(first) + 1 == real([run.pk])[run.pk]["mappings_decided"]
    assert [run.pk in pks for pks in counted].count(True) == 2


def test_the_runs_list_makes_a_runs_row_again_only_when_its_head_moves(client, reviewer, monkeypatch):
    """Each run's row of the runs list is kept for its chain head: a view after a decision in one run makes
    that run's row again, and no other; what it shows then is what a list made afresh shows."""
    from reconcile import blockers, services
    from reconcile.models import Mapping
    from reconcile.views import runs
    from reviews.audit import Actor

    client.force_login(reviewer.user)
    decided_in, _ = build_reconcile_run(records=20, run_id="AAS-2026-12-02-listed-02")
    untouched, _ = build_reconcile_run(records=20, run_id="AAS-2026-12-02-listed-03")
    made = []
    real = runs._rows
    monkeypatch.setattr(runs, "_rows", lambda moved, progress: made.extend(r.run_id for r in moved) or real(moved, progress))
    client.get("/")
    assert {decided_in.run_id, untouched.run_id} <= set(made)
    made.clear()
    client.get("/")
    assert made == []
    mapping = Mapping.objects.filter(run=decided_in, score=0.95).order_by("pk").first()
    services.decide_mapping(mapping=mapping, decision="accept", rationale="same slug", expected_version=mapping.version,
                            actor=Actor.for_user(reviewer.user))
    kept = client.get("/").content
    assert made == [decided_in.run_id]
    blockers.forget_kept()
    assert _without_tokens(client.get("/").content) == _without_tokens(kept)

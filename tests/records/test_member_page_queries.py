"""The member page at scale (DESIGN §11, issue 23 item 5): one page of records per request, the same
queries at 2,000 records as at 20, counts per kind exact across pages, and a link to any line lands on
the page that shows it."""
import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from records.member_page import MEMBER_PAGE_RECORDS
from records.models import MemberVersion
from tests.reconcile.page_factories import build_reconcile_run, write_member_text

pytestmark = pytest.mark.django_db


def _member_run(size: int, run_id: str):
    run, member = build_reconcile_run(records=size, run_id=run_id)
    write_member_text(MemberVersion.objects.get(member__run=run, member__role=member))
    return run, f"/runs/{run.run_id}/members/{member}/"


def _get(client, url: str, **headers):
    client.get(url, **headers)  # warm the template cache
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, **headers)
    assert response.status_code == 200
    return len(queries), response.content.decode()


def records_on(page: str) -> list[str]:
    return re.findall(r'<article class="record" id="([^"]+)"', page)


def test_it_renders_the_member_page_with_the_same_number_of_queries_at_2000_records_as_at_20(client, reviewer):
    client.force_login(reviewer.user)
    small, small_page = _get(client, _member_run(20, "AAS-2026-09-25-msmall-01")[1])
    large, large_page = _get(client, _member_run(2000, "AAS-2026-09-25-mlarge-01")[1])
    assert len(records_on(small_page)) == 20 and 'id="more-records"' not in small_page
    assert len(records_on(large_page)) == MEMBER_PAGE_RECORDS and 'id="more-records"' in large_page
    assert large == small, f"{small} queries at 20 records, {large} at 2,000"
    assert len(large_page) < len(small_page) * 3  # the text is not inlined either


def test_the_records_arrive_in_pages_each_once_with_the_same_query_count(client, reviewer):
    client.force_login(reviewer.user)
    _, url = _member_run(330, "AAS-2026-09-25-mpages-01")
    _, page = _get(client, url)
    seen, counts = records_on(page), set()
    assert "Next 280 records" in page
    while (more := re.search(r'id="more-records" class="more-rows" hx-get="([^"]+)"', page)) is not None:
        queries, page = _get(client, html.unescape(more.group(1)), HTTP_HX_REQUEST="true")
        assert "<html" not in page
        counts.add(queries)
        seen += records_on(page)
    assert len(seen) == len(set(seen)) == 330
    assert len(counts) == 1, counts


def test_the_counts_per_kind_count_the_whole_report_on_every_page(client, reviewer):
    client.force_login(reviewer.user)
    _, url = _member_run(600, "AAS-2026-09-25-mkinds-01")
    _, first = _get(client, url)
    # Six kinds in turn: 100 of each, whichever page a group of them is on.
    assert re.search(r'<a href="[^"]*from=1#kind-OBJ">Operative objects</a> <span class="muted">\(100\)', first)
    _, later = _get(client, url + "?from=301")
    assert "Operative objects <span class=\"muted\">(100; continued)" in later
    assert records_on(later)[0] == "MEM-OBJ-slotlp"  # record 301 of the factory's run


def test_a_link_to_a_line_opens_the_page_that_anchors_it(client, reviewer):
    client.force_login(reviewer.user)
    _, url = _member_run(2000, "AAS-2026-09-25-mline-01")
    _, first = _get(client, url)
    assert 'id="L15005"' not in first
    # Line 15,005 is inside record 1,500 (the factory's records start every 10 lines, from ordinal 0): the
    # page of 50 holding it opens, which starts there.
    _, page = _get(client, url + "?line=15005")
    assert records_on(page)[0] == "MEM-CMP-slotcfs"
    _, page = _get(client, url + "?line=15105")  # record 1,510: the same page
    assert records_on(page)[0] == "MEM-CMP-slotcfs" and page.count('id="L15105"') == 1
    assert page.count('id="L15005"') == 1
    # A line between records is anchored in the text shown around it.
    _, between = _get(client, url + "?line=15008")
    assert between.count('id="L15008"') == 1


def test_the_parse_keeps_the_counts_per_kind_the_page_would_otherwise_aggregate(run_factory,
                                                                               django_capture_on_commit_callbacks):
    from django.db.models import Count, Min

    from records import services
    from records.models import Record
    from reviews.audit import Actor
    from tests.conftest import seed_bytes

    run = run_factory()
    with django_capture_on_commit_callbacks(execute=True):
        version, _ = services.ingest_member_report(run=run, role="memory", filename="002.md",
                                                   content=seed_bytes("002"), actor=Actor.command("test"))
    version.refresh_from_db()
    aggregated = {(r["record_type"], r["kind"]): [r["n"], r["first"]] for r in
                  Record.objects.filter(member_version=version).values("record_type", "kind")
                  .annotate(n=Count("id"), first=Min("ordinal")).order_by()}
    kept = {(kind_type, kind): [n, first] for kind_type, kind, n, first in version.kind_counts}
    assert kept == aggregated and len(kept) > 2


def test_a_version_parsed_before_the_counts_were_kept_is_counted_by_one_query(client, reviewer):
    client.force_login(reviewer.user)
    run, url = _member_run(300, "AAS-2026-09-25-mkept-01")
    kept_queries, kept_page = _get(client, url)
    MemberVersion.objects.filter(member__run=run, member__role="memory").update(kind_counts=None)
    counted_queries, counted_page = _get(client, url)
    assert counted_queries == kept_queries + 1
    nav = re.compile(r'<nav class="record-kinds".*?</nav>', re.S)
    assert nav.search(counted_page).group(0) == nav.search(kept_page).group(0)


def test_a_link_to_a_line_of_a_report_that_fits_one_page_opens_it_whole(client, reviewer):
    client.force_login(reviewer.user)
    _, url = _member_run(30, "AAS-2026-09-25-mwhole-01")
    _, whole = _get(client, url)
    _, linked = _get(client, url + "?line=205")
    assert records_on(linked) == records_on(whole) and len(records_on(whole)) == 30
    assert "Full text" in linked and linked.count('id="L205"') == 1

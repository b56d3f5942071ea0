"""Quotations on the pages: their marks beside each record, the source lines on demand, the run's totals (DESIGN §5)."""
import hashlib
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.records.test_source_api import (
    COMMIT,
    SOURCE,
    memory_report,
    post_member,
    post_source,
    quote,
    tar_gz,
)


@pytest.fixture
def browser(reviewer):
    client = Client()
    client.force_login(reviewer.user)
    return client


@pytest.fixture
def checked_run(agent, run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    text = memory_report(quote("db.insert(row)\n    return row", f"`src/store.py` @ `{COMMIT}`"),
                         quote("db.upsert(row)", f"`src/store.py` @ `{COMMIT}`"))
    with django_capture_on_commit_callbacks(execute=True):
        assert post_member(agent, run, text).status_code == 201
    archive = tar_gz(SOURCE)  # gzip stamps the time: keep the very bytes posted
    with django_capture_on_commit_callbacks(execute=True):
        assert post_source(agent, run, archive).status_code == 201
    run.archive = archive
    return run


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.mark.django_db
def test_the_member_page_marks_each_quotation_of_a_record_and_holds_its_source_lines(browser, checked_run):
    html = browser.get(f"/runs/{checked_run.run_id}/members/memory/").content.decode()
    record = html[html.index('id="MEM-OBJ-store-row"'):]
    record = record[:record.index("</article>")]
    assert record.count('class="quotation quote-') == 2
    verified = record[record.index("quote-verified"):record.index("quote-not-found")]
    assert "✓ verified" in verified and "<details>" in verified
    assert "3 db.insert(row) 4 return row" in text_of(verified[verified.index("<pre"):])
    missing = record[record.index("quote-not-found"):]
    assert "✗ not found" in missing and "quote the file&#x27;s exact text" in missing


@pytest.mark.django_db
def test_the_run_page_shows_the_snapshot_and_totals_per_status(browser, checked_run):
    html = browser.get(f"/runs/{checked_run.run_id}/").content.decode()
    section = html[html.index('id="source-snapshot"'):]
    section = section[:section.index("</section>")]
    assert hashlib.sha256(checked_run.archive).hexdigest() in section
    assert "2 files" in text_of(section)
    assert "1 of 2 quotations verified" in text_of(section)
    totals = dict(re.findall(r'<li class="quote-[a-z-]+"><span class="quote-mark">(.*?)</span> '
                             r'<strong class="count">(\d+)</strong></li>', section))
    assert totals["✓ verified"] == "1" and totals["✗ not found"] == "1" and totals["? ambiguous"] == "0"


@pytest.mark.django_db
def test_the_run_page_says_when_there_is_no_snapshot(browser, run_factory):
    run = run_factory()
    html = browser.get(f"/runs/{run.run_id}/").content.decode()
    assert "No source snapshot yet" in html


@pytest.mark.django_db
def test_the_reconciliation_page_marks_the_records_quotations(browser, checked_run):
    html = browser.get(f"/runs/{checked_run.run_id}/reconcile/?member=memory").content.decode()
    assert "✓ verified" in html and "✗ not found" in html
    row = html[html.index("MEM-OBJ-store-row"):]
    assert row.index("✓ verified") < row.index("</article>")


@pytest.mark.django_db
def test_the_member_page_lists_every_quotation_with_a_link_to_its_line(browser, checked_run):
    html = browser.get(f"/runs/{checked_run.run_id}/members/memory/").content.decode()
    section = html[html.index('id="quotations"'):]
    section = section[:section.index("</section>")]
    assert "Quotations" in section and "(2;" in section
    assert re.findall(r'<a href="([^"]+)">line (\d+)</a>', section) == [
        (f"/runs/{checked_run.run_id}/members/memory/?line=9#L9", "9"),
        (f"/runs/{checked_run.run_id}/members/memory/?line=13#L13", "13")]


# A whole column of the member version's report bytes or parse in a SELECT list (the member page's
# `SUBSTRING(… "content", 1, …)` head of the report is its own, bounded read).
WHOLE_BODY = re.compile(r'(?<!SUBSTRING\()"records_memberversion"\."(content|parsed)"')


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["/runs/{run}/reconcile/?member=memory", "/runs/{run}/members/memory/"])
def test_the_quotation_marks_are_read_without_the_reports_bytes_or_parse(browser, checked_run, page):
    """A quotation's link names its member's role: joining the member version for it must not fetch the
    version's report and parse again with every quotation (32 copies, 15 ms a page on the seed run)."""
    url = page.format(run=checked_run.run_id)
    with CaptureQueriesContext(connection) as queries:
        html = browser.get(url).content.decode()
    assert html.count('class="quotation quote-') >= 2
    heavy = [q["sql"][:200] for q in queries.captured_queries if "records_quotationcheck" in q["sql"]
             and WHOLE_BODY.search(q["sql"])]
    assert heavy == []

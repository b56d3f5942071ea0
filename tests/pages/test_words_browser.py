"""The reconciliation page in Chromium at 390 and 1440 px (issue 22): the column header never covers
a row, record texts are rendered Markdown, and the bulk accept shows its preview before it acts.
Screenshots are kept in the test's tmp dir."""

import pytest
from django.db import connection

from records.services import ingest_member_report
from reviews.audit import Actor
from tests.conftest import seed_bytes
from tests.pages.test_reading_browser import logged_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AGENT = Actor("token:agent-1")
# Rows whose top a sticky element covers: the element drawn at a row's top edge is not the row.
COVERED = """() => [...document.querySelectorAll('#pair-table > .record-rows .pair, #pair-table > .pair:not(.pair-head)')]
  .slice(0, 8).map(row => { row.scrollIntoView({block: 'start'}); const box = row.getBoundingClientRect();
  const hit = document.elementFromPoint(box.left + 30, box.top + 4);
  return row.contains(hit) ? null : row.id; }).filter(Boolean)"""


@pytest.fixture(autouse=True)
def _orm_beside_playwright(monkeypatch):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def seed_run(run_factory):
    run = run_factory(run_id="AAS-2026-12-01-words-03")
    for role, seed in (("result", "000"), ("memory", "002")):
        ingest_member_report(run=run, role=role, filename=f"{role}.md", content=seed_bytes(seed), actor=AGENT)
    run.refresh_from_db()
    connection.close()
    return run


@pytest.mark.parametrize("width", [390, 1440])
def test_no_reconciliation_row_is_covered_by_the_header_and_texts_are_rendered(live_server, reviewer, seed_run,
                                                                                browser, width, tmp_path):
    page = logged_in(browser, live_server, {"width": width, "height": 844})
    page.goto(f"{live_server.url}/runs/{seed_run.run_id}/reconcile/")
    page.wait_for_selector("#pair-table .pair:not(.pair-head)")
    header = page.eval_on_selector(".pair-head", "e => e.getBoundingClientRect().height")
    assert header < 40, f"the column header is {header} px tall"
    assert page.evaluate(COVERED) == []
    page.screenshot(path=str(tmp_path / f"reconcile-{width}.png"))
    texts = page.eval_on_selector_all(".pair .text", "els => els.map(e => e.innerText).join('\\n')")
    assert "**" not in texts
    print(tmp_path)


def test_bulk_accept_shows_which_rows_before_it_accepts(live_server, reviewer, seed_run, browser, tmp_path):
    page = logged_in(browser, live_server, {"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/runs/{seed_run.run_id}/reconcile/")
    page.fill(".bulk input[name=min_score]", "0.5")
    page.click(".bulk button[type=submit]")
    page.wait_for_selector("h1:has-text('Bulk accept')")
    page.screenshot(path=str(tmp_path / "bulk-preview.png"), full_page=True)
    body = page.inner_text("main")
    assert "Nothing is accepted until you confirm" in body or "nothing to accept" in body

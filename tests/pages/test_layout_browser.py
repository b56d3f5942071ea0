"""The run page, the reconciliation page and the result page in Chromium at 390 and 1440 px (issue 22):
no row is covered by a sticky or fixed element once the page is scrolled to it, nothing is wider than
a phone at 390 px, and the result page opens with its summary, the reviewer's decisions before the
members' prose. Screenshots are kept in the test's tmp dir (the path is printed)."""

import pytest

from tests.pages.test_reading_browser import _orm_beside_playwright, final_run, logged_in, seed_run  # noqa: F401
from tests.results.test_approval import ready_run  # noqa: F401 — final_run's fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# For each of the first rows: scrolled to (as a link or j/k does), the boxes of the sticky and fixed
# elements that overlap it (none should). An element the row sits inside is its container, not a cover.
COVERED_ROWS = """(selector) => {
  const covers = [...document.querySelectorAll('body *')].filter(e => {
    const position = getComputedStyle(e).position;
    return (position === 'sticky' || position === 'fixed') && e.getClientRects().length; });
  const rows = [...document.querySelectorAll(selector)].filter(r => r.getClientRects().length).slice(0, 6);
  const found = [];
  for (const row of rows) {
    row.scrollIntoView({block: 'start'});
    const box = row.getBoundingClientRect();
    for (const cover of covers) {
      if (cover.contains(row) || row.contains(cover)) continue;
      const c = cover.getBoundingClientRect();
      const overlaps = c.left < box.right && box.left < c.right && c.top < box.bottom && box.top < c.bottom;
      if (overlaps && c.height > 0) found.push(`${row.id || row.tagName} under ${cover.className || cover.tagName}`);
    }
  }
  return {rows: rows.length, found};
}"""
# Elements whose right edge is past the viewport; inside a box that clips or scrolls sideways of its own
# (a visually hidden table head, a wide code block) they are not drawn past it.
WIDER_THAN_THE_SCREEN = """() => {
  const width = document.documentElement.clientWidth;
  const clipped = e => { for (let a = e.parentElement; a && a.tagName !== 'MAIN'; a = a.parentElement)
    if (getComputedStyle(a).overflowX !== 'visible') return true; return false; };
  return [...document.querySelectorAll('main *')].filter(e => e.getClientRects().length
    && e.getBoundingClientRect().right > width + 1 && !clipped(e)).slice(0, 5)
    .map(e => `${e.tagName}.${e.className} (${e.textContent.trim().slice(0, 30)})`);
}"""
PAGES = {  # page → (path after /runs/<run>/, the rows a reviewer scrolls to)
    "run": ("", "#pipeline tbody tr, #decisions li"),
    "reconcile": ("reconcile/", "#pair-table article.pair:not(.pair-head), #issues article"),
    "result": ("result/", ".result-body tbody tr, .result-body h2"),
}


def check_layout(page, name: str, width: int, tmp_path) -> None:
    page.screenshot(path=str(tmp_path / f"{name}-{width}-top.png"))
    rows = PAGES[name][1]
    covered = page.evaluate(COVERED_ROWS, rows)
    page.screenshot(path=str(tmp_path / f"{name}-{width}-scrolled.png"))
    assert covered["rows"] >= 2, f"{name}: no rows matched {rows}"
    assert covered["found"] == [], f"{name} at {width} px: {covered['found']}"
    if width == 390:
        sideways = page.evaluate("[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
        assert sideways[0] <= sideways[1], f"{name} scrolls sideways at 390 px: {sideways}"
        assert page.evaluate(WIDER_THAN_THE_SCREEN) == []


@pytest.mark.parametrize("width", [390, 1440])
@pytest.mark.parametrize("name", ["run", "reconcile"])
def test_no_row_of_the_run_and_reconciliation_pages_is_covered(live_server, reviewer, seed_run,  # noqa: F811
                                                               browser, name, width, tmp_path):
    page = logged_in(browser, live_server, {"width": width, "height": 844})
    page.goto(f"{live_server.url}/runs/{seed_run.run_id}/{PAGES[name][0]}")
    page.wait_for_load_state("networkidle")  # the run page's panels arrive through htmx
    check_layout(page, name, width, tmp_path)
    print(tmp_path)


@pytest.mark.parametrize("width", [390, 1440])
def test_the_result_page_opens_with_its_summary_and_covers_no_row(live_server, reviewer, final_run,  # noqa: F811
                                                                  browser, width, tmp_path):
    page = logged_in(browser, live_server, {"width": width, "height": 900})
    page.goto(f"{live_server.url}/runs/{final_run.run_id}/result/")
    height = page.evaluate("document.scrollingElement.scrollHeight")
    top = "e => e.getBoundingClientRect().top + scrollY"
    decisions = page.locator("#sec-reconciliation").evaluate(top)
    print(f"result page at {width} px: {height} px tall, decisions at y={decisions}")
    # The summary is on the first screen, and the reviewer's decisions come before the members' prose
    # (they started at 31,652 px of 34,947 at 1440 px, 74,992 of 81,487 at 390).
    assert page.locator("#result-summary").evaluate(top) < 900
    assert decisions < min(page.locator(selector).first.evaluate(top) for selector in (
        "#sec-run-identity", "#sec-shared-records", "h2[id^=sec-overview-report]", "h2[id^=sec-memory-report]"))
    assert decisions < 2500
    summary = page.inner_text("#result-summary")
    assert "14 entered as new shared records" in summary and "5 accepted · 0 rejected" in summary, summary
    assert "Read every mapping." in summary
    # Each link of the summary lands on its section.
    page.locator("#result-summary a", has_text="Integration issues").click()
    assert page.evaluate("location.hash") == "#sec-integration-issue-decisions"
    assert page.locator("#sec-integration-issue-decisions").evaluate("e => e.getBoundingClientRect().top") < 100
    check_layout(page, "result", width, tmp_path)
    print(tmp_path)

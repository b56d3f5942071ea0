"""A run from its first decision to its final result in a real browser, and a final run without controls (issue 10).

Drives Debian's Chromium through Playwright against pytest-django's live server; decisions are
htmx swaps, approval is the form the blockers panel turns into once nothing is left.
"""
import shutil

import pytest
from django.db import connection

from records.services import ingest_member_report
from reconcile.models import Mapping
from results.models import Result
from reviews.audit import Actor
from reviews.models import Run
from tests.reconcile.factories import CHEATSHEET
from tests.results.test_approval import CHEATSHEET_FIELDS
from tests.reconcile.test_browser import _orm_beside_playwright, _session_cookie, count  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)

AGENT = Actor("token:agent-1")
RESULT_SCREENSHOT = "/tmp/reconcile-result.png"
FINAL_SCREENSHOT = "/tmp/reconcile-final.png"


@pytest.fixture
def corpus_run(run_factory):
    """The dynamic-cheatsheet corpus run through the pipeline (tasks run eagerly), in review."""
    run = run_factory(**CHEATSHEET_FIELDS)
    for path in sorted(CHEATSHEET.glob("*.md")):
        ingest_member_report(run=run, role=path.stem, filename=path.name, content=path.read_bytes(), actor=AGENT)
    run.refresh_from_db()
    assert run.status == Run.Status.IN_REVIEW, run.status_reason
    connection.close()
    return run


def open_page(browser, live_server, reviewer, url):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(15_000)
    page.context.add_cookies([_session_cookie(live_server, reviewer)])
    page.goto(f"{live_server.url}{url}")
    return page


def accept_every_open(page, region: str) -> None:
    """Click Accept on each open row of a region, one htmx swap at a time."""
    for row_id in [row.get_attribute("id") for row in page.locator(f"{region} article.state-proposed").all()]:
        page.locator(f"#{row_id} button[data-decision=accept]").click()
        page.wait_for_selector(f"#{row_id} .status-accepted")


def test_a_reviewer_takes_a_run_from_its_first_decision_through_approval_to_the_result(
        live_server, reviewer, corpus_run, browser):
    url = f"/runs/{corpus_run.run_id}/reconcile/?member=epistemic&issues=all"
    page = open_page(browser, live_server, reviewer, url)
    assert "blockers before approval" in page.locator("#blockers").inner_text()
    page.evaluate("window.__marker = 1")

    # First decision from the keyboard: the supersession EPI-OBJ-4 → MEM-OBJ-2 waits for MEM-OBJ-2,
    # so the reviewer starts with a plain `new` row and the selection moves on.
    page.keyboard.press("j")
    first_id = page.locator("[data-shortcut-row][aria-selected=true]").get_attribute("id")
    page.keyboard.press("a")
    page.wait_for_selector(f"#{first_id} .status-accepted")
    assert page.evaluate("window.__marker") == 1

    # The memory records first (MEM-OBJ-2 must enter the shared set before the supersession onto it).
    page.goto(f"{live_server.url}/runs/{corpus_run.run_id}/reconcile/?member=memory&issues=all")
    accept_every_open(page, "#pair-table")

    # Back on the epistemic records: EPI-OBJ-4 is superseded by MEM-OBJ-2 (accept), its `new`
    # suggestion is the alternative that lost (reject with a rationale); the rest are accepted.
    page.goto(f"{live_server.url}{url}")
    page.evaluate("window.__marker = 2")
    supersedes = Mapping.objects.get(run=corpus_run, source="EPI-OBJ-4", relation="supersedes")
    lost = Mapping.objects.get(run=corpus_run, source="EPI-OBJ-4", relation="new")
    connection.close()
    page.locator(f"#pair-{supersedes.pk} button[data-decision=accept]").click()
    page.wait_for_selector(f"#pair-{supersedes.pk} .status-accepted")
    page.locator(f"#pair-{lost.pk} [data-rationale]").fill("superseded by MEM-OBJ-2 instead")
    page.locator(f"#pair-{lost.pk} button[data-decision=reject]").click()
    page.wait_for_selector(f"#pair-{lost.pk} .status-rejected")
    assert "Alternative not taken: EPI-OBJ-4 is superseded by" in page.locator(f"#pair-{lost.pk}").inner_text()
    accept_every_open(page, "#pair-table")
    accept_every_open(page, "#issues")
    for row_id in [row.get_attribute("id") for row in page.locator("#amendments article.state-proposed").all()]:
        row = page.locator(f"#{row_id}")
        row.locator("[data-rationale]").fill("the Part-of value stays open")
        row.locator('button[data-decision="carry"]').click()
        page.wait_for_selector(f"#{row_id} .status-carried")
    assert page.evaluate("window.__marker") == 2  # every decision on this page an htmx swap

    # Nothing is left: the blockers panel (swapped out of band) is now the approval form.
    panel = page.locator("#blockers")
    assert "Nothing blocks approval." in panel.inner_text()
    panel.locator("textarea[name=note]").fill("Read each mapping against the runtime records in the browser.")
    panel.locator("button[type=submit]").click()
    page.wait_for_selector("#final-notice")  # finalized on commit (tasks run eagerly), back on the page

    result = Result.objects.get(run=corpus_run)
    assert f"Final: result {result.sha256} — closed." in page.locator("#final-notice").inner_text()
    assert "| EPI-OBJ-4 | supersedes |" in result.markdown
    connection.close()
    page.locator("#final-notice a", has_text="The result").click()
    page.wait_for_url(f"**/runs/{corpus_run.run_id}/result/")
    assert result.sha256 in page.content()
    assert page.locator("text=EPI-OBJ-4 is superseded by").count() >= 1
    page.screenshot(path=RESULT_SCREENSHOT)


def test_a_final_run_shows_the_notice_and_no_control(live_server, reviewer, corpus_run, browser):
    from tests.reconcile.test_coherence_properties import settle
    from results.services import approve_run

    settle(corpus_run)
    approve_run(run=corpus_run, note="Checked.", actor=Actor("user:reviewer-1"))  # finalized on commit
    corpus_run.refresh_from_db()
    assert corpus_run.status == Run.Status.FINAL, corpus_run.status_reason
    connection.close()
    page = open_page(browser, live_server, reviewer, f"/runs/{corpus_run.run_id}/reconcile/?member=epistemic")
    assert "Final: result" in page.locator("#final-notice").inner_text()
    assert page.locator("button[data-decision]").count() == 0
    assert page.locator("form.bulk, a.row-action, form.reopen-form, textarea[name=note]").count() == 0
    page.keyboard.press("j")
    page.keyboard.press("a")  # the shortcut finds nothing to press
    assert page.locator("button[data-decision]").count() == 0
    page.screenshot(path=FINAL_SCREENSHOT)
    page.goto(f"{live_server.url}/runs/{corpus_run.run_id}/")
    page.wait_for_selector("#final-notice")  # the run page's approval panel, loaded by htmx
    # Revise is the one control left, behind its confirmation (issue 22).
    page.locator("#final-notice summary", has_text="Revise").click()
    assert page.locator("#final-notice button", has_text="Yes, start the revision").count() == 1
    assert page.locator("form.reopen-form, textarea[name=note]").count() == 0

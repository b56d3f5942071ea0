"""Pages that read well (issue 14, DESIGN §5), in Chromium: a 390 px phone and a laptop.

At 390 px the runs list, the run page, the result page and the audit timeline
do not scroll sideways; record texts flow in their row instead of sitting in
scroll boxes of their own; the result page has a table of contents whose
anchors exist; the audit timeline lists changed fields before → after; and an
object link lands on its row. Screenshots go to /tmp/e14-*.png.
"""

import pytest
from django.db import connection

from reconcile import services
from results.services import approve_run
from reconcile.models import Mapping
from results.models import Result
from records.services import ingest_member_report
from reviews.audit import Actor
from tests.conftest import seed_bytes
from tests.results.test_approval import ready_run  # noqa: F401 — fixture: a reconciled run in review

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


AGENT = Actor("token:agent-1")
REVIEWER = Actor("user:reviewer-1")
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 900}
NO_SIDEWAYS_SCROLL = "document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth"
WIDTHS = "[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]"


@pytest.fixture(autouse=True)
def _orm_beside_playwright(monkeypatch):
    """Playwright's sync API keeps an event loop in this thread; the ORM calls between browser steps
    are still plain synchronous calls, one at a time."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def seed_run(run_factory):
    """Seed 000 as the imported result and seed 002 as the memory member, through the pipeline."""
    run = run_factory(run_id="AAS-2026-09-25-supermemory-02",
                      title="Supermemory agentic-system analysis with a deliberately long title that must wrap")
    for role, seed in (("result", "000"), ("memory", "002")):
        ingest_member_report(run=run, role=role, filename=f"{role}_report_with_a_long_file_name.txt",
                             content=seed_bytes(seed), actor=AGENT)
    run.refresh_from_db()
    connection.close()  # see tests/reconcile/test_browser.py: Playwright runs the test in another context
    return run


@pytest.fixture
def final_run(ready_run):  # noqa: F811 — the imported fixture
    with connection.cursor():
        approve_run(run=ready_run, note="Read every mapping.", actor=REVIEWER)  # the worker task runs on commit
    assert Result.objects.filter(run=ready_run).exists()
    connection.close()
    return ready_run


def logged_in(browser, live_server, viewport):
    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(15_000)
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "reviewer-1")
    page.fill("input[name=password]", "pw-reviewer-1-123")
    page.click("form button[type=submit]")
    page.wait_for_load_state()
    return page


def assert_no_sideways_scroll(page, shot: str, full_page: bool = True):
    page.screenshot(path=f"/tmp/e14-{shot}.png", full_page=full_page, timeout=60_000)
    page.screenshot(path=f"/tmp/e14-{shot}-top.png", timeout=60_000)  # the first screen, to look at
    assert page.evaluate(NO_SIDEWAYS_SCROLL), f"{shot}: scrollWidth, clientWidth = {page.evaluate(WIDTHS)}"


def test_the_runs_list_and_the_run_page_do_not_scroll_sideways_at_390_px(live_server, reviewer, seed_run, browser):
    page = logged_in(browser, live_server, PHONE)
    page.goto(f"{live_server.url}/")
    assert page.locator(f"#run-{seed_run.run_id}").is_visible()
    assert_no_sideways_scroll(page, "runs-390")
    # Each cell says what it is once the header row is out of sight.
    assert page.locator(f"#run-{seed_run.run_id} td[data-label=Status]").is_visible()

    page.goto(f"{live_server.url}/runs/{seed_run.run_id}/")
    page.wait_for_selector("#member-memory")
    page.wait_for_load_state("networkidle")  # the decisions and approval panels arrive through htmx
    assert_no_sideways_scroll(page, "run-390")
    page.locator("#pipeline").screenshot(path="/tmp/e14-run-390-members.png")
    # The 64-digit SHA-256 wraps inside the phone's width.
    box = page.locator("#member-memory td.hash").bounding_box()
    assert box["x"] + box["width"] <= PHONE["width"]


def test_record_texts_flow_in_their_row_with_a_toggle_for_long_ones(live_server, reviewer, seed_run, browser):
    page = logged_in(browser, live_server, LAPTOP)
    page.goto(f"{live_server.url}/runs/{seed_run.run_id}/reconcile/?member=memory")
    page.wait_for_selector(".pair .text")
    overflow = page.evaluate("""Array.from(document.querySelectorAll('.pair .text, .issue .text, .amendment .text'))
        .map(el => getComputedStyle(el).overflowY)""")
    assert overflow and not {"auto", "scroll"} & set(overflow)  # no nested scroll boxes
    toggle = page.locator("button.expand-text").first
    assert toggle.is_visible(), "no record text is long enough to be clamped: the seed has long ones"
    text = toggle.locator("xpath=preceding-sibling::*[1]")
    clamped = text.evaluate("el => el.clientHeight")
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true" and toggle.inner_text() == "Show less"
    assert text.evaluate("el => el.clientHeight") > clamped
    page.screenshot(path="/tmp/e14-reconcile-laptop.png")


def test_the_result_page_has_a_table_of_contents_whose_anchors_exist(live_server, reviewer, final_run, browser):
    page = logged_in(browser, live_server, LAPTOP)
    page.goto(f"{live_server.url}/runs/{final_run.run_id}/result/")
    links = page.locator("nav.toc li:not(.toc-summary) a")  # the summary sits above the result's text
    assert links.count() >= 5
    anchors = [href[1:] for href in links.evaluate_all("els => els.map(a => a.getAttribute('href'))")]
    assert all(page.locator(f"[id='{anchor}']").count() == 1 for anchor in anchors)
    headings = page.evaluate("Array.from(document.querySelectorAll('.result-body > :is(h1,h2,h3)')).map(h => h.id)")
    assert headings == anchors  # every section heading of levels 1-3, in order
    # A heading inside a quotation (the memory report quotes a `# …` code comment) is no section.
    quoted = page.evaluate("Array.from(document.querySelectorAll('.result-body :is(blockquote, li) :is(h1,h2,h3)'))"
                           ".map(h => h.id)")
    assert quoted and not set(quoted) & set(anchors)
    links.nth(3).click()
    assert page.evaluate("location.hash") == f"#{anchors[3]}"
    assert page.locator(f"[id='{anchors[3]}']").evaluate("el => el.getBoundingClientRect().top") < 100
    page.screenshot(path="/tmp/e14-result-laptop.png", timeout=60_000)
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/runs/{final_run.run_id}/result/")
    assert_no_sideways_scroll(page, "result-390", full_page=False)  # the whole result is thousands of px tall


def test_the_audit_timeline_lists_changed_fields_and_links_land_on_the_row(live_server, reviewer, seed_run, browser):
    mapping = Mapping.objects.filter(run=seed_run, state="proposed", source_record__isnull=False).first()
    services.decide_mapping(mapping=mapping, decision="accept", rationale="same route", actor=REVIEWER,
                            expected_version=mapping.version)
    connection.close()
    page = logged_in(browser, live_server, LAPTOP)
    page.goto(f"{live_server.url}/runs/{seed_run.run_id}/audit/?action=mapping.accepted")
    row = page.locator("table.audit tbody tr").first
    state = row.locator("ul.changes li", has=page.locator(".field", has_text="state")).first
    assert state.locator("del").inner_text() == "proposed" and state.locator("ins").inner_text() == "accepted"
    assert row.locator("ul.changes .field", has_text="rationale").count() == 1
    page.screenshot(path="/tmp/e14-audit-laptop.png")
    # The mapping's link lands on its row of the reconciliation page.
    row.locator("td[data-label=Object] a").click()
    page.wait_for_load_state()
    assert page.evaluate("location.hash") == f"#pair-{mapping.pk}"
    assert page.locator(f"#pair-{mapping.pk}").is_visible()

    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/runs/{seed_run.run_id}/audit/")
    assert_no_sideways_scroll(page, "audit-390")
    # An upload's link lands on the member's row of the run page.
    page.locator("tr", has=page.locator("span.action[title=\"member.uploaded\"]")).first.locator("td[data-label=Object] a").click()
    page.wait_for_selector("#member-result, #member-memory")
    assert page.evaluate("location.hash").startswith("#member-")
    assert page.locator(page.evaluate("location.hash")).is_visible()

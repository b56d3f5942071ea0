"""The reconciliation page in a real browser: keyboard, htmx swaps, counters, the 409 message.

Drives Debian's Chromium through Playwright against pytest-django's live server.
"""

import pytest
from django.db import connection

from records.services import ingest_member_report
from reconcile import services
from reconcile.models import IssueDecision, Mapping
from reviews.audit import Actor
from tests.conftest import seed_bytes
from tests.reconcile.page_factories import amendments, make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


AGENT = Actor("token:agent-1")
OTHER_REVIEWER = Actor("user:reviewer-2")
SCREENSHOT = "/tmp/reconcile.png"
CONTROLS_SCREENSHOT = "/tmp/reconcile-controls.png"
AMENDMENTS_SCREENSHOT = "/tmp/reconcile-amendments.png"


@pytest.fixture(autouse=True)
def _orm_beside_playwright(monkeypatch):
    """Playwright's sync API keeps an event loop in this thread; the ORM calls the test makes
    between browser steps are still plain synchronous calls, one at a time."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def seed_run(run_factory):
    """Seed 000 as the imported result and seed 002 as the memory member, through the pipeline."""
    run = run_factory(run_id="AAS-2026-09-25-supermemory-02")
    for role, seed in (("result", "000"), ("memory", "002")):
        ingest_member_report(run=run, role=role, filename=f"{role}.txt", content=seed_bytes(seed), actor=AGENT)
    run.refresh_from_db()
    assert Mapping.objects.filter(run=run, source_record__isnull=False, state="proposed").exists()
    assert IssueDecision.objects.filter(run=run, state="proposed").exists()
    # Django keeps connections per context; Playwright's sync API runs the test in another one, so
    # the connection opened here would outlive the test and block the test database's teardown.
    connection.close()
    return run


def count(page, name: str) -> int:
    return int(page.locator(f'[data-count="{name}"]').inner_text())


def test_a_reviewer_decides_with_keyboard_and_mouse_without_reloading(live_server, reviewer, seed_run, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(10_000)
    url = f"/runs/{seed_run.run_id}/reconcile/?member=memory"

    # Log in through the form; `next` brings the reviewer to the page.
    page.goto(f"{live_server.url}/login/?next={url}")
    page.fill("input[name=username]", reviewer.user.username)
    page.fill("input[name=password]", "pw-reviewer-1-123")
    page.click("form button[type=submit]")
    page.wait_for_url(f"**{url}")
    assert page.locator("h1").inner_text().startswith("Reconcile")
    page.evaluate("window.__marker = 1")
    mappings_left, issues_left = count(page, "mappings-left"), count(page, "issues-left")

    # Keyboard: j selects the first row, a accepts it.
    page.keyboard.press("j")
    first = page.locator("[data-shortcut-row][aria-selected=true]")
    first_id = first.get_attribute("id")
    assert first_id.startswith("pair-")
    page.keyboard.press("a")
    page.wait_for_selector(f"#{first_id} .status-accepted")
    assert count(page, "mappings-left") == mappings_left - 1
    # The selection moved on to the next open row (issue 10): a, a, r… goes down the page.
    page.wait_for_selector(f"#{first_id}[aria-selected=false]")
    second = page.locator("[data-shortcut-row][aria-selected=true]")
    second_id = second.get_attribute("id")
    assert second_id != first_id and second.locator('button[data-decision="accept"]').count() == 1

    # r asks for a rationale, Enter sends the rejection.
    page.keyboard.press("r")
    rationale = page.locator(f"#{second_id} [data-rationale]")
    assert rationale.evaluate("el => el === document.activeElement")
    rationale.type("a different record")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#{second_id} .status-rejected")
    assert count(page, "mappings-left") == mappings_left - 2

    # ? shows the shortcut help, ? again hides it.
    page.keyboard.press("?")
    assert page.locator("#shortcut-help").is_visible()
    page.keyboard.press("?")
    assert not page.locator("#shortcut-help").is_visible()

    # Mouse: accept the first integration issue.
    issue = page.locator("#issues article.state-proposed").first
    issue_id = issue.get_attribute("id")
    issue.locator('button[data-decision="accept"]').click()
    page.wait_for_selector(f"#{issue_id} .status-accepted")
    assert count(page, "issues-left") == issues_left - 1

    # Another reviewer changes an open row underneath; accepting it shows the 409 message and the new state.
    stale_row = page.locator("#pair-table article.state-proposed").first
    stale_id = stale_row.get_attribute("id")
    mapping = Mapping.objects.get(pk=int(stale_id.removeprefix("pair-")))
    services.decide_mapping(mapping=mapping, decision="reject", rationale="checked the code: not the same",
                            actor=OTHER_REVIEWER, expected_version=mapping.version)
    stale_row.locator('button[data-decision="accept"]').click()
    page.wait_for_selector(f"#{stale_id} .row-message.stale")
    assert "This item changed since the page showed it" in page.locator(f"#{stale_id}").inner_text()
    assert page.locator(f"#{stale_id} .status-rejected").count() == 1
    mapping.refresh_from_db()
    assert mapping.state == "rejected" and mapping.decided_by == "user:reviewer-2"

    # Propose another mapping from a record's row: the form opens in place, and the new mapping
    # appears among the record's rows with the counters updated.
    group = page.locator("#pair-table .record-rows").nth(3)
    group_id = group.get_attribute("id")
    rows_before, mappings_left = group.locator("article").count(), count(page, "mappings-left")
    group.locator("a.row-action", has_text="Propose").first.click()
    form = page.locator(f"#{group_id} form.propose-form")
    form.wait_for()
    form.locator("select[name=relation]").select_option("no-counterpart")
    form.locator("button[type=submit]").click()
    page.wait_for_selector(f"#{group_id} .row-message.ok")
    assert page.locator(f"#{group_id} article").count() == rows_before + 1
    assert "Proposed:" in page.locator(f"#{group_id}").inner_text()
    assert count(page, "mappings-left") == mappings_left + 1
    proposed = Mapping.objects.get(run=seed_run, relation="no-counterpart", origin="agent")
    assert proposed.proposed_by == "user:reviewer-1"

    # A refused proposal comes back as a 400 into the same rows: the form stays open with the message.
    other = page.locator("#pair-table .record-rows").nth(5)
    other_id = other.get_attribute("id")
    other.locator("a.row-action", has_text="Propose").first.click()
    form = page.locator(f"#{other_id} form.propose-form")
    form.wait_for()
    form.locator("input[name=target]").fill("RT-NOPE-1")
    form.locator("button[type=submit]").click()
    page.wait_for_selector(f"#{other_id} .row-message.error")
    assert page.locator(f"#{other_id} form.propose-form input[name=target]").input_value() == "RT-NOPE-1"

    # Open a canonical record's rejection form too, for the screenshot of the new controls.
    page.locator("#pair-table .side.canonical a.row-action").first.click()
    page.wait_for_selector("#pair-table form.reject-form")

    assert page.evaluate("window.__marker") == 1  # every decision was an htmx swap, no reload
    page.locator(f"#{group_id}").scroll_into_view_if_needed()
    page.wait_for_timeout(300)  # headless Chromium paints a swapped-in scroll box a moment later
    page.screenshot(path=CONTROLS_SCREENSHOT)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=SCREENSHOT)


def test_a_reviewer_carries_an_unresolved_conflict_with_the_keyboard(live_server, reviewer, seed_run, browser):
    conflict, value = amendments(make_member(seed_run, "reconciliation"), [
        ("unresolved-conflict", "RT-RTE-1 and MEM-RTE-engine-dreaming disagree on <when> dreaming runs."),
        ("amendment", "RTE-4's summary is narrowed to inspected producers."),
    ])
    connection.close()
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(10_000)
    page.context.add_cookies([_session_cookie(live_server, reviewer)])
    page.goto(f"{live_server.url}/runs/{seed_run.run_id}/reconcile/?member=memory")
    assert count(page, "amendments-left") == 2
    assert "disagree on <when> dreaming runs." in page.locator(f"#amendment-{conflict.pk}").inner_text()

    # Click selects the row; c asks for a rationale; Enter carries it into the Limitations.
    page.locator(f"#amendment-{conflict.pk} .issue-text").click()
    page.keyboard.press("c")
    rationale = page.locator(f"#amendment-{conflict.pk} [data-rationale]")
    assert rationale.evaluate("el => el === document.activeElement")
    rationale.type("the code does not settle it")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#amendment-{conflict.pk} .status-carried")
    assert count(page, "amendments-left") == 1
    conflict.refresh_from_db()
    assert conflict.state == "carried" and conflict.rationale == "the code does not settle it"
    connection.close()

    page.evaluate("document.getElementById('amendments').scrollIntoView()")
    page.wait_for_timeout(300)
    page.screenshot(path=AMENDMENTS_SCREENSHOT)


def _session_cookie(live_server, persona) -> dict:
    """Log the persona in without the login form: a session cookie for the live server."""
    from django.test import Client

    client = Client()
    client.force_login(persona.user)
    return {"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}

"""The reconciliation page in Chromium at 390 and 1440 px (issue 22): the column header is one line,
record texts are rendered Markdown, and the bulk accept shows its preview before it acts and is undone
in one step. That no row is covered is tests/pages/test_layout_browser.py's. Screenshots are kept in
the test's tmp dir."""

import pytest
from django.db import connection

from reconcile import services
from reconcile.models import Mapping
from records.services import ingest_member_report
from reviews.audit import Actor
from tests.conftest import seed_bytes
from tests.pages.test_reading_browser import logged_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AGENT = Actor("token:agent-1")


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
def test_the_column_header_is_one_line_and_record_texts_are_rendered(live_server, reviewer, seed_run,
                                                                     browser, width, tmp_path):
    page = logged_in(browser, live_server, {"width": width, "height": 844})
    page.goto(f"{live_server.url}/runs/{seed_run.run_id}/reconcile/")
    page.wait_for_selector("#pair-table .pair:not(.pair-head)")
    header = page.eval_on_selector(".pair-head", "e => e.getBoundingClientRect().height")
    assert header < 40, f"the column header is {header} px tall"
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


def test_a_confirmed_bulk_accept_is_undone_in_one_step_restoring_exactly_those_decisions(
        live_server, reviewer, seed_run, browser, tmp_path):
    by_hand = Mapping.objects.filter(run=seed_run, origin="suggested", score__gte=0.9).order_by("pk").first()
    services.decide_mapping(mapping=by_hand, decision="accept", rationale="read it", actor=Actor("user:reviewer-1"),
                            expected_version=by_hand.version)
    before = {m.pk: (m.state, m.version) for m in Mapping.objects.filter(run=seed_run)}
    connection.close()
    page = logged_in(browser, live_server, {"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/runs/{seed_run.run_id}/reconcile/")
    page.fill(".bulk input[name=min_score]", "0.9")
    page.click(".bulk button[type=submit]")
    page.wait_for_selector("form.bulk-preview")
    listed = [int(pk) for pk in page.locator("form.bulk-preview input[name=mapping]").evaluate_all(
        "els => els.map(e => e.value)")]
    assert listed and by_hand.pk not in listed  # decided already: not the bulk accept's to take or give back
    page.screenshot(path=str(tmp_path / "bulk-preview.png"))
    page.click("form.bulk-preview button[type=submit]")
    page.wait_for_selector("form.bulk-undo")
    assert f"Accepted {len(listed)} suggestion" in page.inner_text(".messages")
    assert set(Mapping.objects.filter(run=seed_run, state="accepted").values_list("pk", flat=True)) == {
        by_hand.pk, *listed}
    connection.close()
    page.screenshot(path=str(tmp_path / "bulk-accepted.png"))

    page.click("form.bulk-undo button[type=submit]")
    page.wait_for_selector(".messages li")
    assert f"Undone: reopened {len(listed)} suggestion" in page.inner_text(".messages")
    assert page.locator("form.bulk-undo").count() == 0
    after = {m.pk: (m.state, m.version) for m in Mapping.objects.filter(run=seed_run)}
    assert {pk: after[pk][0] for pk in listed} == {pk: before[pk][0] for pk in listed}  # open again
    assert {pk: v for pk, v in after.items() if pk not in listed} == {
        pk: v for pk, v in before.items() if pk not in listed}  # the decision by hand and the rest untouched
    connection.close()
    page.screenshot(path=str(tmp_path / "bulk-undone.png"))
    print(tmp_path)

"""Send it back in a real browser (issue 19): the reviewer raises a request from a record row, the agent
(its own token, over the API) lists and answers it with a corrected version, the reviewer opens the diff
and resolves it; then nothing about corrections blocks approval."""
from __future__ import annotations

import pytest
from django.db import connection

from reconcile.blockers import run_standing
from reconcile.models import CorrectionRequest
from records.services import ingest_member_report
from reviews.audit import Actor
from tests.conftest import seed_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AGENT = Actor("token:agent-1")
SCREENSHOT = "/tmp/corrections.png"


@pytest.fixture(autouse=True)
def _orm_beside_playwright(monkeypatch):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def seed_run(run_factory, agent):
    run = run_factory(run_id="AAS-2026-09-25-supermemory-02")
    for role, seed in (("result", "000"), ("memory", "002")):
        ingest_member_report(run=run, role=role, filename=f"{role}.txt", content=seed_bytes(seed), actor=AGENT)
    connection.close()
    return run


def test_a_request_goes_from_a_row_to_the_agent_and_back(live_server, reviewer, agent, seed_run, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(10_000)
    url = f"/runs/{seed_run.run_id}/reconcile/?member=memory"
    page.goto(f"{live_server.url}/login/?next={url}")
    page.fill("input[name=username]", reviewer.user.username)
    page.fill("input[name=password]", "pw-reviewer-1-123")
    page.click("form button[type=submit]")
    page.wait_for_url(f"**{url}")

    # j selects the first row; s opens "Request a correction" for its record, prefilled.
    page.keyboard.press("j")
    record = page.locator("[data-shortcut-row][aria-selected=true] .id-line code").first.inner_text()
    page.keyboard.press("s")
    page.wait_for_url("**/corrections/**")
    assert page.locator("input[name=record]").input_value() == record
    page.fill("textarea[name=text]", "The label says store; the body describes a cache.")
    page.click("#raise button[type=submit]")
    page.wait_for_selector(".correction.state-open")

    # The agent lists what it must answer and uploads a corrected version with its answer.
    listed = agent.get(f"/api/runs/{seed_run.run_id}/corrections/?addressed_to_me=1&state=open").json()["results"]
    assert [(r["record"], r["state"]) for r in listed] == [(record, "open")]
    content = seed_bytes("002") + b"\nThe cache keeps documents for an hour.\n"
    reply = agent.post(f"/api/runs/{seed_run.run_id}/members/",
                       {"role": "memory", "content": content.decode(), "answers": "- corrected: body says cache"},
                       format="json")
    assert reply.status_code == 201, reply.json()

    # The reviewer sees the answer, opens the diff, comes back and resolves.
    page.reload()
    page.wait_for_selector(".correction.state-answered")
    assert "body says cache" in page.locator(".correction .answer").inner_text()
    page.click("text=What changed, v1 → v2")
    page.wait_for_selector("h1:has-text('What changed in the memory report')")
    page.screenshot(path=SCREENSHOT, full_page=True)
    page.go_back()
    page.click(".correction button:has-text('Resolve')")
    page.wait_for_selector(".correction.state-resolved")
    page.screenshot(path="/tmp/corrections-list.png", full_page=True)
    assert CorrectionRequest.objects.get(run=seed_run).state == "resolved"
    seed_run.refresh_from_db()
    assert not {b.code for b in run_standing(seed_run).blockers} & {"correction_open", "correction_answered"}
    connection.close()

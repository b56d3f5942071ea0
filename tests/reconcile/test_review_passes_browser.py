"""Issue 21's "Done when" in a real browser: two reviewers decide one corpus run blind, in two browser
contexts, with three deliberate disagreements; an adjudicator settles the three conflicts; the run is
approved and its result names the passes, the adjudications and the agreement.

Each reviewer logs in through the login page. The disagreements, every decision the blindness checks
read, both submissions and every adjudication go through the browser; the rest of each pass is
decided through the services as the deciding reviewer (`Actor.for_user`), to keep the test short.
Reviewer B's page and B's API replies (with B's token, over HTTP against the live server) are read
before A decides and again after, and must be the same: counters, row states, blockers, the trail.
Finalization runs on commit, its task eagerly in the live server's thread (as in test_browser_approval).
"""
from __future__ import annotations

import json
import shutil
from urllib.parse import quote

import pytest
import requests
from django.contrib.auth import get_user_model
from django.db import connection

from reconcile import services
from reconcile.models import AmendmentDecision, Conflict, IssueDecision, ReviewPass
from results.models import Result
from reviews.audit import Actor
from reviews.models import Run
from reviews.services import issue_token, set_reviews_required
from tests.reconcile.test_browser import _orm_beside_playwright, count  # noqa: F401
from tests.reconcile.test_coherence_properties import build_corpus_run
from tests.reconcile.test_review_passes import _decide_all

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)

VIEWPORT = {"width": 1440, "height": 1000}
API_READS = ("mappings", "blockers", "passes", "audit")
STATE_AFTER = {"accept": "accepted", "reject": "rejected", "carry": "carried"}


def _person(name: str, *, adjudicate: bool = False) -> dict:
    _, key = issue_token(name=name, role="reviewer", password=f"pw-{name}-123", adjudicate=adjudicate,
                         actor=Actor.command("test"))
    return {"name": name, "password": f"pw-{name}-123", "token": key,
            "user": get_user_model().objects.get(username=name)}


def _logged_in(browser, live_server, person: dict, url: str):
    """A browser context of its own for the person, logged in through the login form, on `url`."""
    page = browser.new_context(viewport=VIEWPORT).new_page()
    page.set_default_timeout(15_000)
    page.goto(f"{live_server.url}/login/?next={quote(url)}")
    page.fill("input[name=username]", person["name"])
    page.fill("input[name=password]", person["password"])
    page.click("form button[type=submit]")
    page.wait_for_url(f"**{url}")
    return page


def _api(live_server, person: dict, run_id: str, what: str):
    response = requests.get(f"{live_server.url}/api/runs/{run_id}/{what}/",
                            headers={"Authorization": f"Token {person['token']}"}, timeout=30)
    assert response.status_code == 200, (what, response.status_code, response.text[:300])
    return response.json()


def _rows(page) -> dict[str, str]:
    """Every decision row of the page by its id, with its class (which carries its state)."""
    return {row.get_attribute("id"): row.get_attribute("class")
            for row in page.locator("article[data-shortcut-row]").all()}


def _counters(page) -> dict[str, int]:
    return {name: count(page, name) for name in ("mappings-left", "issues-left", "blockers")}


def _what_b_sees(page, live_server, b: dict, run_id: str) -> dict:
    page.reload()
    seen = {"rows": _rows(page), "counters": _counters(page),
            "text": page.locator("#pair-table").inner_text() + page.locator("#issues").inner_text()}
    for what in API_READS:
        seen[what] = _api(live_server, b, run_id, what)
    return seen


def _decide_row(page, row_id: str, decision: str, rationale: str = "") -> None:
    row = page.locator(f"#{row_id}")
    if rationale:
        row.locator("[data-rationale]").fill(rationale)
    row.locator(f"button[data-decision={decision}]").click()
    page.wait_for_selector(f"#{row_id} .status-{STATE_AFTER[decision]}")


def _rest_of_the_pass(person: dict) -> None:
    """Everything still open in the person's pass, decided through the services as they would."""
    _decide_all(Actor.for_user(person["user"]))
    connection.close()


def _trail_of(audit_reply) -> list:
    return audit_reply["results"] if isinstance(audit_reply, dict) and "results" in audit_reply else audit_reply


def test_two_blind_reviews_three_conflicts_an_adjudicator_and_the_result(live_server, run_factory, browser,
                                                                          tmp_path):
    run = build_corpus_run(run_factory)
    set_reviews_required(run=run, count=2, actor=Actor.command("test"))
    a, b, judge = _person("alice"), _person("bob"), _person("judith", adjudicate=True)
    # The three deliberate disagreements: A rejects two integration issues and carries an amendment
    # that B accepts (each an item of its own: nothing else follows from it).
    issues = list(services.current_issue_decisions(run).order_by("pk").select_related("issue")[:2])
    amendment = (AmendmentDecision.objects.filter(run=run, mapping__isnull=True).order_by("pk")
                 .select_related("member_version__member").first())
    issue_rows = [f"issue-{d.issue.pk}" for d in issues]
    amendment_row, amendment_member = f"amendment-{amendment.pk}", amendment.member_version.member.role
    run_id = run.run_id
    connection.close()
    memory = f"/runs/{run_id}/reconcile/?member=memory&issues=all"
    with_amendment = f"/runs/{run_id}/reconcile/?member={amendment_member}&issues=all"

    page_b = _logged_in(browser, live_server, b, memory)
    before = _what_b_sees(page_b, live_server, b, run_id)
    assert all("state-proposed" in css for row, css in before["rows"].items() if row.startswith("issue-"))

    # A decides in the browser: the two issues rejected, a mapping accepted, the amendment carried.
    page_a = _logged_in(browser, live_server, a, memory)
    assert "you see only your own decisions" in page_a.locator("#review-pass").inner_text()
    for row_id in issue_rows:
        _decide_row(page_a, row_id, "reject", "not an integration issue: the runtime already covers it")
    first_pair = page_a.locator("#pair-table article.state-proposed").first.get_attribute("id")
    _decide_row(page_a, first_pair, "accept")
    assert count(page_a, "issues-left") == before["counters"]["issues-left"] - 2
    page_a.goto(f"{live_server.url}{with_amendment}")
    _decide_row(page_a, amendment_row, "carry", "the code does not settle it: carry it as it stands")
    assert ReviewPass.objects.get(run__run_id=run_id, reviewer=a["user"]).entries.exists()
    assert not IssueDecision.objects.filter(run__run_id=run_id).exclude(state="proposed").exists()  # blind
    connection.close()

    # B's page and B's API replies carry nothing of it: same rows, states, counters, blockers, trail.
    after = _what_b_sees(page_b, live_server, b, run_id)
    assert after["rows"] == before["rows"]
    assert after["counters"] == before["counters"]
    assert after["text"] == before["text"]
    assert "not an integration issue" not in page_b.content() and "alice" not in after["text"]
    assert after["mappings"] == before["mappings"]
    assert after["blockers"] == before["blockers"]
    passes = after["passes"]["passes"]
    assert [(p["reviewer"], p["mine"], p["decided"], p["decisions"]) for p in passes] == [("alice", False, None, None)]
    trail = json.dumps(after["audit"])
    assert "not an integration issue" not in trail and "carry it as it stands" not in trail
    for event in _trail_of(after["audit"]):
        if event.get("action") == "pass.decided":
            # Listed (the chain stays whole), its content withheld from B.
            assert set(event.get("after") or {}) <= {"withheld"} and set(event.get("before") or {}) <= {"withheld"}
    page_b.screenshot(path=str(tmp_path / "b-before-submitting.png"), full_page=True)

    # B decides the three disagreements the other way, in the browser; both finish their passes.
    page_b.reload()
    for row_id in issue_rows:
        _decide_row(page_b, row_id, "accept")
    page_b.goto(f"{live_server.url}{with_amendment}")
    _decide_row(page_b, amendment_row, "accept")
    _rest_of_the_pass(a)
    _rest_of_the_pass(b)

    # A submits in the browser; B still sees none of A's pass, then submits and lands on the conflicts.
    page_a.goto(f"{live_server.url}{memory}")
    page_a.screenshot(path=str(tmp_path / "a-before-submitting.png"))
    page_a.locator("#review-pass button", has_text="Submit my review").click()
    page_a.wait_for_selector("text=Your review (pass 1) is submitted; 1 more to come.")
    assert _api(live_server, b, run_id, "passes")["passes"][0]["decisions"] is None
    page_b.goto(f"{live_server.url}{memory}")
    assert "Submit my review" in page_b.locator("#review-pass").inner_text()
    page_b.locator("#review-pass button", has_text="Submit my review").click()
    page_b.wait_for_url(f"**/runs/{run_id}/conflicts/")
    assert "You wrote one of these reviews" in page_b.content()
    assert page_b.locator("form.settle-form").count() == 0

    conflicts = list(Conflict.objects.filter(run__run_id=run_id).order_by("pk"))
    assert sorted(c.model for c in conflicts) == ["amendment", "issue", "issue"]
    assert all([d["reviewer"] for d in c.decisions] == ["alice", "bob"] for c in conflicts)
    connection.close()

    # The adjudicator settles the three in the browser, each pass's decision and rationale side by side.
    page_j = _logged_in(browser, live_server, judge, f"/runs/{run_id}/conflicts/")
    sections = page_j.locator("section.conflict")
    assert sections.count() == 3
    first = page_j.locator(f"#conflict-{conflicts[0].pk}")
    assert "Pass 1 · alice" in first.inner_text() and "Pass 2 · bob" in first.inner_text()
    assert "not an integration issue" in page_j.content()
    assert "Cohen's κ" in page_j.locator("table.agreement").inner_text()
    page_j.screenshot(path=str(tmp_path / "adjudication.png"), full_page=True)
    for conflict in conflicts:
        section = page_j.locator(f"#conflict-{conflict.pk}")
        section.locator("input[name=decision][value=accept]").check()
        section.locator("textarea[name=rationale]").fill("bob is right: the report shows it")
        section.locator("button[type=submit]", has_text="Settle").click()
        page_j.wait_for_selector(f"#conflict-{conflict.pk} .status-settled")
    assert page_j.locator("form.settle-form").count() == 0
    assert not Conflict.objects.filter(run__run_id=run_id, state=Conflict.State.OPEN).exists()
    connection.close()
    page_j.screenshot(path=str(tmp_path / "adjudication-settled.png"), full_page=True)

    # The run page's panel shows the passes and their agreement.
    page_j.goto(f"{live_server.url}/runs/{run_id}/")
    reviews_panel = page_j.locator("#independent-reviews")
    reviews_panel.locator("table.agreement").wait_for()
    assert "3 conflicts, all settled" in reviews_panel.inner_text()
    reviews_panel.screenshot(path=str(tmp_path / "run-page-reviews.png"))

    # Nothing blocks approval: the adjudicator approves with a note, and the run is finalized.
    page_j.goto(f"{live_server.url}{memory}")
    panel = page_j.locator("#blockers")
    assert "Nothing blocks approval." in panel.inner_text()
    panel.locator("textarea[name=note]").fill("Two independent reviews; three conflicts settled on the evidence.")
    panel.locator("button[type=submit]").click()
    page_j.wait_for_selector("#final-notice")
    run = Run.objects.get(run_id=run_id)
    assert run.status == Run.Status.FINAL, run.status_reason
    result = Result.objects.get(run=run)
    connection.close()

    # The result names the passes, the adjudications and kappa.
    page_j.goto(f"{live_server.url}/runs/{run_id}/result/")
    assert result.sha256 in page_j.content()
    text = page_j.locator("main").inner_text()
    page_j.screenshot(path=str(tmp_path / "result.png"))
    assert "alice" in text and "bob" in text, "the result names every pass's reviewer"
    assert "judith" in text and "bob is right: the report shows it" in text, "the result names the adjudications"
    assert "kappa" in text.lower() or "κ" in text, "the result shows Cohen's kappa"

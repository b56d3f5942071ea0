"""A newcomer's walk (issue 22, "done when"): the demo reviewer logs in, reconciles a demo run that
`load_demo` loaded, through the pages alone, approves it with a note, waits for the real worker to
finalize it and reads the result; no page on the way shows a database ID or a raw blocker or refusal
code in its visible text (codes may sit in title= tooltips, which innerText leaves out). Screenshots
of every page visited are kept in the test's tmp dir."""
import io
import re

import pytest
from django.core.management import call_command
from django.db import connection
from playwright.sync_api import expect

from reconcile import dispositions
from reconcile import errors
from reviews.demo import DEMO_PASSWORD, DEMO_REVIEWER
from reviews.models import Run
from tests.conftest import SHARED, wait_until
from tests.pages.test_reading_browser import _orm_beside_playwright  # noqa: F401 — fixture

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

RUN = "AAS-2026-10-02-dynamic-cheatsheet-01"
# A database ID as pages used to leak them: "mapping 47", "already accepted as mapping 35", "#35", "id=12".
DATABASE_ID = re.compile(r"\b(?:mappings?|decisions?|requests?|amendment decision|issue decision|pk)[ \t]+#?\d+\b"
                         r"|(?<![\w&])#\d+\b|\bid\s*=\s*\d*", re.IGNORECASE)
# The blocker and refusal codes (those with an underscore: "conflict" is also a word).
CODES = sorted({*dispositions.BLOCKER_CODES,
                *(cls.code for cls in vars(errors).values()
                  if isinstance(cls, type) and issubclass(cls, Exception) and isinstance(getattr(cls, "code", None), str))}
               - {"conflict"})
# The page's text with every <details> open, less code blocks and quotations: a member's report quotes
# source code verbatim (`input_txt="Question #2: …"`), which is no page naming an object.
VISIBLE_TEXT = """() => { document.querySelectorAll('details').forEach(d => d.open = true);
  const blocks = [...document.querySelectorAll('pre, blockquote')]; blocks.forEach(b => b.hidden = true);
  const text = document.body.innerText; blocks.forEach(b => b.hidden = false); return text; }"""


class Walk:
    """The pages the reviewer sees, each read (every <details> opened) and kept as a screenshot."""

    def __init__(self, page, tmp_path):
        self.page, self.tmp_path, self.leaks, self.seen = page, tmp_path, [], 0

    def read(self, where: str) -> str:
        self.page.wait_for_load_state("networkidle")
        text = self.page.evaluate(VISIBLE_TEXT)
        for match in DATABASE_ID.finditer(text):
            self.leaks.append((where, match.group(0), text[max(0, match.start() - 60):match.end() + 40]))
        for code in CODES:
            for found in re.finditer(rf"\b{code}\b", text):
                self.leaks.append((where, code, text[max(0, found.start() - 60):found.end() + 40]))
        self.seen += 1
        self.page.screenshot(path=str(self.tmp_path / f"{self.seen:02d}-{re.sub(r'[^a-z0-9]+', '-', where)}.png"))
        return text


def rows(page, region: str, record: str, relation: str):
    return page.locator(f"{region} article", has_text=record).filter(
        has=page.locator(".relation-name", has_text=re.compile(rf"^{relation}$")))


def decide_every_open(page, walk: Walk, where: str) -> None:
    """Accept each open mapping and issue of the member shown, carry each amendment (a supersession is
    decided with its mapping), one htmx swap at a time."""
    for region in ("#pair-table", "#issues"):
        for row_id in page.locator(f"{region} article.state-proposed").evaluate_all("els => els.map(e => e.id)"):
            page.locator(f"#{row_id} button[data-decision=accept]").click()
            expect(page.locator(f"#{row_id} .status-accepted")).to_be_visible()
    for row_id in page.locator("#amendments article.state-proposed:not(:has(.supersession))").evaluate_all(
            "els => els.map(e => e.id)"):
        page.locator(f"#{row_id} [data-rationale]").fill("the Part-of value stays open")
        page.locator(f"#{row_id} button[data-decision=carry]").click()
        expect(page.locator(f"#{row_id} .status-carried")).to_be_visible()
    walk.read(where)


def test_the_demo_reviewer_takes_a_demo_run_from_login_to_its_result_reading_names_not_ids_or_codes(
        live_server, worker, browser, tmp_path, monkeypatch):
    monkeypatch.setenv("SHARED_DIR", str(SHARED))
    call_command("load_demo", stdout=io.StringIO())
    wait_until(lambda: Run.objects.get(run_id=RUN).status == Run.Status.IN_REVIEW, f"{RUN} in review", timeout=180)
    connection.close()
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(20_000)
    walk = Walk(page, tmp_path)

    page.goto(f"{live_server.url}/")
    walk.read("login")
    page.fill("input[name=username]", DEMO_REVIEWER)
    page.fill("input[name=password]", DEMO_PASSWORD)
    page.click("form button[type=submit]")
    walk.read("runs list")
    page.get_by_role("link", name=RUN, exact=True).first.click()
    expect(page.locator("h1")).to_contain_text(RUN)
    walk.read("run page")
    page.get_by_role("link", name="Reconcile", exact=True).first.click()
    walk.read("reconciliation")

    # The newcomer's first try: EPI-OBJ-4 is superseded by MEM-OBJ-2, which is not in the shared set
    # yet; the refusal says so in record names.
    page.click(".member-picker a:has-text('epistemic')")
    supersedes = rows(page, "#pair-table", "EPI-OBJ-4", "supersedes")
    supersedes.locator("button[data-decision=accept]").click()
    expect(supersedes.locator(".row-message")).to_contain_text("MEM-OBJ-2")
    walk.read("a refused accept")

    page.click(".member-picker a:has-text('memory')")
    decide_every_open(page, walk, "memory decided")
    page.click(".member-picker a:has-text('epistemic')")
    supersedes.locator("button[data-decision=accept]").click()
    expect(supersedes.locator(".status-accepted")).to_be_visible()
    decide_every_open(page, walk, "epistemic decided")
    panel = page.locator("#blockers")
    expect(panel).to_contain_text("Nothing blocks approval.")

    panel.locator("textarea[name=note]").fill("Read each mapping against the runtime records in the browser.")
    panel.locator("button[type=submit]").click()
    walk.read("approved")

    def finalized():  # the reviewer reloads until the worker has rendered the result
        page.reload()
        return page.locator("#final-notice").count()

    wait_until(finalized, "the final notice", timeout=120, interval=1.0)
    walk.read("final")
    page.locator("#final-notice a", has_text="The result").click()
    expect(page.locator("#result-summary")).to_be_visible()
    walk.read("result")
    page.get_by_role("link", name=RUN, exact=True).first.click()
    walk.read("run page, final")
    page.get_by_role("link", name="Audit", exact=True).first.click()
    walk.read("audit timeline")
    print(tmp_path)
    assert walk.leaks == [], "\n".join(f"{where}: {leak!r} in …{context}…" for where, leak, context in walk.leaks)

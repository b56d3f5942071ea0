"""HTML and script in every field are shown as text: Chromium runs none of it (DESIGN §9).

A run whose title, system, report labels, bodies, fields, integration issues, file name,
decision rationale, canonical label and approval note all carry markup is opened in a real
browser. Each payload would set `window.__pwned` or open a dialog if it ran; a CSP violation
would mean an injected script reached the page and was only stopped by the policy. None may happen,
and the payload text must be visible as written.
"""
from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from reconcile import services
from results.services import approve_run, finalize_run
from reconcile.models import CanonicalRecord, IssueDecision, Mapping
from records import services as records_services
from reviews.audit import Actor
from tests.reconcile.factories import RUNTIME_SLUG, WORKER
from tests.results.test_approval import CHEATSHEET, CHEATSHEET_FIELDS, corpus_files, mark_validated
from tests.results.test_approval import reconcile_rows, store_members

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


REVIEWER = Actor("user:reviewer-1")
AGENT = Actor("token:agent-1")

PAYLOADS = [
    "<script>window.__pwned='script'</script>",
    "<img src=x onerror=\"window.__pwned='img'\">",
    "\"><svg onload=\"window.__pwned='svg'\">",
    "<iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
    "[click](javascript:window.__pwned='link')",
    "`<b>code</b>` <a href=\"javascript:alert(1)\">a</a>",
]
ALL = " ".join(PAYLOADS)

HOSTILE_MEMORY = f"""---
type: agentic-system-analyses/types/agentic-system-memory-report.md
---

# Memory report {PAYLOADS[0]}

## Shared records

### Operative objects

#### MEM-OBJ-memory-facts — Facts {PAYLOADS[0]} {PAYLOADS[1]}

- Identity: {PAYLOADS[2]} {PAYLOADS[3]}
- Evidence: {PAYLOADS[4]} {PAYLOADS[5]}

{ALL}

#### MEM-OBJ-profile-summary — {PAYLOADS[1]}

- Identity: {PAYLOADS[0]}

### Routes

#### MEM-RTE-mcp-read — MCP read {PAYLOADS[2]}

- Immediate return: {PAYLOADS[4]}

## Integration issues

- Record overlap: MEM-RTE-mcp-read {PAYLOADS[0]} {PAYLOADS[1]}.
- Version skew: {PAYLOADS[3]} {PAYLOADS[5]}.
"""

# Runs in the page before any of its own script: records what an injected payload would do.
WATCH = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
"""


@pytest.fixture(autouse=True)
def _orm_beside_playwright(monkeypatch):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def hostile_run(run_factory):
    run = run_factory(title=f"Title {PAYLOADS[1]}", system=f"Sys {PAYLOADS[0]}")
    for role, text in (("runtime", RUNTIME_SLUG), ("memory", HOSTILE_MEMORY)):
        version, _ = records_services.ingest_member_report(run=run, role=role, filename=f"{PAYLOADS[1]}.md",
                                                           content=text.encode(), actor=AGENT)
        records_services.parse_member_version(version_pk=version.pk, actor=WORKER)
    records_services.validate_run(run=run, actor=WORKER)
    run.refresh_from_db()
    services.sync_run(run=run, actor=WORKER)
    mapping = Mapping.objects.filter(run=run, source="MEM-RTE-mcp-read").first()
    services.decide_mapping(mapping=mapping, decision="reject", rationale=f"No {ALL}", actor=REVIEWER,
                            expected_version=mapping.version)
    issue = IssueDecision.objects.filter(run=run).first()
    # Rejected: accepting an issue that names the record just left without a place would be incoherent (409).
    services.decide_issue(issue_decision=issue, decision="reject", rationale=f"Yes {ALL}", actor=REVIEWER,
                          expected_version=issue.version)
    connection.close()
    return run


@pytest.fixture
def hostile_result_run(run_factory):
    run = run_factory(**CHEATSHEET_FIELDS)
    files = corpus_files(CHEATSHEET)
    versions = store_members(run, files)
    mark_validated(run, files, warnings=1)
    reconcile_rows(run, versions)
    CanonicalRecord.objects.filter(run=run, canonical_id="OBJ-1").update(label=f"Label {ALL}")
    approve_run(run=run, note=f"Checked {ALL}", actor=REVIEWER)
    finalize_run(run=run, actor=WORKER)
    connection.close()
    return run


@pytest.fixture
def page(live_server, reviewer, browser):
    client = Client()
    client.force_login(reviewer.user)
    session = client.cookies["sessionid"].value
    context = browser.new_context()
    context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
    context.add_init_script(WATCH)
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    tab.dialogs = []
    tab.on("dialog", lambda dialog: (tab.dialogs.append(dialog.message), dialog.dismiss()))
    return tab


def assert_nothing_ran(tab, url: str) -> str:
    response = tab.goto(url)
    assert response.status == 200, url
    tab.wait_for_load_state("load")
    tab.wait_for_timeout(300)  # let any onerror/onload handler that slipped through fire
    assert tab.evaluate("window.__pwned") is None, url
    assert tab.dialogs == [], url
    assert tab.evaluate("window.__violations") == [], url
    assert tab.locator("script:not([src])").count() == 0, url
    assert tab.locator("iframe, svg[onload], img[onerror]").count() == 0, url
    assert tab.locator("a[href^='javascript:']").count() == 0, url
    return tab.locator("body").inner_text()


def test_no_payload_runs_on_the_run_member_reconciliation_and_audit_pages(live_server, page, hostile_run):
    base = f"{live_server.url}/runs/{hostile_run.run_id}"
    text = assert_nothing_ran(page, f"{base}/reconcile/?member=memory")
    assert "Facts <script>window.__pwned='script'</script>" in text
    assert "<img src=x onerror=\"window.__pwned='img'\">" in text
    for url in (f"{live_server.url}/", f"{base}/", f"{base}/members/memory/", f"{base}/audit/",
                f"{base}/reconcile/?member=memory&state=all"):
        text = assert_nothing_ran(page, url)
        assert "<script>" in text or "<img" in text, url  # shown as written


def test_no_payload_runs_on_the_result_page(live_server, page, hostile_result_run):
    text = assert_nothing_ran(page, f"{live_server.url}/runs/{hostile_result_run.run_id}/result/")
    assert "Checked <script>window.__pwned='script'</script>" in text
    assert "<iframe srcdoc=" in text


def test_the_api_docs_render_under_the_content_security_policy(live_server, page):
    """Swagger UI (drf-spectacular's split view, assets from our static files) works with scripts from self only."""
    response = page.goto(f"{live_server.url}/api/docs/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)
    assert page.locator(".swagger-ui .opblock").count() >= 25  # every operation listed
    assert page.locator("text=/api/runs/{run_id}/members/").count() >= 1
    assert page.evaluate("window.__violations") == []
    assert page.dialogs == []

"""Findings a reviewer can act on (issue 12 item 5): grouped by code with a
count and the first locations, root causes first; the runs list shows errors,
warnings and "blocked: N errors"; `?system=` matches part of the name."""
from __future__ import annotations

import pytest
from django.test import Client

from records import services
from records.finding_groups import group_findings
from records.validation import Finding
from reviews.audit import Actor
from tests.conftest import seed_bytes

ACTOR = Actor.command("test")


def finding(code, member="memory.md", line=1, severity="error", record_id=""):
    return Finding(code, severity, member, record_id, line, f"{code} message")


def test_it_puts_the_missing_register_before_the_thirty_references_to_it():
    findings = [finding("unknown-source", line=n, record_id=f"SRC-{n}") for n in range(1, 31)]
    findings.append(finding("no-source-register", severity="warning", line=0))
    findings.append(finding("missing-route-field", line=40, record_id="MEM-RTE-x"))
    groups = group_findings(findings)
    assert [(g.code, g.count) for g in groups] == [
        ("no-source-register", 1), ("missing-route-field", 1), ("unknown-source", 30)]
    assert groups[0].root_cause and not groups[2].root_cause


def test_it_keeps_the_first_locations_of_a_group_in_member_and_line_order():
    findings = [finding("unresolved-reference", member=m, line=n, record_id=f"RT-OBJ-{n}")
                for m, n in (("workflow.md", 2), ("memory.md", 9), ("memory.md", 3), ("memory.md", 5))]
    (group,) = group_findings(findings)
    assert group.count == 4
    assert [(loc.member, loc.line) for loc in group.first] == [("memory.md", 3), ("memory.md", 5), ("memory.md", 9)]
    assert [(loc.member, loc.line) for loc in group.rest] == [("workflow.md", 2)]
    assert group.members == ("memory.md", "workflow.md")


def test_it_counts_how_often_each_id_is_named_in_a_group_most_named_first():
    findings = [finding("unresolved-reference", line=n, record_id=record_id)
                for n, record_id in enumerate(["RT-OBJ-b", "RT-OBJ-a", "RT-OBJ-a", "RT-OBJ-c", "RT-OBJ-a"])]
    (group,) = group_findings(findings)
    assert group.record_ids == (("RT-OBJ-a", 3), ("RT-OBJ-b", 1), ("RT-OBJ-c", 1))


def test_it_orders_errors_before_warnings_of_the_same_tier_and_larger_groups_first():
    findings = [finding("missing-route-field", severity="warning")] + [finding("invalid-conclusion-status", line=n) for n in range(3)] \
        + [finding("empty-route-field")]
    assert [g.code for g in group_findings(findings)] == ["invalid-conclusion-status", "empty-route-field", "missing-route-field"]


# --------------------------------------------------------------------------
# Pages


@pytest.fixture
def browser(reviewer):
    client = Client()
    client.force_login(reviewer.user)
    return client


def ingest(run, role, content, capture):
    with capture(execute=True):
        services.ingest_member_report(run=run, role=role, filename=f"{role}.md", content=content, actor=ACTOR)
    run.refresh_from_db()


@pytest.mark.django_db
def test_the_run_page_groups_findings_by_code_with_counts_root_causes_first(browser, run_factory,
                                                                             django_capture_on_commit_callbacks):
    run = run_factory()
    ingest(run, "memory", seed_bytes("002"), django_capture_on_commit_callbacks)
    html = browser.get(f"/runs/{run.run_id}/").content.decode()
    section = html.split('id="findings"')[1]
    assert 'data-code="no-source-register"' in section
    assert section.index('data-code="no-source-register"') < section.index('data-code="unknown-source"')
    group = section.split('data-code="unresolved-reference"')[1].split("</details>")[0]
    assert "46 errors" in group
    assert "<bdi>RT-RTE-vercel-call</bdi> ×" in group  # IDs isolated (issue 25)
    assert group.count(f'href="/runs/{run.run_id}/members/memory/?line=') >= 3


@pytest.mark.django_db
def test_the_runs_list_shows_errors_warnings_and_blocked(browser, run_factory, django_capture_on_commit_callbacks):
    blocked = run_factory(run_id="AAS-2026-09-25-blocked-01")
    ingest(blocked, "memory", seed_bytes("002"), django_capture_on_commit_callbacks)
    clean = run_factory(run_id="AAS-2026-09-25-clean-01")
    ingest(clean, "result", seed_bytes("000"), django_capture_on_commit_callbacks)
    run_factory(run_id="AAS-2026-09-25-empty-01")
    html = browser.get("/").content.decode()

    def row(run_id):
        return html.split(f'id="run-{run_id}"')[1].split("</tr>")[0]

    errors = services.latest_validation(blocked).errors
    assert errors > 0
    assert f"blocked: {errors} errors" in row("AAS-2026-09-25-blocked-01")
    assert "blocked" not in row("AAS-2026-09-25-clean-01")
    assert f"0 errors · {services.latest_validation(clean).warnings} warnings" in row("AAS-2026-09-25-clean-01")
    assert "not validated" in row("AAS-2026-09-25-empty-01")


@pytest.mark.django_db
def test_the_runs_page_matches_part_of_the_system_name_in_any_case(browser, run_factory):
    run_factory(run_id="AAS-2026-09-25-cheat-01", system="Dynamic Cheatsheet")
    run_factory(run_id="AAS-2026-09-25-mem-01", system="Mem0")
    html = browser.get("/?system=CHEAT").content.decode()
    assert "AAS-2026-09-25-cheat-01" in html and "AAS-2026-09-25-mem-01" not in html


@pytest.mark.django_db
def test_the_runs_api_matches_part_of_the_system_name_in_any_case(agent, run_factory):
    run_factory(run_id="AAS-2026-09-25-cheat-01", system="Dynamic Cheatsheet")
    run_factory(run_id="AAS-2026-09-25-mem-01", system="Mem0")
    body = agent.get("/api/runs/?system=cheat").json()
    assert [r["run_id"] for r in body["results"]] == ["AAS-2026-09-25-cheat-01"]
    assert agent.get("/api/runs/?system=MEM0").json()["count"] == 1


def test_the_run_page_names_twenty_further_locations_and_sends_the_rest_to_the_member_pages():
    from types import SimpleNamespace

    from django.template.loader import render_to_string

    from records.finding_groups import FIRST_LOCATIONS, REST_SHOWN, shown_with_links

    findings = [finding("unknown-source", member="memory", line=n, record_id=f"SRC-{n}") for n in range(1, 61)]
    (group,) = shown_with_links(group_findings(findings), {"memory": "/runs/AAS-2026-01-01-x-01/members/memory/"})
    assert len(group.rest) == REST_SHOWN
    assert group.rest_more == 60 - FIRST_LOCATIONS - REST_SHOWN
    html = render_to_string("records/_findings.html", {
        "finding_groups": [group], "member_roles": ["memory"], "run": SimpleNamespace(run_id="AAS-2026-01-01-x-01")})
    assert "60 errors" in html
    assert f"line {FIRST_LOCATIONS + REST_SHOWN}<" in html and f"line {FIRST_LOCATIONS + REST_SHOWN + 1}<" not in html
    assert f"and {group.rest_more} more" in html
    assert 'href="/runs/AAS-2026-01-01-x-01/members/memory/#findings"' in html
    assert 'href="/api/runs/AAS-2026-01-01-x-01/validation/"' in html

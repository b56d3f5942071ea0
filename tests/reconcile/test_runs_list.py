"""The runs list (DESIGN.md §5): status, system, decision progress, filters, pagination."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reconcile.models import AmendmentDecision, IssueDecision, Mapping
from records.models import IntegrationIssue
from tests.reconcile.page_factories import amendments, build_reconcile_run, issues, make_member

pytestmark = pytest.mark.django_db


def test_it_sends_anonymous_visitors_to_login(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_it_refuses_the_runs_page_to_a_user_without_a_role(client, outsider):
    client.force_login(outsider.user)
    assert client.get("/").status_code == 403


def test_it_lists_runs_to_a_reviewer(client, reviewer, run_factory):
    run_factory(run_id="AAS-2026-09-25-supermemory-02")
    client.force_login(reviewer.user)
    response = client.get("/")
    assert response.status_code == 200
    assert b'href="/runs/AAS-2026-09-25-supermemory-02/"' in response.content
    assert b"nothing to decide yet" in response.content
    assert b"htmx-2.0.11.min.js" in response.content


def test_it_shows_decided_and_total_mappings_and_issues_per_run(client, reviewer):
    run, _ = build_reconcile_run(records=6, run_id="AAS-2026-09-25-progress-01")  # 6 mappings, 4 issues
    mappings = list(Mapping.objects.filter(run=run).order_by("pk"))
    Mapping.objects.filter(pk__in=[mappings[0].pk, mappings[1].pk]).update(state="accepted")
    Mapping.objects.filter(pk=mappings[2].pk).update(state="rejected")
    Mapping.objects.filter(pk=mappings[3].pk).update(state="stale")
    IssueDecision.objects.filter(pk=IssueDecision.objects.filter(run=run).order_by("pk")[0].pk).update(state="accepted")
    # Issues of a superseded member version do not count: only the current version's are decided.
    old = IntegrationIssue.objects.filter(run=run).first().member_version
    make_member(run, "memory", content=b"memory v2", version=2)
    issues(old.member.current_version, ["MEM-OBJ-slota refines RT-OBJ-slota: a new issue."])
    client.force_login(reviewer.user)
    body = client.get("/").content.decode()
    row = body.split('id="run-AAS-2026-09-25-progress-01"')[1].split("</tr>")[0]
    assert "3/6 mappings" in row and "0/1 issue" in row and "1 stale" in row
    assert '<progress max="7" value="3"' in row


def test_it_counts_amendments_and_conflicts_in_a_run_s_progress(client, reviewer):
    run, _ = build_reconcile_run(records=2, run_id="AAS-2026-09-25-amended-01", issue_count=0)
    reconciliation = make_member(run, "reconciliation", content=b"reconciliation v1")
    carried, _open = amendments(reconciliation, [("unresolved-conflict", "RT-OBJ-slota and MEM-OBJ-slota disagree."),
                                                 ("amendment", "MEM-OBJ-slota is superseded by RT-OBJ-slota.")])
    AmendmentDecision.objects.filter(pk=carried.pk).update(state="carried")
    client.force_login(reviewer.user)
    row = client.get("/").content.decode().split('id="run-AAS-2026-09-25-amended-01"')[1].split("</tr>")[0]
    assert "1/2 amendments or conflicts" in row
    assert '<progress max="4" value="1"' in row  # 2 open mappings + 2 amendments, 1 carried


def _list_queries(client, runs: range) -> int:
    for n in runs:
        build_reconcile_run(records=2, run_id=f"AAS-2026-09-25-count-{n:02d}", issue_count=1)
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/")
    assert response.status_code == 200 and response.content.count(b'<progress max="') == runs.stop
    return len(queries)


def test_it_computes_progress_for_3_and_for_30_runs_in_the_same_number_of_queries(client, reviewer):
    client.force_login(reviewer.user)
    few = _list_queries(client, range(0, 3))
    many = _list_queries(client, range(3, 30))
    assert few == many, f"{few} queries for 3 runs, {many} for 30"


def test_it_filters_by_status_and_system_and_keeps_filters_across_pages(client, reviewer, run_factory):
    for n in range(55):
        run_factory(run_id=f"AAS-2026-09-25-mem-{n:02d}", system="Mem0")
    run_factory(run_id="AAS-2026-09-25-other-01", system="Letta")
    client.force_login(reviewer.user)
    letta = client.get("/?system=letta").content.decode()
    assert "AAS-2026-09-25-other-01" in letta and "AAS-2026-09-25-mem-01" not in letta
    assert "No run matches these filters." in client.get("/?status=final").content.decode()
    first = client.get("/?system=Mem0&status=open").content.decode()
    assert first.count('<tr id="run-') == 50
    assert 'href="?page=2&amp;status=open&amp;system=Mem0"' in first
    second = client.get("/?page=2&status=open&system=Mem0").content.decode()
    assert second.count('<tr id="run-') == 5


def test_it_ignores_an_unknown_status_filter(client, reviewer, run_factory):
    run_factory(run_id="AAS-2026-09-25-any-01")
    client.force_login(reviewer.user)
    response = client.get("/?status=bogus")
    assert response.status_code == 200 and "AAS-2026-09-25-any-01" in response.content.decode()


def test_it_serves_one_run_s_decision_progress_as_a_fragment(client, reviewer, outsider):
    run, _ = build_reconcile_run(records=6, run_id="AAS-2026-09-25-progress-02")
    Mapping.objects.filter(pk=Mapping.objects.filter(run=run).order_by("pk")[0].pk).update(state="accepted")
    client.force_login(reviewer.user)
    response = client.get(f"/runs/{run.run_id}/reconcile/progress/", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert "1/6 mappings" in body and "0/4 issues" in body and '<progress max="10" value="1"' in body
    client.force_login(outsider.user)
    assert client.get(f"/runs/{run.run_id}/reconcile/progress/").status_code == 403

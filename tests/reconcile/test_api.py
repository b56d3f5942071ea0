"""The reconciliation API (DESIGN §4): lists, proposals, decisions, roles, error shape."""
from __future__ import annotations

import pytest

from reconcile.models import IssueDecision, Mapping
from reviews.models import AuditEvent, DenialTally, Run
from tests.reconcile.factories import MEMORY_SMALL, RUNTIME_SLUG, seed_path, upload, upload_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(run_factory):
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload(run, "memory", MEMORY_SMALL)
    return run


def url(run, tail=""):
    return f"/api/runs/{run.run_id}/{tail}"


def suggestion(run, source="MEM-RTE-mcp-read"):
    return Mapping.objects.get(run=run, source=source, origin="suggested")


def decide(client, run, mapping, **body):
    return client.post(url(run, f"mappings/{mapping.pk}/decision/"), body, format="json")


def assert_error(response, status, code):
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code
    assert error["message"]
    return error


# --- reading -------------------------------------------------------------------------------------

def test_it_lists_mappings_with_their_decision_fields(run, auditor):
    response = auditor.get(url(run, "mappings/"))
    assert response.status_code == 200
    rows = {row["source"]: row for row in response.json()["results"]}
    assert set(rows) == {"MEM-OBJ-memory-facts", "MEM-OBJ-profile-summary", "MEM-RTE-mcp-read"}
    read = rows["MEM-RTE-mcp-read"]
    assert {"id", "source", "relation", "target", "state", "origin", "score", "reason", "version", "rationale",
            "decided_by", "decided_at", "proposed_by", "member"} <= set(read)
    assert (read["relation"], read["target"], read["state"], read["origin"], read["version"], read["member"]) == (
        "same", "RT-RTE-mcp-read", "proposed", "suggested", 1, "memory")


def test_it_filters_mappings_by_state_origin_and_member(run, reviewer, agent):
    decide(reviewer, run, suggestion(run), decision="accept", rationale="", version=1)
    assert [r["source"] for r in agent.get(url(run, "mappings/?state=accepted")).json()["results"]] == [
        "MEM-RTE-mcp-read"]
    assert agent.get(url(run, "mappings/?origin=agent")).json()["results"] == []
    assert len(agent.get(url(run, "mappings/?member=memory")).json()["results"]) == 3
    assert agent.get(url(run, "mappings/?member=runtime")).json()["results"] == []


def test_an_unknown_filter_value_is_a_400_naming_it(run, agent):
    error = assert_error(agent.get(url(run, "mappings/?state=done")), 400, "invalid_filter")
    assert "state" in error["message"] and "proposed" in error["message"]
    assert_error(agent.get(url(run, "integration-issues/?member=nobody")), 400, "invalid_filter")


def test_canonical_records_list_the_member_records_mapped_to_them(run, reviewer):
    decide(reviewer, run, suggestion(run), decision="accept", rationale="", version=1)
    response = reviewer.get(url(run, "canonical-records/"))
    assert response.status_code == 200
    rows = {row["canonical_id"]: row for row in response.json()["results"]}
    assert len(rows) == 5
    read = rows["RT-RTE-mcp-read"]
    assert (read["kind"], read["origin"], read["state"], read["label"]) == (
        "RTE", "runtime", "active", "MCP explicit memory and document read-back")
    assert [(m["source"], m["member"], m["relation"]) for m in read["members"]] == [
        ("MEM-RTE-mcp-read", "memory", "same")]
    assert rows["RT-CMP-wrapper"]["members"] == []


def test_the_result_seed_lists_twenty_canonical_records(run_factory, auditor):
    run = run_factory()
    upload_file(run, "result", seed_path("000"))
    body = auditor.get(url(run, "canonical-records/")).json()
    assert body["count"] == 20
    assert body["results"][0]["canonical_id"] == "ABS-1"


def test_integration_issues_carry_their_decision_state(run, auditor):
    response = auditor.get(url(run, "integration-issues/"))
    assert response.status_code == 200
    rows = response.json()["results"]
    assert [(r["member"], r["index"], r["state"], r["version"]) for r in rows] == [
        ("memory", 1, "proposed", 1), ("memory", 2, "proposed", 1)]
    first = rows[0]
    assert first["id"] == IssueDecision.objects.get(issue_id=first["issue_id"]).pk
    assert first["references"] == ["MEM-RTE-mcp-read", "RT-RTE-mcp-read"]
    assert first["text"].startswith("Record overlap")


# --- proposing -----------------------------------------------------------------------------------

def test_an_agent_proposes_a_mapping_and_gets_201(run, agent):
    response = agent.post(url(run, "mappings/"), {"source": "MEM-OBJ-memory-facts", "relation": "new",
                                                  "target": None}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["source"], body["relation"], body["target"], body["state"], body["origin"]) == (
        "MEM-OBJ-memory-facts", "new", "", "proposed", "agent")
    assert body["proposed_by"] == "token:agent-1"
    assert AuditEvent.objects.filter(run=run, action="mapping.proposed", object_id=str(body["id"])).count() == 1


def test_proposing_the_same_mapping_twice_answers_200_with_the_first(run, agent):
    body = {"source": "MEM-OBJ-memory-facts", "relation": "same", "target": "RT-OBJ-memory-cache"}
    first = agent.post(url(run, "mappings/"), body, format="json")
    again = agent.post(url(run, "mappings/"), body, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    rival = agent.post(url(run, "mappings/"), body | {"target": "RT-OBJ-document-content"}, format="json")
    assert rival.status_code == 201 and rival.json()["id"] != first.json()["id"]
    assert Mapping.objects.filter(run=run, origin="agent", source="MEM-OBJ-memory-facts").count() == 2
    assert AuditEvent.objects.filter(run=run, action="mapping.proposed").count() == 2


@pytest.mark.parametrize("body, field, words", [
    ({"source": "MEM-OBJ-memory-facts", "relation": "same", "target": "RT-RTE-mcp-read"}, "target", "kinds differ"),
    ({"source": "MEM-OBJ-memory-facts", "relation": "same"}, "target", "needs a target"),
    ({"source": "MEM-OBJ-memory-facts", "relation": "new", "target": "RT-OBJ-memory-cache"}, "target",
     "already taken"),
    ({"source": "MEM-OBJ-nothing", "relation": "new"}, "source", "is not declared"),
])
def test_a_bad_proposal_is_a_400_naming_the_problem(run, agent, body, field, words):
    error = assert_error(agent.post(url(run, "mappings/"), body, format="json"), 400, "invalid")
    assert words in error["message"]
    assert error["details"] == {"field": field}


def test_a_proposal_with_an_unknown_relation_or_no_source_is_a_400(run, agent):
    error = assert_error(agent.post(url(run, "mappings/"), {"source": "MEM-OBJ-memory-facts", "relation": "equals"},
                                    format="json"), 400, "invalid")
    assert "relation" in error["details"]
    error = assert_error(agent.post(url(run, "mappings/"), {"relation": "new"}, format="json"), 400, "invalid")
    assert "source" in error["details"]


# --- deciding ------------------------------------------------------------------------------------

def test_a_reviewer_accepts_a_mapping(run, reviewer):
    response = decide(reviewer, run, suggestion(run), decision="accept", rationale="same route", version=1)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["state"], body["version"], body["rationale"], body["decided_by"]) == (
        "accepted", 2, "same route", "token:reviewer-1")
    assert body["decided_content_sha256"]


def test_an_outdated_version_is_a_409_with_the_current_state(run, reviewer, second_reviewer):
    mapping = suggestion(run)
    assert decide(reviewer, run, mapping, decision="accept", rationale="", version=1).status_code == 200
    error = assert_error(decide(second_reviewer, run, mapping, decision="reject", rationale="no", version=1),
                         409, "stale_version")
    current = error["details"]["current"]
    assert (current["id"], current["state"], current["version"], current["decided_by"]) == (
        mapping.pk, "accepted", 2, "token:reviewer-1")


def test_a_decision_without_a_version_is_a_400_naming_the_field(run, reviewer):
    # Issue 10: this was a 409 stale_version ("reload it and decide again"), though nothing was stale.
    mapping = suggestion(run)
    error = assert_error(decide(reviewer, run, mapping, decision="accept", rationale=""), 400, "invalid")
    assert "version" in error["details"] and error["message"].startswith("version:")
    mapping.refresh_from_db()
    assert mapping.state == "proposed"


def test_an_unknown_decision_or_a_rejection_without_rationale_is_a_400(run, reviewer):
    error = assert_error(decide(reviewer, run, suggestion(run), decision="approve", version=1), 400, "invalid")
    assert "decision" in error["details"]
    error = assert_error(decide(reviewer, run, suggestion(run), decision="reject", rationale="", version=1),
                         400, "invalid")
    assert error["details"] == {"field": "rationale"}


def test_accepting_an_accepted_mapping_again_is_a_409(run, reviewer):
    decide(reviewer, run, suggestion(run), decision="accept", rationale="", version=1)
    assert_error(decide(reviewer, run, suggestion(run), decision="accept", rationale="", version=2), 409,
                 "invalid_decision")


def test_accepting_a_supersedes_mapping_onto_an_unsettled_member_record_is_a_409(run, reviewer):
    upload(run, "reconciliation", "# Reconciliation\n\n## Reconciliation\n\n"
                                  "Amendment: MEM-OBJ-profile-summary is superseded by MEM-OBJ-memory-facts.\n")
    amendment = Mapping.objects.get(run=run, origin="reconciliation")
    error = assert_error(decide(reviewer, run, amendment, decision="accept", rationale="", version=1), 409,
                         "target_not_settled")
    assert error["message"].endswith("accept MEM-OBJ-memory-facts's own mapping first")
    assert error["details"] == {"field": "target"}


def test_decisions_are_refused_with_409_once_the_run_is_approved(run, reviewer):
    Run.objects.filter(pk=run.pk).update(status=Run.Status.APPROVED)
    error = assert_error(decide(reviewer, run, suggestion(run), decision="accept", rationale="", version=1), 409,
                         "run_locked")
    assert "reopen" in error["message"]
    decision = IssueDecision.objects.filter(run=run).first()
    assert_error(reviewer.post(url(run, f"integration-issues/{decision.pk}/decision/"),
                               {"decision": "accept", "version": 1}, format="json"), 409, "run_locked")


def test_a_reviewer_decides_an_integration_issue(run, reviewer):
    decision = IssueDecision.objects.filter(run=run).order_by("issue__index").first()
    endpoint = url(run, f"integration-issues/{decision.pk}/decision/")
    response = reviewer.post(endpoint, {"decision": "reject", "rationale": "not a conflict", "version": 1},
                             format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["state"], response.json()["version"]) == ("rejected", 2)
    error = assert_error(reviewer.post(endpoint, {"decision": "reopen", "version": 1}, format="json"), 409,
                         "stale_version")
    assert error["details"]["current"]["state"] == "rejected"


def test_an_unknown_mapping_is_a_404(run, reviewer):
    assert_error(reviewer.post(url(run, "mappings/999999/decision/"), {"decision": "accept", "version": 1},
                               format="json"), 404, "not_found")


def test_progress_counts_what_is_left(run, reviewer):
    decide(reviewer, run, suggestion(run), decision="accept", rationale="", version=1)
    body = reviewer.get(url(run, "progress/")).json()
    assert (body["mappings"]["decided"], body["issues"]["undecided"], body["undecided"]) == (1, 2, 4)


# --- roles ---------------------------------------------------------------------------------------

def test_an_agent_proposes_but_cannot_decide_and_the_denial_is_audited(run, agent):
    response = decide(agent, run, suggestion(run), decision="accept", rationale="", version=1)
    assert_error(response, 403, "permission_denied")
    event = AuditEvent.objects.filter(run=run, action="permission.denied").latest("seq")
    assert event.after["attempted"] == "mapping.decide"
    assert suggestion(run).state == "proposed"


def test_an_auditor_reads_but_cannot_propose_or_decide(run, auditor):
    assert auditor.get(url(run, "mappings/")).status_code == 200
    assert auditor.get(url(run, "integration-issues/")).status_code == 200
    assert_error(auditor.post(url(run, "mappings/"), {"source": "MEM-OBJ-memory-facts", "relation": "new"},
                              format="json"), 403, "permission_denied")
    decision = IssueDecision.objects.filter(run=run).first()
    assert_error(auditor.post(url(run, f"integration-issues/{decision.pk}/decision/"),
                              {"decision": "accept", "version": 1}, format="json"), 403, "permission_denied")
    # One caller's denials on one run within a minute fold into one event (reviews.audit.record_denial).
    assert AuditEvent.objects.filter(run=run, action="permission.denied").count() == 1
    tally = DenialTally.objects.get(run=run, actor="token:auditor-1")
    assert (tally.count, tally.attempts) == (2, {"mapping.propose": 1, "issue.decide": 1})


def test_a_reviewer_may_also_propose(run, reviewer):
    response = reviewer.post(url(run, "mappings/"), {"source": "MEM-OBJ-memory-facts", "relation": "no-counterpart"},
                             format="json")
    assert response.status_code == 201


@pytest.mark.parametrize("path", ["mappings/", "canonical-records/", "integration-issues/", "progress/"])
def test_an_outsider_gets_403_and_anonymous_401(run, outsider, anonymous, path):
    assert_error(outsider.get(url(run, path)), 403, "permission_denied")
    assert anonymous.get(url(run, path)).status_code in (401, 403)


def test_an_outsider_cannot_decide(run, outsider):
    assert_error(decide(outsider, run, suggestion(run), decision="accept", version=1), 403, "permission_denied")


# --- the OpenAPI schema ----------------------------------------------------------------------------

def test_the_openapi_schema_generates_and_validates_without_a_warning(tmp_path):
    import yaml
    from django.core.management import call_command

    out = tmp_path / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))  # raises on any warning
    schemas = yaml.safe_load(out.read_text())["components"]["schemas"]
    assert schemas["DecisionStateEnum"]["enum"] == ["proposed", "accepted", "rejected", "stale"]
    assert schemas["CanonicalRecordStateEnum"]["enum"] == ["active", "rejected"]

"""Every action leaves exactly one event (DESIGN.md §8), counted by action before and after it.

Each test calls the app's own service or API for one action and compares the
run's events by action before and after: the action's event appears exactly
once, carries the values an auditor needs, and nothing unexpected is written.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from contextlib import contextmanager

import pytest

from reconcile import services as reconcile_services
from results.services import approve_run, finalize_run, reopen_run
from reconcile.models import IssueDecision, Mapping
from records import services as records_services
from reviews.audit import Actor, verify_chain
from reviews.models import ApiToken, AuditEvent, Run
from reviews.services import issue_token, revoke_token, set_run_status
from tests.reconcile.factories import MEMORY_SMALL, REVIEWER, RUNTIME_SLUG, WORKER, upload
from tests.results.test_approval import ready_run  # noqa: F401 — fixture: a reconciled run in review

pytestmark = pytest.mark.django_db


class Delta:
    """The events written inside the block: `.actions` counts them by action, `.events` lists them."""

    actions: Counter
    events: list


@contextmanager
def new_events(run: Run | None):
    chain = AuditEvent.objects.filter(run=run) if run is not None else AuditEvent.objects.filter(run__isnull=True)
    last = chain.order_by("-seq").values_list("seq", flat=True).first() or 0
    delta = Delta()
    yield delta
    delta.events = list(chain.filter(seq__gt=last).order_by("seq"))
    delta.actions = Counter(e.action for e in delta.events)
    assert verify_chain(run).ok


def only(delta: Delta, action: str) -> AuditEvent:
    [event] = [e for e in delta.events if e.action == action]
    return event


# reviews: runs, tokens, denials, status


def test_creating_a_run_writes_one_run_created_event(agent):
    body = {"run_id": "AAS-2026-09-25-supermemory-02", "system": "Supermemory", "title": "t",
            "run_date": "2026-09-25", "reviewed_boundary": "0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f"}
    assert agent.post("/api/runs/", body, format="json").status_code == 201
    run = Run.objects.get(run_id=body["run_id"])
    events = list(AuditEvent.objects.filter(run=run))
    assert [(e.seq, e.action, e.actor) for e in events] == [(1, "run.created", "token:agent-1")]
    assert events[0].after["reviewed_boundary"] == body["reviewed_boundary"] and events[0].after["status"] == "open"


def test_issuing_and_revoking_a_token_write_one_event_each_on_the_chain_without_a_run(db):
    with new_events(None) as issued:
        token, key = issue_token(name="agent-9", role="agent", actor=Actor.command("issue_token"))
    assert issued.actions == {"token.issued": 1}
    event = only(issued, "token.issued")
    assert event.after == {"name": "agent-9", "user": "agent-9", "role": "agent", "key_prefix": key[:10]}
    assert key not in str(event.after)  # the key itself is never in the trail
    with new_events(None) as revoked:
        revoke_token(token=token, actor=Actor.command("revoke_token"))
        revoke_token(token=ApiToken.objects.get(pk=token.pk), actor=Actor.command("revoke_token"))  # no-op
    assert revoked.actions == {"token.revoked": 1}


def test_a_denied_request_on_a_run_writes_one_permission_denied_event(outsider, agent, run_factory):
    run = run_factory()
    with new_events(run) as denied:
        assert outsider.get(f"/api/runs/{run.run_id}/").status_code == 403
    assert denied.actions == {"permission.denied": 1}
    assert only(denied, "permission.denied").actor == "user:outsider-1"
    with new_events(run) as agent_decides:
        response = agent.post(f"/api/runs/{run.run_id}/mappings/1/decision/",
                              {"decision": "accept", "rationale": "x", "version": 1}, format="json")
        assert response.status_code == 403
    assert agent_decides.actions == {"permission.denied": 1}
    assert only(agent_decides, "permission.denied").actor == "token:agent-1"


def test_a_run_status_change_writes_one_event_and_a_repeat_writes_none(run_factory):
    run = run_factory()
    with new_events(run) as changed:
        set_run_status(run=run, status=Run.Status.VALIDATING, actor=Actor.worker("test"), reason="upload")
        set_run_status(run=run, status=Run.Status.VALIDATING, actor=Actor.worker("test"), reason="upload")
    assert changed.actions == {"run.status_changed": 1}
    assert (only(changed, "run.status_changed").before, only(changed, "run.status_changed").after) == (
        {"status": "open"}, {"status": "validating", "reason": "upload"})


# records: upload, parse, validate


def test_an_upload_writes_one_member_uploaded_event_with_version_and_sha256(agent, run_factory,
                                                                            django_capture_on_commit_callbacks):
    run = run_factory()
    content = "# Workflow report\n\nNothing declared.\n"
    with new_events(run) as uploaded, django_capture_on_commit_callbacks(execute=False):
        response = agent.post(f"/api/runs/{run.run_id}/members/", {"role": "workflow", "content": content},
                              format="json")
        assert response.status_code == 201
    # One event per upload: the run's move open → validating is carried by member.uploaded itself.
    assert uploaded.actions == {"member.uploaded": 1}
    event = only(uploaded, "member.uploaded")
    assert event.after["run_status"] == {"before": "open", "after": "validating", "reason": "workflow v1 uploaded"}
    assert Run.objects.get(pk=run.pk).status == "validating"
    assert event.actor == "token:agent-1" and event.object_type == "member_version"
    assert event.after["version"] == 1 and event.after["role"] == "workflow"
    assert event.after["sha256"] == hashlib.sha256(content.encode()).hexdigest() == response.json()["sha256"]

    with new_events(run) as again, django_capture_on_commit_callbacks(execute=False):
        assert agent.post(f"/api/runs/{run.run_id}/members/", {"role": "workflow", "content": content},
                          format="json").status_code == 200
    assert again.actions == {"member.reupload_identical": 1}


def test_parsing_and_validating_write_one_event_each_with_their_counts(run_factory):
    run = run_factory()
    version, _ = records_services.ingest_member_report(run=run, role="memory", filename="memory.md",
                                                       content=MEMORY_SMALL.encode(), actor=Actor("token:agent-1"))
    with new_events(run) as parsed:
        records_services.parse_member_version(version_pk=version.pk, actor=WORKER)
        records_services.parse_member_version(version_pk=version.pk, actor=WORKER)  # duplicate delivery
    # The run's only member parsed, so the parse validated the run in its transaction: one event per step.
    assert parsed.actions == {"member.parsed": 1, "run.validated": 1}
    after = only(parsed, "member.parsed").after
    assert after["sha256"] == version.sha256
    assert after["counts"]["declarations"] == 3 and after["counts"]["integration_issues"] == 2
    # The run's move validating → in_review is carried by run.validated.
    after = only(parsed, "run.validated").after
    assert after["run_status"] == {"before": "validating", "after": "in_review", "reason": ""}
    assert after["members"] == {"memory": version.sha256}

    with new_events(run) as validated:
        report = records_services.validate_run(run=run, actor=WORKER)
    assert validated.actions == {"run.validated": 1}
    after = only(validated, "run.validated").after
    assert "run_status" not in after  # already in review
    assert (after["errors"], after["warnings"]) == (report.errors, report.warnings)
    assert after["members"] == {"memory": version.sha256}


# reconcile: proposals, decisions, staleness


@pytest.fixture
def reconciling(run_factory):
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload(run, "memory", MEMORY_SMALL)
    run.refresh_from_db()
    return run


def test_a_proposal_writes_one_mapping_proposed_event(reconciling):
    with new_events(reconciling) as proposed:
        mapping, _created = reconcile_services.propose_mapping(
            run=reconciling, source="MEM-RTE-mcp-read", relation="same", target="RT-RTE-mcp-read",
            actor=Actor("token:agent-1"))
    assert proposed.actions == {"mapping.proposed": 1}
    event = only(proposed, "mapping.proposed")
    assert (event.object_type, event.object_id, event.actor) == ("mapping", str(mapping.pk), "token:agent-1")


def test_each_mapping_decision_writes_one_event(reconciling):
    mapping = Mapping.objects.get(run=reconciling, source="MEM-OBJ-memory-facts")
    for decision, action in (("accept", "mapping.accepted"), ("reopen", "mapping.reopened"),
                             ("reject", "mapping.rejected")):
        with new_events(reconciling) as decided:
            mapping = reconcile_services.decide_mapping(mapping=mapping, decision=decision, rationale="checked",
                                                        actor=REVIEWER, expected_version=mapping.version)
        assert decided.actions == {action: 1}, decision
        event = only(decided, action)
        assert event.actor == "user:reviewer-1" and event.after["state"] == mapping.state
    stale_version = mapping.version - 1
    with new_events(reconciling) as refused, pytest.raises(reconcile_services.StaleVersion):
        reconcile_services.decide_mapping(mapping=mapping, decision="reopen", rationale="late", actor=REVIEWER,
                                          expected_version=stale_version)
    assert refused.actions == {}


def test_an_integration_issue_decision_writes_one_event(reconciling):
    decision = IssueDecision.objects.filter(run=reconciling).order_by("issue__index").first()
    with new_events(reconciling) as decided:
        reconcile_services.decide_issue(issue_decision=decision, decision="accept", rationale="fine", actor=REVIEWER,
                                        expected_version=decision.version)
    assert decided.actions == {"issue.accepted": 1}
    assert only(decided, "issue.accepted").object_type == "issue_decision"


def test_a_changed_record_marks_its_decided_mapping_stale_with_one_event(reconciling):
    profile = Mapping.objects.get(run=reconciling, source="MEM-OBJ-profile-summary")
    reconcile_services.decide_mapping(mapping=profile, decision="accept", rationale="checked", actor=REVIEWER,
                                      expected_version=profile.version)
    changed = MEMORY_SMALL.replace("the engine synthesises", "the engine rebuilds")
    with new_events(reconciling) as reuploaded:
        upload(reconciling, "memory", changed)
    assert reuploaded.actions["mapping.marked_stale"] == 1
    assert reuploaded.actions["member.uploaded"] == 1 and reuploaded.actions["member.parsed"] == 1
    assert only(reuploaded, "mapping.marked_stale").object_id == str(profile.pk)


# approval, reopening, finalization


def test_approval_reopening_and_finalization_write_one_event_each(
        ready_run, django_capture_on_commit_callbacks):  # noqa: F811
    with new_events(ready_run) as approved, django_capture_on_commit_callbacks(execute=False):
        approve_run(run=ready_run, note="Checked every mapping.", actor=REVIEWER)
    assert approved.actions == {"run.approved": 1}
    assert only(approved, "run.approved").after["manifest_sha256"] == ready_run.manifest_sha256

    with new_events(ready_run) as reopened:
        reopen_run(run=ready_run, reason="one label was wrong", actor=REVIEWER)
    assert reopened.actions == {"run.reopened": 1}
    assert only(reopened, "run.reopened").after["status"] == "in_review"

    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=ready_run, note="Checked again.", actor=REVIEWER)
    with new_events(ready_run) as finalized:
        result = finalize_run(run=ready_run, actor=Actor.worker("finalize_run"))
        finalize_run(run=ready_run, actor=Actor.worker("finalize_run"))  # duplicate delivery
    # The worker's claim (approved → finalizing) and the stored result are two steps, one event each.
    assert finalized.actions == {"run.finalizing": 1, "run.finalized": 1}
    assert result.sha256 in str(only(finalized, "run.finalized").after)

"""Run participants (DESIGN §9): the creating agent and agents a reviewer or admin adds upload; others get 403."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from records.models import MemberVersion
from reviews.models import AuditEvent
from tests.conftest import _persona, seed_bytes

pytestmark = pytest.mark.django_db


def outside_denials(run, actor: str):
    """The denials of an agent outside `run`: on the run-less chain, naming the run (issue 36 item 8)."""
    return AuditEvent.objects.filter(run=None, object_id=run.run_id, action="permission.denied", actor=actor)


def post_member(client, run, role="memory", seed="002"):
    return client.post(f"/api/runs/{run.run_id}/members/", {"role": role, "content": seed_bytes(seed).decode()},
                       format="json")


def test_it_lets_the_creating_agent_upload_and_refuses_another_agent_naming_how_to_be_added(agent, run_factory):
    run = run_factory()  # created by agent-1
    other = _persona("agent-2", "agent")
    assert post_member(agent, run).status_code == 201

    response = post_member(other, run, seed="003")
    assert response.status_code == 403
    message = response.json()["error"]["message"]
    assert "participants" in message and f"PATCH /api/runs/{run.run_id}/" in message
    assert MemberVersion.objects.filter(member__run=run).count() == 1  # agent 2 overwrote nothing
    assert outside_denials(run, "token:agent-2").exists()
    # …and, having taken no part, does not read the trail either.
    assert other.get(f"/api/runs/{run.run_id}/audit/").status_code == 403


def test_it_refuses_a_non_participant_with_403_before_judging_the_body_and_a_missing_run_with_404(agent,
                                                                                                   run_factory):
    """The participant check runs on the run the upload locks; a refusal still says 404, then 403, then 400."""
    run = run_factory()
    other = _persona("agent-2", "agent")
    bad_body = {"role": "memory", "content": 42}
    assert other.post(f"/api/runs/{run.run_id}/members/", bad_body, format="json").status_code == 403
    assert outside_denials(run, "token:agent-2").exists()
    assert other.post("/api/runs/AAS-2026-01-01-nothing-here-01/members/", bad_body,
                      format="json").status_code == 404
    assert agent.post(f"/api/runs/{run.run_id}/members/", bad_body, format="json").status_code == 400
    assert not MemberVersion.objects.filter(member__run=run).exists()


def test_a_reviewer_adds_an_agent_who_may_then_upload(agent, reviewer, run_factory):
    run = run_factory()
    other = _persona("agent-2", "agent")
    response = reviewer.patch(f"/api/runs/{run.run_id}/", {"participants": ["agent-2"]}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json() == {"participants": ["agent-2"], "created_by": "agent-1"}
    event = AuditEvent.objects.get(run=run, action="run.participants_changed")
    assert event.actor == "token:reviewer-1" and event.after == {"participants": ["agent-2"]}
    assert post_member(other, run).status_code == 201
    assert other.get(f"/api/runs/{run.run_id}/audit/").status_code == 200

    # Removed again: refused again.
    assert reviewer.patch(f"/api/runs/{run.run_id}/", {"participants": []}, format="json").status_code == 200
    assert post_member(other, run, seed="003").status_code == 403


def test_only_reviewers_and_admins_change_participants_and_only_to_agents(agent, reviewer, run_factory):
    run = run_factory()
    _persona("agent-2", "agent")
    assert agent.patch(f"/api/runs/{run.run_id}/", {"participants": ["agent-2"]}, format="json").status_code == 403
    response = reviewer.patch(f"/api/runs/{run.run_id}/", {"participants": ["reviewer-1", "nobody"]}, format="json")
    assert response.status_code == 400 and "nobody, reviewer-1" in response.json()["error"]["message"]
    response = reviewer.patch(f"/api/runs/{run.run_id}/", {"participants": "agent-2"}, format="json")
    assert response.status_code == 400
    assert not AuditEvent.objects.filter(run=run, action="run.participants_changed").exists()


def test_a_run_created_over_the_api_belongs_to_its_creator(agent, run_factory):
    from tests.conftest import RUN_FIELDS

    other = _persona("agent-2", "agent")
    response = other.post("/api/runs/", RUN_FIELDS | {"run_id": "AAS-2026-09-25-other-01"}, format="json")
    assert response.status_code == 201
    run_id = response.json()["run_id"]
    assert other.post(f"/api/runs/{run_id}/members/", {"role": "memory", "content": seed_bytes("002").decode()},
                      format="json").status_code == 201
    assert agent.post(f"/api/runs/{run_id}/members/", {"role": "memory", "content": seed_bytes("003").decode()},
                      format="json").status_code == 403


def test_a_repeated_form_field_is_refused_and_nothing_is_stored(agent, run_factory):
    run = run_factory()
    body = {"role": ["memory", "runtime"], "file": SimpleUploadedFile("m.md", seed_bytes("002"))}
    response = agent.post(f"/api/runs/{run.run_id}/members/", body, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "repeated_field" and "role" in response.json()["error"]["message"]
    assert not MemberVersion.objects.filter(member__run=run).exists()


def test_a_token_revoked_before_the_upload_commits_gets_401_and_nothing_is_stored(agent, run_factory, monkeypatch):
    """The revocation lands after authentication, while the upload runs: the re-check in the commit refuses it."""
    from records.services import upload as upload_service
    from reviews.audit import Actor
    from reviews.models import ApiToken
    from reviews.services import revoke_token

    run = run_factory()
    real = upload_service._start_validating

    def revoked_meanwhile(*args, **kwargs):
        revoke_token(token=ApiToken.objects.get(name="agent-1"), actor=Actor.command("test"))
        return real(*args, **kwargs)

    monkeypatch.setattr(upload_service, "_start_validating", revoked_meanwhile)
    response = post_member(agent, run)
    assert response.status_code == 401, response.json()
    assert response.json()["error"]["code"] == "token_revoked"
    assert not MemberVersion.objects.filter(member__run=run).exists()
    assert not AuditEvent.objects.filter(run=run, action="member.uploaded").exists()


def test_malformed_participant_names_are_refused_without_reaching_the_database(reviewer, run_factory):
    run = run_factory()
    response = reviewer.patch(f"/api/runs/{run.run_id}/", {"participants": ["a\x00b", "x y"]}, format="json")
    assert response.status_code == 400 and "2 of the names" in response.json()["error"]["message"]


# --- an outsider agent writes nothing to the run (issue 36 item 2) ---------------------------------

def _outsider_browser(name="agent-2"):
    from django.contrib.auth import get_user_model
    from django.test import Client

    browser = Client()
    browser.force_login(get_user_model().objects.get(username=name))
    return browser


def _refused_naming_how_to_be_added(response, run):
    assert response.status_code == 403, response.content
    message = response.json()["error"]["message"]
    assert "participants" in message and f"PATCH /api/runs/{run.run_id}/" in message


def test_an_outsider_agent_proposes_no_mapping_through_the_api_or_the_page(agent, run_factory):
    """Seen: `POST …/mappings/` by an agent that is no participant answered 201, audited under that agent."""
    from reconcile.models import Mapping
    from tests.reconcile.factories import MEMORY_SMALL, RUNTIME_SLUG, upload

    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload(run, "memory", MEMORY_SMALL)
    other = _persona("agent-2", "agent")
    mappings, head = Mapping.objects.filter(run=run).count(), (run.refresh_from_db(), run.audit_head_seq)[1]

    response = other.post(f"/api/runs/{run.run_id}/mappings/", {"source": "MEM-OBJ-memory-facts", "relation": "new",
                                                                "target": None}, format="json")
    _refused_naming_how_to_be_added(response, run)
    page = _outsider_browser().post(f"/runs/{run.run_id}/reconcile/records/MEM-OBJ-memory-facts/propose/",
                                    {"relation": "new", "target": ""})
    assert page.status_code == 403

    assert Mapping.objects.filter(run=run).count() == mappings
    run.refresh_from_db()
    assert run.audit_head_seq == head and not AuditEvent.objects.filter(run=run, seq__gt=head).exists()  # untouched
    assert outside_denials(run, "token:agent-2").count() == outside_denials(run, "user:agent-2").count() == 1
    assert not AuditEvent.objects.filter(run=run, action="mapping.proposed").exclude(actor="token:agent-1").exists()
    # The creator still proposes.
    assert agent.post(f"/api/runs/{run.run_id}/mappings/", {"source": "MEM-OBJ-memory-facts", "relation": "new",
                                                            "target": None}, format="json").status_code == 201


def test_an_outsider_agent_replies_to_no_correction_request_through_the_api_or_the_page(agent, reviewer,
                                                                                      run_factory):
    """Seen: `POST …/corrections/{id}/replies/` by an agent that is no participant answered 201 once it had
    proposed a mapping (the proposal's event made it one that "took part")."""
    from reconcile.models import CorrectionReply
    from reconcile.services import corrections
    from reviews.audit import Actor
    from tests.reconcile.factories import MEMORY_SMALL, RUNTIME_SLUG, upload

    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload(run, "memory", MEMORY_SMALL)
    made = corrections.raise_correction(run=run, member="memory", text="Cite the file.",
                                        actor=Actor("user:reviewer-1"))
    other = _persona("agent-2", "agent")
    other.post(f"/api/runs/{run.run_id}/mappings/", {"source": "MEM-OBJ-memory-facts", "relation": "new",
                                                     "target": None}, format="json")

    response = other.post(f"/api/runs/{run.run_id}/corrections/{made.pk}/replies/", {"text": "Done, trust me."},
                          format="json")
    _refused_naming_how_to_be_added(response, run)
    page = _outsider_browser().post(f"/runs/{run.run_id}/corrections/{made.pk}/reply/", {"text": "Done, trust me."})
    assert page.status_code == 403
    assert not CorrectionReply.objects.filter(request=made).exists()
    assert not AuditEvent.objects.filter(run=run, actor__in=("token:agent-2", "user:agent-2")).exclude(
        action="permission.denied").exists()
    # The run's own agent replies.
    assert agent.post(f"/api/runs/{run.run_id}/corrections/{made.pk}/replies/", {"text": "Which file?"},
                      format="json").status_code == 201


def test_an_agent_added_to_the_run_proposes_and_replies(agent, reviewer, run_factory):
    from reconcile.services import corrections
    from reviews.audit import Actor
    from tests.reconcile.factories import MEMORY_SMALL, RUNTIME_SLUG, upload

    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload(run, "memory", MEMORY_SMALL)
    made = corrections.raise_correction(run=run, member="memory", text="Cite the file.", actor=Actor("user:reviewer-1"))
    other = _persona("agent-2", "agent")
    assert reviewer.patch(f"/api/runs/{run.run_id}/", {"participants": ["agent-2"]}, format="json").status_code == 200
    assert other.post(f"/api/runs/{run.run_id}/mappings/", {"source": "MEM-OBJ-memory-facts", "relation": "new",
                                                            "target": None}, format="json").status_code == 201
    assert other.post(f"/api/runs/{run.run_id}/corrections/{made.pk}/replies/", {"text": "On it."},
                      format="json").status_code == 201

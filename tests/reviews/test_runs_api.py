import pytest

from reviews.models import AuditEvent, Run
from tests.conftest import RUN_FIELDS

pytestmark = pytest.mark.django_db


def run_payload(run_id="AAS-2026-09-25-supermemory-02", **overrides):
    return {"run_id": run_id, **RUN_FIELDS, **overrides}


def test_it_lets_an_agent_create_and_list_runs(agent):
    response = agent.post("/api/runs/", run_payload(), format="json")
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "open"
    listing = agent.get("/api/runs/").json()
    assert [r["run_id"] for r in listing["results"]] == ["AAS-2026-09-25-supermemory-02"]
    assert listing["count"] == 1


def test_it_audits_the_creation_of_a_run(agent):
    agent.post("/api/runs/", run_payload(), format="json")
    run = Run.objects.get()
    event = AuditEvent.objects.get(run=run)
    assert (event.action, event.actor, event.object_id) == ("run.created", "token:agent-1", run.run_id)
    assert event.after["system"] == "Supermemory"


def test_it_refuses_anonymous_requests_with_401(anonymous):
    response = anonymous.get("/api/runs/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_it_refuses_a_malformed_run_id_with_the_error_shape(agent):
    response = agent.post("/api/runs/", run_payload(run_id="not-a-run-id"), format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert "run_id" in error["message"] and "AAS-YYYY-MM-DD-slug-NN" in error["message"]
    assert Run.objects.count() == 0


def test_it_answers_409_to_a_duplicate_run(agent):
    agent.post("/api/runs/", run_payload(), format="json")
    response = agent.post("/api/runs/", run_payload(), format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "run_exists"


def test_it_filters_runs_by_status_and_system(agent, run_factory):
    run_factory(system="ACE")
    run_factory(system="Supermemory")
    assert agent.get("/api/runs/?system=ace").json()["count"] == 1
    assert agent.get("/api/runs/?status=open").json()["count"] == 2
    assert agent.get("/api/runs/?status=final").json()["count"] == 0
    bad = agent.get("/api/runs/?status=done")
    assert bad.status_code == 400 and "done" in bad.json()["error"]["message"]


def test_it_paginates_runs(agent, run_factory):
    for _ in range(3):
        run_factory()
    page = agent.get("/api/runs/?page_size=2").json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"]


def test_it_refuses_run_creation_to_reviewers_and_auditors(reviewer, auditor):
    for client in (reviewer, auditor):
        response = client.post("/api/runs/", run_payload(), format="json")
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "permission_denied"


def test_it_refuses_a_user_without_a_role(outsider):
    assert outsider.get("/api/runs/").status_code == 403


def test_it_serves_the_openapi_schema_and_docs(client):
    assert client.get("/api/schema/").status_code == 200
    assert client.get("/api/docs/").status_code == 200


def test_it_reports_health_of_database_and_broker(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["checks"]["database"] == "ok"
    assert response.json()["checks"]["broker"].startswith("ok")


def test_it_names_the_broker_when_it_is_down(client, settings):
    from config.celery import app

    settings.CELERY_TASK_ALWAYS_EAGER = False
    old = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        response = client.get("/healthz")
    finally:
        app.conf.broker_url = old
    assert response.status_code == 503
    assert response.json()["checks"]["broker"] == "down"
    assert response.json()["checks"]["database"] == "ok"
    assert response.json()["failing"] == ["broker"]
    # Anonymous callers get the status words, never the host, port or error text.
    assert "details" not in response.json() and "127.0.0.1" not in response.content.decode()


def test_it_tells_an_admin_why_the_broker_is_down(client, settings, db):
    from config.celery import app
    from tests.conftest import _persona

    admin_api = _persona("health-admin", "admin")

    settings.CELERY_TASK_ALWAYS_EAGER = False
    old = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        response = admin_api.get("/healthz")
    finally:
        app.conf.broker_url = old
    assert response.status_code == 503
    assert "ConnectionError" in response.json()["details"]["broker"]


def test_it_guards_run_status_transitions(run_factory):
    from reviews.models import TransitionError

    run = run_factory()
    with pytest.raises(TransitionError):
        run.transition_to(Run.Status.FINAL)
    run.transition_to(Run.Status.VALIDATING)
    assert run.status == "validating"


def test_whoami_names_the_token_and_its_roles(agent):
    assert agent.get("/api/whoami/").json() == {"username": "agent-1", "roles": ["agent"], "token": "agent-1"}


def test_the_api_docs_load_their_assets_from_our_own_static_files(client):
    body = client.get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/" in body
    assert "cdn." not in body and "https://" not in body.split("<body", 1)[0]


def test_it_names_the_role_a_refused_caller_lacks(reviewer):
    response = reviewer.post("/api/runs/", run_payload(), format="json")
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "permission_denied"
    assert error["message"] == "This needs the admin or agent role."


def test_the_run_detail_names_the_run_it_revises_and_the_run_that_revises_it(agent, run_factory):
    """Without them an agent could not follow a revision (issue 22)."""
    first, second = run_factory(), run_factory()
    Run.objects.filter(pk=second.pk).update(revises=first)
    earlier = agent.get(f"/api/runs/{first.run_id}/").json()
    later = agent.get(f"/api/runs/{second.run_id}/").json()
    assert (earlier["revises"], earlier["revised_by"]) == (None, second.run_id)
    assert (later["revises"], later["revised_by"]) == (first.run_id, None)

"""Limits at the edge (issue 36 item 6, DESIGN §9): one limit for every free text a caller writes (20,000
characters, 400 naming the field, by the API and the pages alike), the answers an upload carries checked
whatever its bytes, and every answer under /api/ in the JSON error shape (a disallowed Host, an oversized
or malformed body, an unexpected failure)."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, TestCase

from reconcile import services
from reconcile.models import AmendmentDecision, CanonicalRecord, Conflict, CorrectionRequest, IssueDecision, Mapping
from reconcile.passes.consensus import settle_conflict
from reconcile.blind import settling
from tests.reconcile.pass_helpers import own_pass
from reconcile.services import corrections
from records.models import MemberVersion
from reviews.audit import Actor
from reviews.models import AuditEvent
from reviews.services import issue_token, set_reviews_required
from tests.reconcile.page_factories import amendments
from tests.reconcile.test_api import run  # noqa: F401 — fixture: a run with its runtime and memory members, synced
from tests.reconcile.test_corrections import MEMORY, corrected, upload

pytestmark = pytest.mark.django_db

LIMIT = 20_000
TOO_LONG = "x" * (LIMIT + 1)
REFUSED = f"{LIMIT + 1} characters; it may hold at most {LIMIT}."
REVIEWER = Actor("user:reviewer-1")


def error_of(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:400])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return body["error"]


@pytest.fixture(autouse=True)
def _answers_instead_of_raising(agent, reviewer):
    for client in (agent, reviewer):
        client.raise_request_exception = False


def _mapping(run) -> Mapping:
    return Mapping.objects.filter(run=run, state="proposed").order_by("pk").first()


def _amendment(run) -> AmendmentDecision:
    memory = MemberVersion.objects.get(member__run=run, member__role="memory")
    return amendments(memory, [("amendment", "MEM-OBJ-memory-facts is narrower than the runtime's.")])[0]


def _correction(run, *, answered: bool = False) -> CorrectionRequest:
    made = corrections.raise_correction(run=run, member="memory", text="Cite the file.", actor=REVIEWER)
    if answered:
        CorrectionRequest.objects.filter(pk=made.pk).update(state="answered", answer="declined", answer_text="no")
        made.refresh_from_db()
    return made


def _conflict(run) -> Conflict:
    issue = IssueDecision.objects.filter(run=run).order_by("pk").first()
    return Conflict.objects.create(run=run, model="issue", key=str(issue.pk), name="memory integration issue 1",
                                   decisions=[{"pass": 1, "reviewer": "alice", "state": "accepted"},
                                              {"pass": 2, "reviewer": "bob", "state": "rejected"}])


def _adjudicator(reviewer):
    issue_token(name=reviewer.user.get_username(), role="reviewer", adjudicate=True, actor=Actor.command("test"))
    return reviewer


# (what is posted where, by whom): the field whose text is too long, and the body around it.
API_TEXTS = {
    "mapping decision": (lambda run: f"/api/runs/{run.run_id}/mappings/{_mapping(run).pk}/decision/",
                         "rationale", {"decision": "reject", "version": 1}),
    "issue decision": (lambda run: f"/api/runs/{run.run_id}/integration-issues/"
                                   f"{IssueDecision.objects.filter(run=run).first().pk}/decision/",
                       "rationale", {"decision": "reject", "version": 1}),
    "amendment decision": (lambda run: f"/api/runs/{run.run_id}/amendments/{_amendment(run).pk}/decision/",
                           "rationale", {"decision": "carry", "version": 1}),
    "conflict adjudication": (lambda run: f"/api/runs/{run.run_id}/conflicts/{_conflict(run).pk}/decision/",
                              "rationale", {"decision": "reject", "version": 1}),
    "correction request": (lambda run: f"/api/runs/{run.run_id}/corrections/", "text", {"member": "memory"}),
    "correction reopened": (lambda run: f"/api/runs/{run.run_id}/corrections/{_correction(run, answered=True).pk}"
                                        "/reopen/", "reason", {"version": 1}),
    "correction withdrawn": (lambda run: f"/api/runs/{run.run_id}/corrections/{_correction(run).pk}/withdraw/",
                             "reason", {"version": 1}),
    "correction reply": (lambda run: f"/api/runs/{run.run_id}/corrections/{_correction(run).pk}/replies/",
                         "text", {}),
    "approval note": (lambda run: f"/api/runs/{run.run_id}/approve/", "note", {}),
    "reopening reason": (lambda run: f"/api/runs/{run.run_id}/reopen/", "reason", {}),
}


@pytest.mark.parametrize("route", API_TEXTS)
def test_every_free_text_of_the_api_is_limited_to_20000_characters_naming_the_field(route, run, reviewer):
    path, field, body = API_TEXTS[route]
    url = path(run)
    _adjudicator(reviewer)
    events = AuditEvent.objects.count()
    error = error_of(reviewer.post(url, body | {field: TOO_LONG}, format="json"), 400)
    assert (error["code"], error["message"], error["details"]) == ("invalid", f"{field}: {REFUSED}", {"field": field})
    assert AuditEvent.objects.count() == events


def test_the_schema_documents_the_limit_as_max_length(client):
    schema = client.get("/api/schema/?format=json").json()["components"]["schemas"]
    assert schema["DecisionRequest"]["properties"]["rationale"]["maxLength"] == LIMIT


def test_a_rationale_of_exactly_20000_characters_is_kept(run, reviewer):
    mapping = _mapping(run)
    reply = reviewer.post(f"/api/runs/{run.run_id}/mappings/{mapping.pk}/decision/",
                          {"decision": "reject", "rationale": "r" * LIMIT, "version": 1}, format="json")
    assert reply.status_code == 200, reply.content[:300]
    assert len(Mapping.objects.get(pk=mapping.pk).rationale) == LIMIT


# --- the pages: the same limit, said the same way, by the services ------------------------------------------

@pytest.fixture
def page(reviewer):
    browser = Client(raise_request_exception=False)
    browser.force_login(reviewer.user)
    return browser


def test_a_rationale_the_page_posts_has_the_apis_limit(run, page):
    """Not the form's own 5,000: 10,000 characters are kept, 20,001 refused in the API's words."""
    mapping, other = Mapping.objects.filter(run=run, state="proposed").order_by("pk")[:2]
    url = f"/runs/{run.run_id}/reconcile/mappings/{{}}/decide/"
    kept = page.post(url.format(mapping.pk), {"decision": "reject", "rationale": "k" * 10_000, "version": 1},
                     HTTP_HX_REQUEST="true")
    assert kept.status_code == 200 and Mapping.objects.get(pk=mapping.pk).rationale == "k" * 10_000
    events = AuditEvent.objects.count()
    refused = page.post(url.format(other.pk), {"decision": "reject", "rationale": TOO_LONG, "version": 1},
                        HTTP_HX_REQUEST="true")
    assert refused.status_code == 400 and f"rationale: {REFUSED}" in refused.content.decode()
    assert AuditEvent.objects.count() == events and Mapping.objects.get(pk=other.pk).state == "proposed"


def test_a_canonical_rejection_from_the_page_has_the_limit(run, page):
    record = CanonicalRecord.objects.filter(run=run).first()
    events = AuditEvent.objects.count()
    response = page.post(f"/runs/{run.run_id}/reconcile/canonical/{record.pk}/reject/", {"rationale": TOO_LONG},
                         follow=True)
    assert f"rationale: {REFUSED}" in response.content.decode()
    assert AuditEvent.objects.count() == events and CanonicalRecord.objects.get(pk=record.pk).state == "active"


def test_a_bulk_accept_from_the_page_has_the_limit(run, page):
    events = AuditEvent.objects.count()
    response = page.post(f"/runs/{run.run_id}/reconcile/bulk-accept/",
                         {"min_score": "0", "rationale": TOO_LONG, "confirm": "1"}, follow=True)
    assert f"rationale: {REFUSED}" in response.content.decode()
    assert AuditEvent.objects.count() == events


def test_an_adjudication_from_the_page_has_the_limit(run, page, reviewer):
    _adjudicator(reviewer)
    conflict = _conflict(run)
    response = page.post(f"/runs/{run.run_id}/conflicts/{conflict.pk}/settle/",
                         {"decision": "reject", "rationale": TOO_LONG, "version": 1}, follow=True)
    assert f"rationale: {REFUSED}" in response.content.decode()
    assert Conflict.objects.get(pk=conflict.pk).state == "open"


def test_a_decision_in_a_review_pass_has_the_limit(run):
    set_reviews_required(run=run, count=2, actor=Actor.command("test"))
    issue_token(name="alice", role="reviewer", actor=Actor.command("test"))
    alice = Actor.for_user(get_user_model().objects.get(username="alice"))
    mapping = _mapping(run)
    with pytest.raises(services.ProposalError, match=f"rationale: {REFUSED}"):
        own_pass(services.decide_mapping)(mapping=mapping, decision="reject", rationale=TOO_LONG, actor=alice,
                                          expected_version=mapping.version)
    assert not AuditEvent.objects.filter(run=run, action="pass.decided").exists()


def test_an_adjudicators_rationale_has_the_limit_in_the_service(run, reviewer):
    _adjudicator(reviewer)
    with pytest.raises(services.ProposalError, match=f"rationale: {REFUSED}"):
        settle_conflict(conflict=_conflict(run), decision="reject", rationale=TOO_LONG, reviewer=reviewer.user,
                        actor=Actor.for_user(reviewer.user), expected_version=1)


def test_what_consensus_joins_of_the_passes_rationales_is_no_callers_text(run):
    """Consensus writes "alice: …; bob: …" from rationales each within the limit: the sum may pass it."""
    mapping = _mapping(run)
    with settling():
        services.decide_mapping(mapping=mapping, decision="reject", rationale="j" * (2 * LIMIT), actor=REVIEWER,
                                expected_version=mapping.version)
    assert len(Mapping.objects.get(pk=mapping.pk).rationale) == 2 * LIMIT


# --- answers ------------------------------------------------------------------------------------------------

@pytest.fixture
def memory_run(run_factory, agent):
    run = run_factory()
    assert upload(agent, run, MEMORY).status_code == 201
    return run


@pytest.mark.parametrize("answers, field", [
    ("- corrected: " + "c" * 200_000, "answers: line 1"),
    ([{"answer": "corrected", "text": "c" * 200_000}], "answers[0].text"),
])
def test_a_corrected_answer_has_the_limit(answers, field, memory_run, reviewer, agent):
    made = corrections.raise_correction(run=memory_run, member="memory", text="Cite the file.", actor=REVIEWER)
    versions = MemberVersion.objects.filter(member__run=memory_run).count()
    error = error_of(upload(agent, memory_run, corrected(MEMORY), answers=answers), 400)
    assert (error["code"], error["message"]) == ("invalid", f"{field}: 200000 characters; it may hold at most {LIMIT}.")
    assert error["details"]["field"] == "answers"
    assert MemberVersion.objects.filter(member__run=memory_run).count() == versions
    assert CorrectionRequest.objects.get(pk=made.pk).state == "open"


@pytest.mark.parametrize("answers", ["- junk", "# Answers\n- not an answer at all\n"])
def test_identical_bytes_with_junk_answers_are_refused_as_new_bytes_are(answers, memory_run, agent):
    events = AuditEvent.objects.filter(run=memory_run).count()
    identical = error_of(upload(agent, memory_run, MEMORY, answers=answers), 400)
    assert AuditEvent.objects.filter(run=memory_run).count() == events
    new = error_of(upload(agent, memory_run, corrected(MEMORY), answers=answers), 400)
    assert identical == new and identical["code"] == "answers_mismatch" and "no answer" in identical["message"]
    assert MemberVersion.objects.filter(member__run=memory_run).count() == 1


def test_identical_bytes_without_answers_stay_idempotent(memory_run, agent):
    for answers in (None, "", [], "Nothing to answer.\n"):
        reply = upload(agent, memory_run, MEMORY, answers=answers)
        assert reply.status_code == 200 and reply.json()["version"] == 1


# --- every answer under /api/ is the error shape ------------------------------------------------------------

def test_a_disallowed_host_under_api_is_the_json_error_shape(settings):
    settings.ALLOWED_HOSTS = ["testserver"]
    browser = Client(raise_request_exception=False)
    error = error_of(browser.get("/api/runs/", HTTP_HOST="evil.example"), 400)
    assert error["code"] == "disallowed_host" and "evil.example" not in error["message"]
    page = browser.get("/login/", HTTP_HOST="evil.example")  # pages keep the app's page
    assert page.status_code == 400 and page["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("path", ["/api/runs/", "/api/runs/{run}/members/", "/api/runs/{run}/approve/"])
def test_a_20_megabyte_json_body_is_a_413_in_the_error_shape(path, run, agent, reviewer, settings):
    client = reviewer if "approve" in path else agent
    body = b'{"role": "memory", "content": "' + b"x" * (20 * 1024 * 1024) + b'"}'
    error = error_of(client.post(path.format(run=run.run_id), body, content_type="application/json"), 413)
    assert error["code"] == "too_large" and str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) in error["message"]


def test_a_form_body_with_too_many_fields_is_a_400_in_the_error_shape(run, agent):
    body = "&".join(f"f{n}=1" for n in range(5000))
    error = error_of(agent.post(f"/api/runs/{run.run_id}/members/", body,
                                content_type="application/x-www-form-urlencoded"), 400)
    assert error["code"] == "too_many_fields"


@pytest.mark.parametrize("body, content_type", [
    (b"--zz\r\nContent-Disposition: form-data; name=\"role\"\r\n\r\nmemory", "multipart/form-data; boundary=zz"),
    (b"garbage", "multipart/form-data"),
    (b"garbage", "multipart/form-data; boundary=" + "b" * 100),
])
def test_a_malformed_multipart_body_is_a_400_in_the_error_shape(body, content_type, run, agent):
    error_of(agent.post(f"/api/runs/{run.run_id}/members/", body, content_type=content_type), 400)
    assert MemberVersion.objects.filter(member__run=run, member__role="memory").count() == 1


def test_an_unexpected_failure_under_api_is_a_500_in_the_error_shape(agent, monkeypatch):
    from reviews import api

    def fail(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(api.RunListCreateView, "get_queryset", fail)
    error = error_of(agent.get("/api/runs/"), 500)
    assert error["code"] == "server_error" and "a bug" not in error["message"]


def test_the_uploads_own_size_limit_still_answers_first(run, agent, settings):
    """A report over MAX_UPLOAD_BYTES sent as JSON under the body limit: the upload's own 413, as before."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        reply = agent.post(f"/api/runs/{run.run_id}/members/",
                           {"role": "memory", "content": "x" * (settings.MAX_UPLOAD_BYTES + 1)}, format="json")
    assert error_of(reply, 413)["code"] == "too_large"

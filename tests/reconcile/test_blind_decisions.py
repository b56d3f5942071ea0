"""Explicit must not mean opt-in (issue 35): on a run in independent review every decision service
refuses (409 `reviews_blind`) unless it runs in the caller's own pass world, or is consensus or an
adjudication (`reconcile.blind.settling`). Every decision route, in the browser and in the API (the
three decisions and their reopen, rejecting a canonical record, bulk accept and its undo), is posted to
with its view not entering the world, and refused with nothing changed; and as the views are marked,
decided in the caller's pass as before, the shared rows untouched."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.test import Client

from reconcile import services
from reconcile.blind import ReviewsBlind
from reconcile.models import CanonicalRecord, Mapping, ReviewPass
from reconcile.passes import entering
from reconcile.passes.world import pass_world, snapshot
from reviews.audit import Actor
from reviews.models import AuditEvent
from reviews.services import set_reviews_required
from tests.reconcile.test_coherence_properties import build_corpus_run

pytestmark = pytest.mark.django_db

BLIND = "is in independent review: each reviewer decides in their own review"


@pytest.fixture
def two_reviews(run_factory):
    run = build_corpus_run(run_factory)
    set_reviews_required(run=run, count=2, actor=Actor.command("test"))
    return run


def _items(run) -> dict:
    """Two of each decidable item (the browser takes the first, the API the second), and a canonical record."""
    mappings = list(Mapping.objects.filter(run=run, state="proposed").order_by("pk")[:2])
    issues = list(services.current_issue_decisions(run).filter(state="proposed").order_by("pk")[:2])
    amendments = list(services.current_amendment_decisions(run).filter(state="proposed", mapping__isnull=True)
                      .order_by("pk")[:2])
    assert len(mappings) == len(issues) == len(amendments) == 2
    canonical = CanonicalRecord.objects.filter(run=run, kind="OBJ", state="active").order_by("pk").first()
    return {"mapping": mappings, "issue": issues, "amendment": amendments, "canonical": canonical}


def _browser(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def _said(response) -> str:
    """What the response tells the reviewer: its body, and the messages it left for the next page."""
    return response.content.decode() + " ".join(str(m) for m in get_messages(response.wsgi_request))


def _routes(run, items, *, reopen_versions=None):
    """(name, client kind, url, data, htmx) of every decision route; `reopen_versions` the items' versions
    in the pass for the reopens (the shared versions otherwise)."""
    base, api = f"/runs/{run.run_id}/reconcile", f"/api/runs/{run.run_id}"
    (m1, m2), (i1, i2), (a1, a2) = items["mapping"], items["issue"], items["amendment"]
    versions = reopen_versions or {}

    def reopen(item):
        return {"decision": "reopen", "rationale": "", "version": versions.get((type(item), item.pk), item.version)}

    return [
        ("browser mapping", "browser", f"{base}/mappings/{m1.pk}/decide/",
         {"decision": "reject", "rationale": "no place", "version": m1.version}, True),
        ("browser issue", "browser", f"{base}/issues/{i1.issue_id}/decide/",
         {"decision": "reject", "rationale": "not an issue", "version": i1.version}, True),
        ("browser amendment", "browser", f"{base}/amendments/{a1.pk}/decide/",
         {"decision": "reject", "rationale": "not so", "version": a1.version}, True),
        ("browser mapping reopen", "browser", f"{base}/mappings/{m1.pk}/decide/", reopen(m1), True),
        ("browser issue reopen", "browser", f"{base}/issues/{i1.issue_id}/decide/", reopen(i1), True),
        ("browser amendment reopen", "browser", f"{base}/amendments/{a1.pk}/decide/", reopen(a1), True),
        ("browser reject canonical", "browser", f"{base}/canonical/{items['canonical'].pk}/reject/",
         {"rationale": "not a real component"}, False),
        ("browser bulk accept", "browser", f"{base}/bulk-accept/",
         {"min_score": "0.0", "confirm": "1", "mapping": [m.pk for m in services.bulk_accept_candidates(run, 0.0)]},
         False),
        ("browser undo bulk accept", "browser", f"{base}/bulk-accept/undo/", {}, False),
        ("api mapping", "api", f"{api}/mappings/{m2.pk}/decision/",
         {"decision": "reject", "rationale": "no place", "version": m2.version}, False),
        ("api issue", "api", f"{api}/integration-issues/{i2.pk}/decision/",
         {"decision": "reject", "rationale": "not an issue", "version": i2.version}, False),
        ("api amendment", "api", f"{api}/amendments/{a2.pk}/decision/",
         {"decision": "reject", "rationale": "not so", "version": a2.version}, False),
        ("api mapping reopen", "api", f"{api}/mappings/{m2.pk}/decision/", reopen(m2), False),
        ("api issue reopen", "api", f"{api}/integration-issues/{i2.pk}/decision/", reopen(i2), False),
        ("api amendment reopen", "api", f"{api}/amendments/{a2.pk}/decision/", reopen(a2), False),
    ]


def _post(clients, kind, url, data, htmx):
    if kind == "api":
        return clients["api"].post(url, data, format="json")
    return clients["browser"].post(url, data, **({"HTTP_HX_REQUEST": "true"} if htmx else {}))


def test_every_decision_route_refuses_when_its_view_does_not_enter_the_callers_pass(two_reviews, reviewer,
                                                                                   monkeypatch):
    run = two_reviews
    items = _items(run)
    browser = _browser(reviewer.user)
    # The last bulk accept the undo would reopen, as the session keeps it after one.
    session = browser.session
    session[f"bulk-accept:{run.run_id}"] = {"decisions": [[items["mapping"][0].pk, items["mapping"][0].version]],
                                            "names": "one", "min_score": "0.00"}
    session.save()
    shared = snapshot(run)
    monkeypatch.setattr(entering, "enter_pass_world", lambda request, run_id, *, deciding: None)
    for name, kind, url, data, htmx in _routes(run, items):
        response = _post({"browser": browser, "api": reviewer}, kind, url, data, htmx)
        if kind == "api":
            assert response.status_code == 409, (name, response.status_code)
            assert response.json()["error"]["code"] == "reviews_blind", name
        elif htmx:
            assert response.status_code == 409 and BLIND in _said(response), (name, response.status_code)
        else:
            assert response.status_code == 302 and BLIND in _said(response), (name, response.status_code)
    assert snapshot(run) == shared
    assert not ReviewPass.objects.filter(run=run).exists()
    assert not AuditEvent.objects.filter(run=run, action__startswith="pass.").exists()


def test_every_decision_route_decides_in_the_callers_pass_and_leaves_the_shared_rows(two_reviews, reviewer):
    run = two_reviews
    items = _items(run)
    browser = _browser(reviewer.user)
    shared = snapshot(run)
    clients = {"browser": browser, "api": reviewer}
    routes = _routes(run, items)
    for name, kind, url, data, htmx in routes[:3] + routes[9:12]:  # the decisions
        response = _post(clients, kind, url, data, htmx)
        assert response.status_code == 200 and BLIND not in _said(response), (name, response.status_code)
    # The reopens, on the versions the pass gave the items; a canonical record rejected; a bulk accept and its undo.
    with pass_world(run, reviewer.user):
        in_pass = {(type(item), item.pk): type(item).objects.get(pk=item.pk).version
                   for item in items["mapping"] + items["issue"] + items["amendment"]}
    routes = _routes(run, items, reopen_versions=in_pass)
    for name, kind, url, data, htmx in routes[3:9] + routes[12:]:
        response = _post(clients, kind, url, data, htmx)
        assert response.status_code in (200, 302) and BLIND not in _said(response), (name, response.status_code)
        assert "Not undone" not in _said(response), name
    assert snapshot(run) == shared  # blind: nothing of the pass reached the shared rows
    review_pass = ReviewPass.objects.get(run=run, reviewer=reviewer.user)
    decided = [e.after["decision"] for e in AuditEvent.objects.filter(run=run, action="pass.decided").order_by("seq")]
    assert decided == ["reject"] * 6 + ["reopen"] * 3 + ["reject_canonical_record", "bulk_accept",
                                                         "undo_bulk_accept"] + ["reopen"] * 3, decided
    assert review_pass.entries.exists()


def test_every_decision_service_called_outside_the_callers_pass_refuses(two_reviews):
    run = two_reviews
    items = _items(run)
    alice = get_user_model().objects.create(username="alice")
    bob = get_user_model().objects.create(username="bob")
    as_alice = Actor.for_user(alice)
    (mapping, _), (issue, _), (amendment, _) = items["mapping"], items["issue"], items["amendment"]
    calls = {
        "decide_mapping": lambda: services.decide_mapping(mapping=mapping, decision="reject", rationale="no",
                                                          actor=as_alice, expected_version=mapping.version),
        "reopen": lambda: services.decide_mapping(mapping=mapping, decision="reopen", rationale="",
                                                  actor=as_alice, expected_version=mapping.version),
        "decide_issue": lambda: services.decide_issue(issue_decision=issue, decision="reject", rationale="no",
                                                      actor=as_alice, expected_version=issue.version),
        "decide_amendment": lambda: services.decide_amendment(amendment=amendment, decision="reject", rationale="no",
                                                              actor=as_alice, expected_version=amendment.version),
        "reject_canonical_record": lambda: services.reject_canonical_record(
            record=items["canonical"], rationale="no", actor=as_alice),
        "bulk_accept": lambda: services.bulk_accept(run=run, min_score=0.0, actor=as_alice, rationale="bulk"),
        "undo_bulk_accept": lambda: services.undo_bulk_accept(run=run, decisions=[(mapping.pk, mapping.version)],
                                                              actor=as_alice, rationale="undo"),
    }
    shared = snapshot(run)
    for name, call in calls.items():
        with pytest.raises(ReviewsBlind) as refused:
            call()
        assert refused.value.code == "reviews_blind", name
        with pass_world(run, bob), pytest.raises(ReviewsBlind):  # another reviewer's pass is not the caller's
            call()
    assert snapshot(run) == shared
    assert not AuditEvent.objects.filter(run=run, action="pass.decided").exists()


def test_run_for_enters_no_pass_and_only_a_marked_view_reads_through_it(two_reviews, reviewer):
    """`run_for` is lookup, permission and the audited denial only: a view that does not say
    `in_review_pass` reads the shared rows, so a missing decorator shows less, never another's pass."""
    from django.http import HttpResponse
    from django.test import RequestFactory

    from reconcile.blind import active_world
    from reviews.access import run_for

    run = two_reviews
    mapping = _items(run)["mapping"][0]
    with pass_world(run, reviewer.user):
        services.decide_mapping(mapping=mapping, decision="reject", rationale="no", actor=Actor.for_user(reviewer.user),
                                expected_version=mapping.version)

    def state(request, run_id):
        run_for(request, run_id)
        assert (active_world(run) is not None) == marked
        return HttpResponse(Mapping.objects.get(pk=mapping.pk).state)

    request = RequestFactory().get("/")
    request.user = reviewer.user
    marked = False
    assert state(request, run_id=run.run_id).content == b"proposed"
    marked = True
    assert entering.in_review_pass(state)(request, run_id=run.run_id).content == b"rejected"
    assert active_world(run) is None  # left with the response

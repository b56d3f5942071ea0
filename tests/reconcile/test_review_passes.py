"""Independent reviews through the services (DESIGN §5 "Independent reviews", issue 21): each
reviewer decides in a blind pass, the passes' agreements become the run's decisions and their
disagreements conflicts an adjudicator settles."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, TestCase

from reconcile import services
from reconcile.models import CanonicalRecord, Conflict, IssueDecision, Mapping, ReviewPass
from reconcile.passes.consensus import PassNotFinished, settle_conflict, submit_pass
from reconcile.passes.world import PassRefused, pass_world
from results.services import ApprovalBlocked, approve_run
from reviews.audit import Actor
from reviews.models import AuditEvent
from reviews.services import ReviewsRequiredRefused, issue_token, set_reviews_required
from tests.reconcile.pass_helpers import decisions_in_own_pass, own_pass
from tests.reconcile.test_coherence_properties import build_corpus_run, settle

pytestmark = pytest.mark.django_db


def _reviewer(name: str, *, adjudicate: bool = False):
    issue_token(name=name, role="reviewer", adjudicate=adjudicate, actor=Actor.command("test"))
    user = get_user_model().objects.get(username=name)
    return user, Actor.for_user(user)


@pytest.fixture
def two_reviews(run_factory):
    run = build_corpus_run(run_factory)
    set_reviews_required(run=run, count=2, actor=Actor.command("test"))
    return run


def _without_csrf(html: str) -> str:
    return re.sub(r"[A-Za-z0-9]{64}", "<token>", html)


def _decide_all(actor, *, reject_first_issue: bool = False, reject_mapping: int | None = None):
    """Decide every open item as `settle` does, with the chosen disagreements."""
    from tests.reconcile import test_coherence_properties as props

    saved = props.REVIEWER
    props.REVIEWER = actor
    try:
        run = Mapping.objects.first().run
        if reject_first_issue:
            first = services.current_issue_decisions(run).order_by("pk").first()
            own_pass(services.decide_issue)(issue_decision=first, decision="reject", rationale="not an issue",
                                            actor=actor, expected_version=first.version)
        if reject_mapping is not None:
            mapping = Mapping.objects.get(pk=reject_mapping)
            own_pass(services.decide_mapping)(mapping=mapping, decision="reject", rationale="wrong place",
                                              actor=actor, expected_version=mapping.version)
        with decisions_in_own_pass(props):
            settle(run)
    finally:
        props.REVIEWER = saved


def _reject_one(run, actor):
    """One open mapping rejected in the actor's pass: the first decision of a review."""
    mapping = Mapping.objects.filter(run=run, state="proposed").order_by("pk").first()
    return own_pass(services.decide_mapping)(mapping=mapping, decision="reject", rationale="no", actor=actor,
                                             expected_version=mapping.version)


def test_with_one_review_nothing_changes(run_factory):
    run = build_corpus_run(run_factory)
    _, actor = _reviewer("solo")
    mapping = Mapping.objects.filter(run=run, state="proposed").first()
    services.decide_mapping(mapping=mapping, decision="reject", rationale="no", actor=actor,
                            expected_version=mapping.version)
    assert Mapping.objects.get(pk=mapping.pk).state == "rejected"
    assert not ReviewPass.objects.exists()


def test_a_pass_decides_blind_and_the_shared_rows_stay_undecided(two_reviews):
    run = two_reviews
    alice, as_alice = _reviewer("alice")
    mapping = Mapping.objects.filter(run=run, state="proposed").order_by("pk").first()
    with pass_world(run, alice):
        decided = services.decide_mapping(mapping=mapping, decision="reject", rationale="no", actor=as_alice,
                                          expected_version=mapping.version)
    assert decided.state == "rejected"  # what the pass sees
    assert Mapping.objects.get(pk=mapping.pk).state == "proposed"  # what everyone else sees
    review_pass = ReviewPass.objects.get(run=run, reviewer=alice)
    assert review_pass.number == 1
    event = AuditEvent.objects.filter(run=run, action="pass.decided").get()
    assert event.after["pass"] == 1 and event.after["changes"][0]["state"] == "rejected"
    # The pass's own version moved on: deciding on the old one is stale, within the pass.
    with pass_world(run, alice), pytest.raises(services.StaleVersion):
        services.decide_mapping(mapping=mapping, decision="reopen", rationale="", actor=as_alice,
                                expected_version=mapping.version)
    with pass_world(run, alice):
        services.decide_mapping(mapping=mapping, decision="reopen", rationale="", actor=as_alice,
                                expected_version=decided.version)


def test_reviews_required_is_set_before_the_first_decision_only(two_reviews):
    run = two_reviews
    _, as_alice = _reviewer("alice")
    _reject_one(run, as_alice)
    with pytest.raises(ReviewsRequiredRefused, match="already has decisions"):
        set_reviews_required(run=run, count=3, actor=as_alice)
    with pytest.raises(ReviewsRequiredRefused, match="from 1 to 5"):
        set_reviews_required(run=run, count=6, actor=as_alice)


def test_a_third_reviewer_cannot_start_a_pass_and_a_submitted_one_takes_no_more(two_reviews):
    run = two_reviews
    _, as_alice = _reviewer("alice")
    _, as_bob = _reviewer("bob")
    carol, as_carol = _reviewer("carol")
    _decide_all(as_alice)
    first = Mapping.objects.filter(run=run).order_by("pk").first()
    _decide_all(as_bob)
    with pass_world(run, carol), pytest.raises(PassRefused, match="alice and bob"):
        services.decide_mapping(mapping=first, decision="reject", rationale="x", actor=as_carol,
                                expected_version=first.version)
    alice = get_user_model().objects.get(username="alice")
    submit_pass(run=run, reviewer=alice, actor=as_alice)
    with pass_world(run, alice), pytest.raises(PassRefused, match="submitted"):
        services.decide_mapping(mapping=first, decision="reopen", rationale="x", actor=as_alice,
                                expected_version=first.version + 5)


def test_an_unfinished_pass_is_not_submitted(two_reviews):
    run = two_reviews
    alice, as_alice = _reviewer("alice")
    _reject_one(run, as_alice)
    with pytest.raises(PassNotFinished, match="still open"):
        submit_pass(run=run, reviewer=alice, actor=as_alice)


def _two_passes_one_disagreement(run):
    """alice and bob review the whole run, alice rejecting the first issue bob accepts; both submit.
    Returns (alice, as_alice, judge, as_judge), judge an adjudicator."""
    alice, as_alice = _reviewer("alice")
    bob, as_bob = _reviewer("bob")
    judge, as_judge = _reviewer("judge", adjudicate=True)
    _decide_all(as_alice, reject_first_issue=True)
    _decide_all(as_bob)
    submit_pass(run=run, reviewer=alice, actor=as_alice)
    assert Mapping.objects.filter(run=run, state="accepted").count() == 0  # still blind: one pass only
    with TestCase.captureOnCommitCallbacks(execute=True):  # the worker's consensus, run in process
        submit_pass(run=run, reviewer=bob, actor=as_bob)
    return alice, as_alice, judge, as_judge


def test_agreements_become_decisions_and_disagreements_conflicts_settled_by_an_adjudicator(two_reviews):
    run = two_reviews
    alice, as_alice, judge, as_judge = _two_passes_one_disagreement(run)
    _, as_bob = _reviewer("bob")
    conflicts = list(Conflict.objects.filter(run=run))
    assert [c.model for c in conflicts] == ["issue"]
    assert [d["state"] for d in conflicts[0].decisions] == ["rejected", "accepted"]
    assert Mapping.objects.filter(run=run, state="accepted").exists()
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=run, note="checked", actor=as_judge)
    assert "conflict_open" in {b.code for b in blocked.value.blockers}
    # A reviewer who wrote one of the passes does not adjudicate; one without the permission neither.
    for who, actor in ((alice, as_alice), (get_user_model().objects.create(username="plain"), as_bob)):
        with pytest.raises(Exception, match="adjudicat|You wrote"):
            settle_conflict(conflict=conflicts[0], decision="accept", rationale="r", reviewer=who, actor=actor,
                            expected_version=1)
    settle_conflict(conflict=conflicts[0], decision="reject", rationale="alice is right", reviewer=judge,
                    actor=as_judge, expected_version=1)
    issue = IssueDecision.objects.get(pk=int(conflicts[0].key))
    assert issue.state == "rejected" and issue.decided_by == "user:judge"
    run.refresh_from_db()
    approve_run(run=run, note="checked", actor=as_judge)


def test_another_reviewers_api_replies_carry_nothing_of_a_pass_before_submission(two_reviews, reviewer,
                                                                                  second_reviewer):
    run = two_reviews
    first = Mapping.objects.filter(run=run, state="proposed").order_by("pk").first()
    base = f"/api/runs/{run.run_id}"
    before = {path: second_reviewer.get(base + path).json() for path in
              ("/mappings/", "/blockers/", "/progress/", "/integration-issues/", "/canonical-records/")}
    browser = Client()
    browser.force_login(second_reviewer.user)
    counters = f"/runs/{run.run_id}/reconcile/counters/"
    counted = browser.get(counters).content
    reconcile_page = f"/runs/{run.run_id}/reconcile/?member=epistemic"
    page_before = _without_csrf(browser.get(reconcile_page).content.decode())
    answer = reviewer.post(f"{base}/mappings/{first.pk}/decision/",
                           {"decision": "reject", "rationale": "a secret reason", "version": first.version},
                           format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["state"] == "rejected"  # the deciding reviewer sees their pass
    mine = reviewer.get(base + "/mappings/").json()
    assert any(m["id"] == first.pk and m["state"] == "rejected" for m in mine["results"])
    for path, was in before.items():
        assert second_reviewer.get(base + path).json() == was, path
    passes = second_reviewer.get(base + "/passes/").json()
    assert passes["passes"][0]["reviewer"] == "reviewer-1" and passes["passes"][0]["decisions"] is None
    trail = second_reviewer.get(base + "/audit/?action=pass.decided").json()
    events = trail["results"] if isinstance(trail, dict) else trail
    assert events and all("a secret reason" not in str(e) for e in events)
    assert "a secret reason" in str(reviewer.get(base + "/audit/?action=pass.decided").json())
    assert browser.get(counters).content == counted
    own = Client()
    own.force_login(reviewer.user)
    assert own.get(reconcile_page).status_code == 200  # the first reviewer's page, read through their pass
    assert _without_csrf(browser.get(reconcile_page).content.decode()) == page_before
    page = browser.get(f"/runs/{run.run_id}/reconcile/?member=epistemic").content.decode()
    assert "a secret reason" not in page and "Submit my review" not in page  # no pass of theirs yet
    timeline = browser.get(f"/runs/{run.run_id}/audit/").content.decode()
    assert "a secret reason" not in timeline and "shown once your own review" in timeline


def test_reviews_required_through_the_api(run_factory, reviewer, agent):
    run = run_factory()
    url = f"/api/runs/{run.run_id}/"
    assert agent.patch(url, {"reviews_required": 2}, format="json").status_code == 403
    answer = reviewer.patch(url, {"reviews_required": 2}, format="json")
    assert answer.status_code == 200 and answer.json()["reviews_required"] == 2
    assert reviewer.get(url).json()["reviews_required"] == 2
    bad = reviewer.patch(url, {"reviews_required": 9}, format="json")
    assert bad.status_code == 400 and "from 1 to 5" in bad.json()["error"]["message"]


def test_the_result_names_the_passes_the_adjudications_and_the_agreement(two_reviews):
    from aas_verify import verify_bundle
    from aas_verify.checks import statement_of
    from results.models import Attestation, Result
    from results.services import export_bundle, finalize_run

    run = two_reviews
    _, _, judge, as_judge = _two_passes_one_disagreement(run)
    conflict = Conflict.objects.get(run=run)
    settle_conflict(conflict=conflict, decision="reject", rationale="alice is right", reviewer=judge,
                    actor=as_judge, expected_version=1)
    run.refresh_from_db()
    approve_run(run=run, note="checked both reviews", actor=as_judge)
    finalize_run(run=run, actor=Actor.worker("test"))
    result = Result.objects.get(run=run)
    text = result.markdown
    assert result.data["verification"]["independent_reviews"]["agreement"]["overall"]["items"] > 0
    # The signed statement carries them, and the offline verifier finds them on the exported trail.
    predicate = statement_of(Attestation.objects.get(result=result).envelope.encode())["predicate"]
    assert [p["reviewer"] for p in predicate["review_passes"]] == ["alice", "bob"]
    assert predicate["adjudications"][0]["decision"] == "reject" and predicate["agreement"]["overall"]["items"]
    from aas_verify import load_keys
    from results.signing import load_signing_key

    report = verify_bundle(export_bundle(run=run), load_keys(load_signing_key().public_key_pem.encode(), "key"))
    assert report.ok, [f.line() for f in report.failures]
    semantic = text.split("### Semantic verification", 1)[1].split("### Deterministic validation", 1)[0]
    assert "Pass 1 by alice" in semantic and "Pass 2 by bob" in semantic
    assert "Cohen's kappa" in semantic and "Krippendorff's alpha" in semantic
    assert "Settled by user:judge: reject, alice is right" in semantic


def test_the_bundle_waits_until_the_callers_own_review_is_submitted(two_reviews, reviewer, second_reviewer):
    run = two_reviews
    first = Mapping.objects.filter(run=run, state="proposed").order_by("pk").first()
    reviewer.post(f"/api/runs/{run.run_id}/mappings/{first.pk}/decision/",
                  {"decision": "reject", "rationale": "a secret reason", "version": first.version}, format="json")
    refused = second_reviewer.get(f"/api/runs/{run.run_id}/bundle/")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "reviews_blind"
    assert reviewer.get(f"/api/runs/{run.run_id}/bundle/").status_code == 200  # their own decisions only


def test_the_coherence_rules_hold_within_a_pass(two_reviews):
    run = two_reviews
    alice, as_alice = _reviewer("alice")
    record = CanonicalRecord.objects.filter(run=run, kind="OBJ", state="active").order_by("pk").first()
    source = Mapping.objects.filter(run=run, state="proposed", source__contains="-OBJ-").order_by("pk").first().source
    mapping, _ = services.propose_mapping(run=run, source=source, relation="part-of", target=record.canonical_id,
                                          actor=as_alice)
    with pass_world(run, alice):
        services.reject_canonical_record(record=record, rationale="not a real component", actor=as_alice)
    assert CanonicalRecord.objects.get(pk=record.pk).state == "active"  # only in alice's pass
    with pass_world(run, alice), pytest.raises((services.StateConflict, services.ProposalError), match="rejected"):
        services.decide_mapping(mapping=mapping, decision="accept", rationale="", actor=as_alice,
                                expected_version=mapping.version)


def test_the_consensus_is_a_workers_job_that_the_sweep_queues_again(two_reviews):
    from reconcile import tasks
    from reconcile.passes.consensus import build_consensus, runs_awaiting_consensus

    run = two_reviews
    alice, as_alice = _reviewer("alice")
    bob, as_bob = _reviewer("bob")
    _decide_all(as_alice, reject_first_issue=True)
    _decide_all(as_bob)
    submit_pass(run=run, reviewer=alice, actor=as_alice)
    with TestCase.captureOnCommitCallbacks(execute=False) as queued:  # the broker lost it: nothing ran
        submit_pass(run=run, reviewer=bob, actor=as_bob)
    assert any("reconcile.build_consensus" in repr(c) for c in queued)
    assert not Conflict.objects.filter(run=run).exists()
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=run, note="checked", actor=as_bob)
    assert "consensus_pending" in {b.code for b in blocked.value.blockers}
    mapping = Mapping.objects.filter(run=run).first()
    with pytest.raises(PassRefused, match="worker is turning them"):
        services.decide_mapping(mapping=mapping, decision="reopen", rationale="x", actor=as_alice,
                                expected_version=mapping.version)
    assert runs_awaiting_consensus() == [run.pk]
    assert tasks.sweep_pending_consensus.apply().get() == 1  # queued again (tasks run eagerly here)
    assert Conflict.objects.filter(run=run).count() == 1 and runs_awaiting_consensus() == []
    assert build_consensus(run=run) is False  # made once
    assert AuditEvent.objects.filter(run=run, action="pass.consensus").count() == 1


def test_a_pass_decision_never_reaches_the_event_feed_or_webhooks(two_reviews):
    from events.feed import payloads

    run = two_reviews
    _, as_alice = _reviewer("alice")
    _reject_one(run, as_alice)
    trail = list(AuditEvent.objects.filter(run=run).order_by("seq"))
    assert any(e.action == "pass.decided" for e in trail)
    shown = payloads(trail)
    assert shown and not [p for p in shown if p["data"]["action"] == "pass.decided"]
    assert "pass.started" in {p["type"] for p in shown}  # the others' events still go out

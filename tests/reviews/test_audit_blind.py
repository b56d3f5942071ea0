"""Blind until submitted, provably (issue 36 item 1, DESIGN §8 "Blind by construction").

Reviewer B, whose own pass is open, reads `GET …/audit/` and plays the brute force of the issue
against reviewer A's withheld `pass.decided` events: candidate contents (decision × item × state ×
empty rationale, and A's exact content as the best guess anyone could make) hashed with
`aas_verify.trail.event_hash`, each compared with every hash the listing shows that depends on it.
A random salt, withheld with the content, leaves nothing to recover; events written before the salt
(unsalted) keep their hashes withheld while their content is.
"""
from __future__ import annotations

import itertools

import pytest
from django.test import Client

from aas_verify.trail import event_hash
from reconcile.models import IssueDecision, Mapping
from reviews import audit
from reviews.audit import Actor, verify_chain
from reviews.models import AuditEvent
from reviews.services import set_reviews_required
from tests.reconcile.test_coherence_properties import build_corpus_run

pytestmark = pytest.mark.django_db

DECISIONS = ("accept", "reject")
STATES = ("accepted", "rejected")


def _listing(client, run) -> list[dict]:
    events, url = [], f"/api/runs/{run.run_id}/audit/"
    while url:
        page = client.get(url).json()
        events += page["results"] if isinstance(page, dict) else page
        url = page.get("next") if isinstance(page, dict) else None
    return events


def _candidates(run, reviewer: str, number: int, truth: dict):
    """What B would try for one of A's pass.decided events, A's exact content last."""
    items = [f"mapping:{pk}" for pk in Mapping.objects.filter(run=run).values_list("pk", flat=True)]
    items += [f"issue:{pk}" for pk in IssueDecision.objects.filter(run=run).values_list("pk", flat=True)]
    for item, decision, state in itertools.product(items, DECISIONS, STATES):
        yield {"pass": number, "reviewer": reviewer, "decision": decision, "rationale": "",
               "changes": [{"item": item, "state": state, "rationale": ""}]}
    yield truth


def _brute_force(run, events: list[dict], truths: dict[int, dict]) -> dict[int, dict]:
    """Each withheld event whose content a candidate reproduces: the candidate's hash is followed down the
    chain through the events B can read, and compared with every hash or prev_hash the listing shows."""
    recovered = {}
    for index, event in enumerate(events):
        if not (isinstance(event["after"], dict) and "withheld" in event["after"]):
            continue
        prev = event.get("prev_hash") or (events[index - 1].get("hash") if index else audit.GENESIS)
        if not prev:
            continue
        truth = truths[event["seq"]]
        for candidate in _candidates(run, truth["reviewer"], truth["pass"], truth):
            guess = {**event, "prev_hash": prev, "before": None, "after": candidate}
            if _confirmed(run, events, index, guess):
                recovered[event["seq"]] = candidate
                break
    return recovered


def _confirmed(run, events: list[dict], index: int, guess: dict) -> bool:
    for salt in dict.fromkeys((guess.get("salt"), None, "")):  # the salt shown, the unsalted form, an empty one
        computed = event_hash(run.run_id, {**guess, "salt": salt})
        if computed == events[index].get("hash"):
            return True
        for later in events[index + 1:]:
            if later.get("prev_hash") == computed:
                return True
            if isinstance(later["after"], dict) and "withheld" in later["after"]:
                break  # its content is unknown: the chain cannot be followed further
            computed = event_hash(run.run_id, {**later, "prev_hash": computed})
            if computed == later.get("hash"):
                return True
    return False


def _a_decides(run, reviewer):
    """A (the `reviewer` persona) accepts three mappings and three issues, with empty rationales (a
    rejection needs one)."""
    base = f"/api/runs/{run.run_id}"
    for mapping in Mapping.objects.filter(run=run, state="proposed").order_by("pk")[:3]:
        answer = reviewer.post(f"{base}/mappings/{mapping.pk}/decision/",
                               {"decision": "accept", "rationale": "", "version": mapping.version}, format="json")
        assert answer.status_code == 200, answer.json()
    for issue in IssueDecision.objects.filter(run=run, state="proposed").order_by("pk")[:3]:
        answer = reviewer.post(f"{base}/integration-issues/{issue.pk}/decision/",
                               {"decision": "accept", "rationale": "", "version": issue.version}, format="json")
        assert answer.status_code == 200, answer.json()


def _truths(run) -> dict[int, dict]:
    return {e.seq: e.after for e in AuditEvent.objects.filter(run=run, action="pass.decided")}


@pytest.fixture
def two_reviews(run_factory):
    run = build_corpus_run(run_factory)
    set_reviews_required(run=run, count=2, actor=Actor.command("test"))
    return run


def test_another_reviewer_recovers_nothing_of_a_pass_from_the_trail(two_reviews, reviewer, second_reviewer):
    run = two_reviews
    _a_decides(run, reviewer)
    truths = _truths(run)
    assert len(truths) == 6
    events = _listing(second_reviewer, run)
    assert sum(1 for e in events if isinstance(e["after"], dict) and "withheld" in e["after"]) == 6
    assert _brute_force(run, events, truths) == {}
    # The brute force is sound: played against the listing A reads, it recovers every event.
    assert set(_brute_force(run, _withheld_again(_listing(reviewer, run)), truths)) == set(truths)
    assert verify_chain(run).ok


def _withheld_again(events: list[dict]) -> list[dict]:
    """A's own listing with pass.decided contents blanked (their salts kept): what B would see were the
    salt shown. The brute force must find every event in it, else it proves nothing."""
    return [{**e, "before": None, "after": {"withheld": "…"}} if e["action"] == "pass.decided" else e for e in events]


def test_unsalted_history_keeps_its_hashes_withheld_with_its_content(run_factory, reviewer, second_reviewer,
                                                                      monkeypatch):
    """Events written before the salt (and the signature): while A's unsalted pass.decided events are
    withheld, so are their hash and prev_hash, and every hash after them that would let B follow a guess
    down the chain."""
    with monkeypatch.context() as before_the_change:
        before_the_change.setattr(audit, "new_salt", lambda: "", raising=False)
        before_the_change.setattr(audit, "event_signature", lambda digest: "", raising=False)
        run = build_corpus_run(run_factory)
        set_reviews_required(run=run, count=2, actor=Actor.command("test"))
        _a_decides(run, reviewer)
    assert not AuditEvent.objects.filter(run=run).exclude(salt="").exists()
    audit.record_event(run=run, actor=Actor.command("test"), action="test.step", object_type="run",
                       object_id=run.run_id, after={"later": True})
    events = _listing(second_reviewer, run)
    assert _brute_force(run, events, _truths(run)) == {}
    for event in events:
        if event["action"] == "pass.decided":
            assert event["hash"] is None and event["prev_hash"] is None
    assert events[-1]["hash"] is None and events[-1]["prev_hash"] is None  # it follows them
    own = _listing(reviewer, run)
    assert all(e["hash"] for e in own)  # A reads every hash: with them the brute force finds every event
    assert set(_brute_force(run, _withheld_again(own), _truths(run))) == set(_truths(run))
    timeline = Client()
    timeline.force_login(second_reviewer.user)
    page = timeline.get(f"/runs/{run.run_id}/audit/").content.decode()
    assert not any(e.hash in page for e in AuditEvent.objects.filter(run=run, action="pass.decided"))
    check = verify_chain(run)
    assert check.ok, check.reason

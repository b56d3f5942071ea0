"""aas_verify's check of the independent reviews a signed statement records against the trail (no Django)."""
from __future__ import annotations

from aas_verify.trail import Trail, check_reviews

EVENTS = [
    {"seq": 7, "action": "pass.submitted", "actor": "user:alice", "after": {"pass": 1, "reviewer": "alice"}},
    {"seq": 9, "action": "pass.submitted", "actor": "user:bob", "after": {"pass": 2, "reviewer": "bob"}},
    {"seq": 12, "action": "conflict.settled", "actor": "user:judith",
     "after": {"item": "memory integration issue 1", "decision": "reject", "rationale": "alice is right"}},
]
PREDICATE = {"review_passes": [{"pass": 1, "reviewer": "alice"}, {"pass": 2, "reviewer": "bob"}],
             "adjudications": [{"item": "memory integration issue 1", "decision": "reject",
                                "adjudicator": "user:judith"}]}


def failures_of(predicate: dict) -> list[str]:
    failures = []
    check_reviews(Trail(run_id="AAS-2026-10-02-x-01", events=EVENTS), predicate, failures)
    return [f.line() for f in failures]


def test_passes_and_adjudications_the_trail_records_hold():
    assert failures_of(PREDICATE) == []


def test_a_pass_the_trail_never_submitted_is_named():
    forged = PREDICATE | {"review_passes": [{"pass": 1, "reviewer": "alice"}, {"pass": 2, "reviewer": "mallory"}]}
    [line] = failures_of(forged)
    assert "review pass 2 by mallory" in line and "predicate.review_passes[1]" in line


def test_an_adjudication_with_another_decision_or_adjudicator_is_named():
    for changed in ({"decision": "accept"}, {"adjudicator": "user:alice"}):
        forged = PREDICATE | {"adjudications": [PREDICATE["adjudications"][0] | changed]}
        [line] = failures_of(forged)
        assert "memory integration issue 1" in line and "predicate.adjudications[0]" in line

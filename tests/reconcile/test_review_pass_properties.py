"""Property (issue 21): two reviewers play random decision sequences in their blind passes on the
corpus run, finish them as a hurried reviewer would, and submit. Read back from the audit trail (each
`pass.decided` event's changes, not the passes' own rows), every item both passes left alike is the
run's decision, every item they left differently is a conflict, and approval is possible exactly
when every conflict is settled.
"""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import TestCase
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from reconcile.models import AmendmentDecision, CanonicalRecord, Conflict, IssueDecision, Mapping
from reconcile.passes.consensus import PassNotFinished, settle_conflict, submit_pass
from reconcile.passes.world import PassRefused
from reconcile.services import IncoherentDecision
from results.services import ApprovalBlocked, approve_run
from reviews.audit import Actor
from reviews.models import AuditEvent
from reviews.services import issue_token, set_reviews_required
from tests.reconcile import test_coherence_properties as props
from tests.reconcile.pass_helpers import decisions_in_own_pass

pytestmark = pytest.mark.django_db

EXAMPLES = settings(max_examples=4, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _user(name: str, **kwargs):
    issue_token(name=name, role="reviewer", actor=Actor.command("test"), **kwargs)
    user = get_user_model().objects.get(username=name)
    return user, Actor.for_user(user)


def _as(actor, body):
    saved = props.REVIEWER
    props.REVIEWER = actor
    try:
        with decisions_in_own_pass(props):  # each decision in the actor's pass, as their requests take it
            body()
    finally:
        props.REVIEWER = saved


def _initial(run) -> dict[str, tuple[str, str]]:
    """Every compared item's state before any pass decided: (state, compared target)."""
    found = {}
    for m in Mapping.objects.filter(run=run):
        found[f"mapping:{m.pk}"] = (m.state, "")
    for i in IssueDecision.objects.filter(run=run):
        found[f"issue:{i.pk}"] = (i.state, "")
    for a in AmendmentDecision.objects.filter(run=run):
        found[f"amendment:{a.pk}"] = (a.state, "")
    for c in CanonicalRecord.objects.filter(run=run):
        found[f"canonical:{c.canonical_id}"] = (c.state, "")
    return found


def _from_trail(run, reviewer: str, initial) -> dict[str, tuple[str, str]]:
    """What one pass left each item at, read from its `pass.decided` events alone."""
    state = {}
    for event in AuditEvent.objects.filter(run=run, action="pass.decided").order_by("seq"):
        if event.after["reviewer"] != reviewer:
            continue
        for change in event.after["changes"]:
            if change["item"] in initial:
                state[change["item"]] = change
    left = {}
    for item, change in state.items():
        target = ""
        if item.startswith("mapping:") and change["state"] == "accepted":
            mapping = Mapping.objects.get(pk=int(item.split(":")[1]))
            target = "" if mapping.relation == "new" else change.get("target", "")
        left[item] = (change["state"], target)
    return left


def _compared(item: str) -> bool:
    if item.startswith("amendment:"):
        return AmendmentDecision.objects.get(pk=int(item.split(":")[1])).mapping_id is None
    return True


moves = st.lists(props.step, min_size=0, max_size=8)


@pytest.fixture
def corpus_run(run_factory):
    run = props.build_corpus_run(run_factory)
    set_reviews_required(run=run, count=2, actor=Actor.command("test"))
    return run


def test_consensus_is_the_agreed_items_and_conflicts_the_disagreed(corpus_run):
    run = corpus_run
    alice, as_alice = _user("alice")
    bob, as_bob = _user("bob")
    judge, as_judge = _user("judge", adjudicate=True)
    initial = _initial(run)

    @EXAMPLES
    @given(first=moves, second=moves)
    def check(first, second):
        def body():
            for actor, sequence in ((as_alice, first), (as_bob, second)):
                _as(actor, lambda: props.play(run, sequence))
                _as(actor, lambda: props.settle(run))
            try:
                submit_pass(run=run, reviewer=alice, actor=as_alice)
                with TestCase.captureOnCommitCallbacks(execute=True):  # the worker's consensus, in process
                    submit_pass(run=run, reviewer=bob, actor=as_bob)
            except (PassNotFinished, PassRefused):
                assume(False)  # a pass the hurried reviewer left contradictory is not submittable: no example
            a, b = _from_trail(run, "alice", initial), _from_trail(run, "bob", initial)
            items = {i for i in set(a) | set(b) if _compared(i)}
            conflicts = {f"{c.model}:{c.key}": c for c in Conflict.objects.filter(run=run)}
            for item in items:
                left_a, left_b = a.get(item, initial[item]), b.get(item, initial[item])
                if left_a != left_b:
                    assert item in conflicts, item
                elif item not in conflicts:  # agreed (an agreed decision the services refused is a conflict too)
                    model, key = item.split(":", 1)
                    row = (CanonicalRecord.objects.get(run=run, canonical_id=key) if model == "canonical" else
                           {"mapping": Mapping, "issue": IssueDecision, "amendment": AmendmentDecision}[model]
                           .objects.get(pk=int(key)))
                    assert row.state == left_a[0], (item, row.state, left_a)
                else:
                    assert conflicts[item].note, item  # agreed, yet a conflict: it says why
            assert set(conflicts) <= items
            # Approval: refused while a conflict is open, possible once every one is settled.
            for conflict in conflicts.values():
                with pytest.raises(ApprovalBlocked) as blocked:
                    approve_run(run=run, note="checked", actor=as_judge)
                assert "conflict_open" in {x.code for x in blocked.value.blockers}
                choices = [d["state"] for d in conflict.decisions]
                settled = False
                for state in dict.fromkeys(choices):
                    decision = {"accepted": "accept", "rejected": "reject", "carried": "carry",
                                "active": "keep", "proposed": "reject"}[state]
                    try:
                        settle_conflict(conflict=conflict, decision=decision, rationale="adjudicated",
                                        reviewer=judge, actor=as_judge, expected_version=1)
                        settled = True
                        break
                    except (IncoherentDecision, Exception) as refused:  # noqa: B014
                        assert "contradict" in str(refused) or "already" in str(refused) or \
                               "one of" in str(refused), refused
                assume(settled)
            run.refresh_from_db()
            try:
                approve_run(run=run, note="checked", actor=as_judge)
            except ApprovalBlocked as blocked:
                codes = {x.code for x in blocked.value.blockers}
                assert not codes & {"conflict_open", "pass_missing"}, codes
        props._rolled_back(run, body)

    check()

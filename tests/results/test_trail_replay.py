"""The result comes from the signed trail (issue 36 item 8, DESIGN §8).

The app's database role can UPDATE the decision tables. A decision changed there, with no event (a
plain ORM update, as the app role can issue it), must not reach a result: approval replays the run's
decisions from its signed trail and refuses, naming the row and the event; finalization does the same
and fails the run.
"""
from __future__ import annotations

import time

import pytest
from django.db import connection, transaction

from reconcile.models import CanonicalRecord, Mapping
from reconcile.services import revise_run
from reconcile.trail_replay import TRAIL_CODE, replay, trail_blockers
from results.services import ApprovalBlocked, approve_run, finalize_run
from reviews.audit import Actor
from reviews.models import AuditEvent, Run
from tests.reconcile.factories import WORKER
from tests.reviews.test_audit_head import app_role  # noqa: F401  (a fixture)
from tests.results.test_result_api import API, NOTE, decide_everything, upload_corpus_run

pytestmark = pytest.mark.django_db

REVIEWER = Actor("user:reviewer-1")


@pytest.fixture
def decided(agent, reviewer, django_capture_on_commit_callbacks):
    """The corpus run uploaded by an agent and decided by a reviewer over the API, every event signed."""
    run = upload_corpus_run(agent, django_capture_on_commit_callbacks)
    decide_everything(reviewer)
    assert trail_blockers(run) == []
    return run


@pytest.fixture
def as_app(app_role):  # noqa: F811
    """A plain ORM UPDATE bypassing the services (no event), run as the app's database role."""
    def update(query, **values) -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL ROLE {connection.ops.quote_name(app_role)}")
            assert query.update(**values) == 1
    return update


def _accepted(run: Run, relation: str) -> Mapping:
    """An accepted mapping of `relation` ("placing": any relation with a target, not a `new` one first)."""
    found = Mapping.objects.filter(run=run, state="accepted").exclude(target="")
    if relation != "placing":
        return found.filter(relation=relation).order_by("pk").first()
    return sorted(found, key=lambda m: (m.relation == "new", m.pk))[0]


def _event_of(mapping: Mapping) -> AuditEvent:
    return AuditEvent.objects.filter(run=mapping.run, object_type="mapping", object_id=str(mapping.pk),
                                     action="mapping.accepted").order_by("-seq").first()


def _another_target(run: Run, mapping: Mapping) -> str:
    """An active canonical record of the mapping's target's kind that it does not name: a coherent edit."""
    kind = CanonicalRecord.objects.get(run=run, canonical_id=mapping.target).kind
    taken = set(Mapping.objects.filter(run=run, state="accepted").values_list("target", flat=True))
    return (CanonicalRecord.objects.filter(run=run, kind=kind, state="active").exclude(canonical_id__in=taken)
            .exclude(canonical_id=mapping.target).order_by("pk").values_list("canonical_id", flat=True).first()
            or CanonicalRecord.objects.filter(run=run, kind=kind, state="active")
            .exclude(canonical_id=mapping.target).values_list("canonical_id", flat=True).first())


def _named(blockers, mapping: Mapping) -> list:
    event = _event_of(mapping)
    return [b for b in blockers if b.code == TRAIL_CODE and b.record == f"mapping:{mapping.pk}"
            and f"event #{event.seq} (mapping.accepted)" in b.message]


def test_an_accepted_mapping_flipped_to_rejected_by_the_app_role_refuses_approval_naming_it(decided, as_app, reviewer):
    mapping = _accepted(decided, "new")
    as_app(Mapping.objects.filter(pk=mapping.pk), state="rejected", rationale="never mind")
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=decided, note=NOTE, actor=REVIEWER)
    [named] = _named(blocked.value.blockers, mapping)
    assert "is rejected in the database" in named.message and "left it accepted" in named.message
    response = reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    assert response.status_code == 409
    assert any(b["code"] == TRAIL_CODE and b["record"] == f"mapping:{mapping.pk}"
               for b in response.json()["error"]["details"]["blockers"])
    decided.refresh_from_db()
    assert decided.status == Run.Status.IN_REVIEW


def test_an_accepted_mapping_s_target_changed_by_the_app_role_refuses_approval_naming_it(decided, as_app):
    mapping = _accepted(decided, "placing")
    other = _another_target(decided, mapping)
    as_app(Mapping.objects.filter(pk=mapping.pk), target=other)
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=decided, note=NOTE, actor=REVIEWER)
    [named] = _named(blocked.value.blockers, mapping)
    assert f"target {other!r} (the trail: {mapping.target!r})" in named.message


@pytest.mark.parametrize("edit", ["flipped", "retargeted"])
def test_a_decision_changed_by_the_app_role_after_approval_fails_finalization_naming_it(
        decided, edit, as_app, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=decided, note=NOTE, actor=REVIEWER)
    mapping = _accepted(decided, "placing")
    values = {"state": "rejected", "rationale": "never mind"} if edit == "flipped" else {
        "target": _another_target(decided, mapping)}
    as_app(Mapping.objects.filter(pk=mapping.pk), **values)
    assert finalize_run(run=decided, actor=WORKER) is None
    decided.refresh_from_db()
    assert decided.status == Run.Status.FAILED
    assert "the decisions differ from the signed audit trail" in decided.status_reason
    assert f"Mapping {mapping.pk} ({mapping.source} {mapping.relation}" in decided.status_reason
    assert f"event #{_event_of(mapping).seq} (mapping.accepted)" in decided.status_reason


def test_a_canonical_record_rejected_by_the_app_role_is_named(decided, as_app):
    record = CanonicalRecord.objects.filter(run=decided, state="active").order_by("pk").first()
    as_app(CanonicalRecord.objects.filter(pk=record.pk), state="rejected", rationale="gone")
    blockers = trail_blockers(decided)
    assert [b.record for b in blockers] == [f"canonical:{record.canonical_id}"]
    assert "is rejected in the database" in blockers[0].message


def test_a_decided_row_with_no_decision_event_is_named(decided):
    rejected = Mapping.objects.filter(run=decided, state="rejected").order_by("pk").first()
    Mapping.objects.filter(pk=rejected.pk).update(state="accepted")
    forged = Mapping.objects.create(run=decided, source="MEM-OBJ-9", relation="no-counterpart", origin="agent",
                                    proposed_by="token:agent-1", state="accepted")
    named = {b.record: b.message for b in trail_blockers(decided)}
    assert "is accepted in the database" in named[f"mapping:{rejected.pk}"]
    assert "left it rejected" in named[f"mapping:{rejected.pk}"]
    assert "its trail has no decision on it" in named[f"mapping:{forged.pk}"]


def test_an_unsigned_event_in_the_run_s_chain_refuses_approval(decided, monkeypatch):
    from reviews import audit

    monkeypatch.setattr(audit, "event_signature", lambda digest: "")
    mapping = Mapping.objects.filter(run=decided, state="accepted").order_by("pk").first()
    from reconcile import services
    services.decide_mapping(mapping=mapping, decision="reopen", rationale="again", actor=REVIEWER,
                            expected_version=mapping.version)
    monkeypatch.undo()
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=decided, note=NOTE, actor=REVIEWER)
    assert any(b.code == TRAIL_CODE and "does not verify" in b.message and "unsigned" in b.message
               for b in blocked.value.blockers)


def test_a_revision_s_carried_decisions_are_read_from_the_trail_of_the_run_it_revises(
        decided, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        approve_run(run=decided, note=NOTE, actor=REVIEWER)
    decided.refresh_from_db()
    assert decided.status == Run.Status.FINAL
    with django_capture_on_commit_callbacks(execute=True):
        successor = revise_run(run=decided, actor=REVIEWER)
    assert trail_blockers(successor) == []  # every carried decision as the predecessor's trail says it
    carried = _accepted(successor, "placing")
    assert replay(successor).mappings[carried.pk].run_id == decided.run_id
    Mapping.objects.filter(pk=carried.pk).update(state="rejected", rationale="quietly")
    [named] = trail_blockers(successor)
    assert named.record == f"mapping:{carried.pk}" and f"of run {decided.run_id}'s trail" in named.message


def test_replaying_a_bulk_accept_of_2000_suggestions_takes_little_time(django_db_blocker):
    """The replay and the chain check at approval, measured at 2,000 accepted suggestions."""
    from reconcile import services
    from tests.reconcile.page_factories import build_reconcile_run

    run, _member = build_reconcile_run(records=2000, run_id="AAS-2026-09-25-replaytime-01")
    assert services.bulk_accept_suggestions(run=run, min_score=0.0, actor=REVIEWER, rationale="bulk") >= 1900
    started = time.perf_counter()
    assert trail_blockers(run) == []
    spent = time.perf_counter() - started
    print(f"replay and chain check at {Mapping.objects.filter(run=run).count()} mappings: {spent:.2f} s")
    assert spent < 15


def test_a_pass_entry_changed_by_the_app_role_refuses_approval_naming_it(run_factory, as_app):
    from reconcile.models import Conflict, PassEntry
    from reconcile.passes.consensus import settle_conflict
    from reviews.services import set_reviews_required
    from tests.reconcile.test_coherence_properties import build_corpus_run
    from tests.reconcile.test_review_passes import _two_passes_one_disagreement

    run = build_corpus_run(run_factory)
    set_reviews_required(run=run, count=2, actor=Actor.command("test"))
    _alice, _as_alice, judge, as_judge = _two_passes_one_disagreement(run)
    conflict = Conflict.objects.get(run=run)
    settle_conflict(conflict=conflict, decision="reject", rationale="alice is right", reviewer=judge,
                    actor=as_judge, expected_version=1)
    entry = PassEntry.objects.filter(review_pass__run=run, review_pass__number=1, model="issue").order_by("pk").first()
    assert trail_blockers(run) == []
    as_app(PassEntry.objects.filter(pk=entry.pk), values=entry.values | {"state": "accepted", "rationale": "agreed"})
    with pytest.raises(ApprovalBlocked) as blocked:
        approve_run(run=run, note="checked", actor=as_judge)
    [named] = [b for b in blocked.value.blockers if b.code == TRAIL_CODE]
    assert named.record == f"pass 1 issue:{entry.key}" and "(pass.decided)" in named.message
    assert "state 'accepted' (the trail: 'rejected')" in named.message

"""Bulk accept at scale (DESIGN §5 "bulk accept of the app's confident suggestions"): what it costs per
suggestion does not grow with the run, and it decides exactly what accepting each suggestion alone
decides, in a single review and in an independent review pass.

Before this, every acceptance resolved its target by reading every canonical ID and every accepted
mapping of the run (`_resolver(run)`), so a bulk accept of a 2,000-record run took about 75 s and a
gunicorn worker's 60 s timeout rolled it back.
"""
from __future__ import annotations

from contextlib import contextmanager

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconcile import services
from reconcile.models import CanonicalRecord, Mapping, ReviewPass
from reconcile.passes.world import pass_world
from reconcile.services.canonical_ids import resolve_target, resolver
from reviews.audit import Actor
from reviews.models import AuditEvent
from reviews.services import set_reviews_required
from tests.reconcile.page_factories import build_reconcile_run, make_run
from tests.reconcile.pass_helpers import own_pass

pytestmark = pytest.mark.django_db

# IDs a stated target can be: bare numbered and slug canonical IDs, their RT- and member forms.
CANONICAL_IDS = ["OBJ-1", "OBJ-2", "OBJ-7", "RTE-3", "OBJ-store", "RT-OBJ-store", "RT-OBJ-2", "MEM-OBJ-1"]
STATED = CANONICAL_IDS + ["", "RT-OBJ-1", "RT-OBJ-7", "RT-RTE-3", "MEM-OBJ-2", "EPI-OBJ-3", "OBJ-9", "RT-OBJ-x",
                          "MEM-OBJ-slot", "not an id"]
mapping_rows = st.lists(st.tuples(st.sampled_from(STATED[:-1]), st.sampled_from(list(Mapping.Relation.values)),
                                  st.sampled_from(STATED), st.sampled_from(["proposed", "accepted", "rejected",
                                                                            "stale"])), max_size=12)


@contextmanager
def rolled_back():
    point = transaction.savepoint()
    try:
        yield
    finally:
        transaction.savepoint_rollback(point)


def test_resolving_one_target_reads_the_run_as_resolving_it_against_the_whole_run_does():
    run = make_run("AAS-2026-09-25-resolve-01")

    @settings(max_examples=150, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(canonical=st.sets(st.sampled_from(CANONICAL_IDS)), mappings=mapping_rows,
           stated=st.lists(st.sampled_from(STATED), min_size=1, max_size=6))
    def same_answer(canonical, mappings, stated):
        with rolled_back():
            CanonicalRecord.objects.bulk_create([
                CanonicalRecord(run=run, canonical_id=c, kind=c.split("-")[-2], origin="runtime") for c in canonical])
            Mapping.objects.bulk_create([
                Mapping(run=run, source=source, relation=relation, target=target, state=state,
                        origin=Mapping.Origin.RECONCILIATION, proposed_by="test")
                for source, relation, target, state in mappings])
            whole_run = resolver(run)
            for target in stated:
                assert resolve_target(run, target) == (whole_run(target) if target else target), target

    same_answer()


def _reviewer(name: str):
    from django.contrib.auth import get_user_model

    from reviews.services import issue_token

    issue_token(name=name, role="reviewer", actor=Actor.command("test"))
    return get_user_model().objects.get(username=name)


def _twenty_suggestions(run) -> list[int]:
    """The first ten `same` and the first ten `new` suggestions of a factory run."""
    pending = services.bulk_accept_candidates(run, 0.0)
    return ([m.pk for m in pending.filter(relation="same")[:10]]
            + [m.pk for m in pending.filter(relation="new")[:10]])


def _measured_bulk_accept(run, actor, only) -> tuple[int, int]:
    """(SQL statements, rows the SELECTs returned) of one bulk accept of the suggestions `only`."""
    rows = [0]

    def count_rows(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql.lstrip().upper().startswith("SELECT") and context["cursor"].rowcount > 0:
            rows[0] += context["cursor"].rowcount
        return result

    with CaptureQueriesContext(connection) as statements, connection.execute_wrapper(count_rows):
        accepted = services.bulk_accept(run=run, min_score=0.0, actor=actor, rationale="bulk", only=only)
    assert len(accepted) == len(only)
    return len(statements), rows[0]


def test_a_bulk_accept_reads_the_same_per_suggestion_at_20_and_at_200_records():
    """The same twenty suggestions accepted in runs of 20 and 200 records: the same statements and the same
    rows read (before, each acceptance read every canonical ID and accepted mapping of the run). Only a
    single review: a review pass lays itself over every row of the run whatever it decides, so its rows
    read grow with the run by design (reconcile/passes/world.py)."""
    user = _reviewer("bulk-reviewer")
    measured = {}
    for size in (20, 200):
        run, _member = build_reconcile_run(records=size, run_id=f"AAS-2026-09-25-bulk{size}-01")
        measured[size] = _measured_bulk_accept(run, Actor.for_user(user), _twenty_suggestions(run))
    (small_statements, small_rows), (large_statements, large_rows) = measured[20], measured[200]
    assert (large_statements, large_rows) == (small_statements, small_rows)
    # Ten `same` and ten `new` acceptances: before, about 16.5 statements each.
    assert small_statements / 20 <= 10, small_statements


def _events(run, after_seq: int) -> list[tuple]:
    return [(e.action, e.object_type, e.object_id, e.before, _untimed(e.after))
            for e in AuditEvent.objects.filter(run=run, seq__gt=after_seq).order_by("seq")]


def _untimed(values):
    if isinstance(values, dict):
        return {k: _untimed(v) for k, v in values.items() if k not in ("decided_at", "created_at")}
    if isinstance(values, list):
        return [_untimed(v) for v in values]
    return values


def _head(run) -> int:
    return AuditEvent.objects.filter(run=run).order_by("-seq").values_list("seq", flat=True).first() or 0


def _one_by_one(run, actor) -> None:
    """Each suggestion accepted alone, as bulk_accept accepts it (skipping what the services refuse); on a
    run in independent review, in the actor's own pass, each as its own request."""
    for mapping in services.bulk_accept_candidates(run, 0.0):
        try:
            own_pass(services.decide_mapping)(mapping=mapping, decision="accept", rationale="bulk", actor=actor,
                                    expected_version=mapping.version, check_coherence=False)
        except (services.StateConflict, services.ProposalError):
            continue


def _with_a_taken_place_and_a_target_to_resolve(run) -> None:
    """Suggestions a bulk accept must refuse or resolve: a record that already has its place, and one
    whose target is a member record accepted into the shared set as `new` earlier in the same bulk."""
    first_same, first_new = (Mapping.objects.filter(run=run, relation=r).order_by("pk").first()
                             for r in ("same", "new"))
    Mapping.objects.create(run=run, source=first_same.source, relation="no-counterpart", target="",
                           origin=Mapping.Origin.AGENT, proposed_by="test", state="accepted")
    Mapping.objects.create(run=run, source=f"EPI-{first_new.source.removeprefix('MEM-')}", relation="same",
                           target=first_new.source, origin=Mapping.Origin.SUGGESTED, proposed_by="app", score=0.9)


def test_a_bulk_accept_writes_the_events_accepting_each_suggestion_alone_writes():
    user = _reviewer("bulk-reviewer")
    run, _member = build_reconcile_run(records=30, run_id="AAS-2026-09-25-bulkevents-01")
    _with_a_taken_place_and_a_target_to_resolve(run)
    mark = _head(run)
    with rolled_back():
        accepted = services.bulk_accept(run=run, min_score=0.0, actor=Actor.for_user(user), rationale="bulk")
        in_bulk = _events(run, mark)
        rows = list(Mapping.objects.filter(run=run).order_by("pk").values_list("pk", "state", "target", "version"))
        canonical = list(CanonicalRecord.objects.filter(run=run).order_by("canonical_id")
                         .values_list("canonical_id", "state", "origin", "source_record_id", "number"))
    _one_by_one(run, Actor.for_user(user))
    assert in_bulk == _events(run, mark)
    assert {a for a, *_ in in_bulk} == {"mapping.accepted"} and len(in_bulk) == len(accepted) == 30
    assert rows == list(Mapping.objects.filter(run=run).order_by("pk").values_list("pk", "state", "target", "version"))
    assert canonical == list(CanonicalRecord.objects.filter(run=run).order_by("canonical_id")
                             .values_list("canonical_id", "state", "origin", "source_record_id", "number"))
    # Its target entered the shared set by an acceptance of the same bulk accept.
    resolved = Mapping.objects.get(run=run, source__startswith="EPI-")
    assert resolved.state == "accepted"
    assert CanonicalRecord.objects.filter(run=run, canonical_id=resolved.target, origin="mapping").exists()
    placed = Mapping.objects.get(run=run, source=resolved.target.replace("EPI-", "MEM-"), relation="new")
    assert placed.state == "accepted"


def _entries(run, reviewer) -> list[tuple]:
    review_pass = ReviewPass.objects.get(run=run, reviewer=reviewer)
    return sorted((e.model, e.key, e.created, e.base_version, str(_untimed(e.values))) for e in review_pass.entries.all())


def test_a_bulk_accept_in_a_review_pass_records_the_pass_entries_accepting_each_alone_records():
    user = _reviewer("bulk-reviewer")
    run, _member = build_reconcile_run(records=30, run_id="AAS-2026-09-25-bulkpass-01")
    _with_a_taken_place_and_a_target_to_resolve(run)
    set_reviews_required(run=run, count=2, actor=Actor.command("test"))
    shared = list(Mapping.objects.filter(run=run).order_by("pk").values_list("pk", "state", "target", "version"))
    with rolled_back():
        with pass_world(run, user):
            accepted = services.bulk_accept(run=run, min_score=0.0, actor=Actor.for_user(user), rationale="bulk")
        in_bulk = _entries(run, user)
        decided = [e.after for e in AuditEvent.objects.filter(run=run, action="pass.decided")]
        # Nothing of the pass reached the shared rows.
        assert shared == list(Mapping.objects.filter(run=run).order_by("pk")
                              .values_list("pk", "state", "target", "version"))
    assert len(accepted) == 30 and len(decided) == 1 and decided[0]["decision"] == "bulk_accept"
    assert sum(1 for c in decided[0]["changes"] if c["item"].startswith("mapping:")) == 30
    _one_by_one(run, Actor.for_user(user))
    assert in_bulk == _entries(run, user)


def test_a_suggestion_refused_after_its_event_leaves_the_chain_whole(reviewer, monkeypatch):
    """A suggestion whose savepoint rolls back after its event was written must not leave the next event
    linked to that event (as it did when a bulk accept carried the chain head in memory)."""
    from reconcile.services import acceptance
    from reviews.audit import verify_chain

    run, _member = build_reconcile_run(records=20, run_id="AAS-2026-12-03-bulkchain-01")
    real, calls = acceptance.BulkReads.accepted, []

    def refuse_the_second(self, mapping, canonical):
        calls.append(mapping.pk)
        if len(calls) == 2:
            raise services.ProposalError("refused after its event (test)", "target")
        return real(self, mapping, canonical)

    monkeypatch.setattr(acceptance.BulkReads, "accepted", refuse_the_second)
    accepted = services.bulk_accept(run=run, min_score=0.0, actor=Actor.for_user(reviewer.user), rationale="bulk")
    assert len(calls) > 2 and len(accepted) == len(calls) - 1
    assert Mapping.objects.filter(pk=calls[1], state=Mapping.State.PROPOSED).exists()
    run.refresh_from_db()
    assert verify_chain(run).ok
    assert AuditEvent.objects.filter(run=run, action="mapping.accepted").count() == len(accepted)

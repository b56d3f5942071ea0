"""Two reviewers decide the same item at the same moment, on two real database connections (DESIGN §10)."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from reconcile import services
from reconcile.models import CanonicalRecord, IssueDecision, Mapping
from reviews.audit import Actor, verify_chain
from reviews.models import AuditEvent
from tests.reconcile.factories import MEMORY_SMALL, RUNTIME_SLUG, upload

pytestmark = pytest.mark.django_db(transaction=True)


def race(decide, n: int = 2) -> list:
    """Run `decide(i)` in n threads released together; each thread has its own connection."""
    barrier = threading.Barrier(n)
    outcomes: list = [None] * n

    def worker(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes[i] = decide(i)
        except Exception as error:  # noqa: BLE001 — the outcome under test
            outcomes[i] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return outcomes


@pytest.fixture
def run(run_factory):
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload(run, "memory", MEMORY_SMALL)
    return run


def test_two_reviewers_accepting_the_same_mapping_one_wins_the_other_is_stale(run):
    mapping = Mapping.objects.get(run=run, source="MEM-RTE-mcp-read")
    events = AuditEvent.objects.filter(run=run).count()

    outcomes = race(lambda i: services.decide_mapping(
        mapping=Mapping.objects.select_related("run").get(pk=mapping.pk),
        decision="accept" if i == 0 else "reject", rationale=f"reviewer {i}",
        actor=Actor(f"user:reviewer-{i}"), expected_version=1))

    winners = [o for o in outcomes if isinstance(o, Mapping)]
    losers = [o for o in outcomes if isinstance(o, services.StaleVersion)]
    assert (len(winners), len(losers)) == (1, 1), outcomes
    assert losers[0].current.version == 2
    assert losers[0].current.state == winners[0].state
    mapping.refresh_from_db()
    assert (mapping.version, mapping.state) == (2, winners[0].state)
    assert AuditEvent.objects.filter(run=run).count() == events + 1
    assert verify_chain(run).ok


def test_two_reviewers_accepting_the_same_new_mapping_allocate_one_record(run):
    mapping = Mapping.objects.get(run=run, source="MEM-OBJ-memory-facts")
    assert mapping.relation == "new"

    outcomes = race(lambda i: services.decide_mapping(
        mapping=Mapping.objects.select_related("run").get(pk=mapping.pk), decision="accept", rationale="",
        actor=Actor(f"user:reviewer-{i}"), expected_version=1))

    assert sorted(type(o).__name__ for o in outcomes) == ["Mapping", "StaleVersion"], outcomes
    assert CanonicalRecord.objects.filter(run=run, origin="mapping").count() == 1


def test_two_reviewers_deciding_the_same_issue_one_wins(run):
    decision = IssueDecision.objects.filter(run=run).first()

    outcomes = race(lambda i: services.decide_issue(
        issue_decision=IssueDecision.objects.select_related("run").get(pk=decision.pk), decision="accept",
        rationale="", actor=Actor(f"user:reviewer-{i}"), expected_version=1))

    assert sorted(type(o).__name__ for o in outcomes) == ["IssueDecision", "StaleVersion"], outcomes
    decision.refresh_from_db()
    assert decision.version == 2

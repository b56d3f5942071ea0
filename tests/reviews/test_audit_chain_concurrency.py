"""Concurrent appends to one chain: every writer gets its own seq, none forks the chain."""
from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from reviews.audit import Actor, record_event, verify_chain
from reviews.models import AuditEvent

WRITERS = 12


def _race(target, n):
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i):
        try:
            target(i, barrier)
        except BaseException as error:  # noqa: BLE001 — reported by the test below
            errors.append(error)
        finally:
            connection.close()  # each thread had its own connection

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return errors


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_to_one_run_get_seqs_without_gaps_or_forks(run_factory):
    run = run_factory()

    def append(i, barrier):
        with transaction.atomic():
            barrier.wait(10)  # every writer is inside its transaction before any appends
            record_event(run=run, actor=Actor(f"token:agent-{i}"), action="test.concurrent", object_type="run",
                         object_id=run.run_id, after={"writer": i})
            time.sleep(0.01)  # hold the transaction open so the others really wait

    assert _race(append, WRITERS) == []
    events = list(AuditEvent.objects.filter(run=run).order_by("seq"))
    assert [e.seq for e in events] == list(range(1, WRITERS + 2))
    assert sorted(e.after["writer"] for e in events[1:]) == list(range(WRITERS))
    assert all(later.prev_hash == earlier.hash for earlier, later in zip(events, events[1:]))
    assert verify_chain(run).ok and verify_chain(run).events == WRITERS + 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_to_different_runs_keep_each_chain_whole(run_factory):
    runs = [run_factory() for _ in range(3)]

    def append(i, barrier):
        barrier.wait(10)
        record_event(run=runs[i % 3], actor=Actor.worker("test"), action="test.concurrent", object_type="run",
                     object_id=runs[i % 3].run_id, after={"writer": i})

    assert _race(append, WRITERS) == []
    for run in runs:
        assert verify_chain(run).ok and verify_chain(run).events == 1 + WRITERS // 3


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_without_a_run_keep_the_token_chain_whole():
    def append(i, barrier):
        barrier.wait(10)
        record_event(run=None, actor=Actor.command("test"), action="token.issued", object_type="api_token",
                     object_id=i)

    assert _race(append, WRITERS) == []
    assert verify_chain(None).ok and verify_chain(None).events == WRITERS

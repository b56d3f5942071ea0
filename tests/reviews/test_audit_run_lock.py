"""record_event re-locks the run only when this transaction does not hold its lock already (issue 14).

The run's row lock orders its audit chain. `lock_run` takes it first in every
service; `record_event` then sends no second `FOR UPDATE`, but takes the lock
itself in any transaction where `lock_run` did not, including a later
transaction on the same connection and after a savepoint that took the lock
was rolled back (PostgreSQL released it then).
"""
from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from reviews.audit import Actor, lock_run, record_event, verify_chain
from reviews.models import AuditEvent

ACTOR = Actor.command("test")


def run_locks(queries) -> int:
    return sum(1 for q in queries.captured_queries if '"reviews_run"' in q["sql"] and "FOR UPDATE" in q["sql"])


def append(run, n):
    return record_event(run=run, actor=ACTOR, action="test.lock", object_type="run", object_id=run.run_id,
                        after={"n": n})


@pytest.mark.django_db(transaction=True)
def test_an_event_after_lock_run_in_the_same_transaction_sends_no_second_lock(run_factory):
    run = run_factory()
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        locked = lock_run(run)
        append(locked, 1)
        append(run, 2)  # any instance of the same run
    assert run_locks(queries) == 1
    assert verify_chain(run).ok


@pytest.mark.django_db(transaction=True)
def test_a_later_transaction_on_the_same_connection_takes_the_lock_again(run_factory):
    run = run_factory()
    with transaction.atomic():
        append(lock_run(run), 1)
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        append(run, 2)
    assert run_locks(queries) == 1  # record_event's own lock: the first transaction's is gone


@pytest.mark.django_db(transaction=True)
def test_a_lock_taken_in_a_rolled_back_savepoint_does_not_count(run_factory):
    run = run_factory()
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        try:
            with transaction.atomic():
                lock_run(run)
                raise RuntimeError("roll back the savepoint, and the row lock with it")
        except RuntimeError:
            pass
        append(run, 1)
    assert run_locks(queries) == 2
    assert AuditEvent.objects.filter(run=run, action="test.lock").count() == 1


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_each_event_locks_for_itself(run_factory):
    run = run_factory()
    with CaptureQueriesContext(connection) as queries:
        append(run, 1)
        append(run, 2)
    assert run_locks(queries) == 2
    assert verify_chain(run).ok and verify_chain(run).events == 3

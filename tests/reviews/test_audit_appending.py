"""Events written in an `appending` block (reviews.audit.appending, DESIGN §8, §11): the run row's chain head
moves once, when the block ends, and the trail is whole: what writing the same events one by one leaves,
savepoints rolled back in the block taking their events with them. Read back by plain SQL and verify_chain."""
from __future__ import annotations

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviews.audit import Actor, appending, lock_run, record_event, verify_chain

pytestmark = pytest.mark.django_db
ACTOR = Actor.command("test")


class Refused(Exception):
    pass


def _event(run, action: str, **kwargs):
    return record_event(run=run, actor=ACTOR, action=action, object_type="run", object_id=run.run_id, **kwargs)


def _trail(run) -> tuple[list[tuple[int, str, bool]], tuple, tuple | None]:
    """(seq, action, whether prev_hash is the previous row's hash) of every event, the run row's (seq, hash) and
    the last event's (seq, hash)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT seq, action, hash, prev_hash FROM reviews_auditevent WHERE run_id = %s ORDER BY seq",
                       [run.pk])
        rows = cursor.fetchall()
        cursor.execute("SELECT audit_head_seq, audit_head_hash FROM reviews_run WHERE id = %s", [run.pk])
        head = cursor.fetchone()
    linked = [(seq, action, i == 0 or prev == rows[i - 1][2]) for i, (seq, action, _h, prev) in enumerate(rows)]
    return linked, head, (rows[-1][0], rows[-1][2]) if rows else None


STEPS = st.lists(st.sampled_from(["event", "rolled back", "with run fields", "nested"]), max_size=10)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(STEPS)
def test_a_block_leaves_a_whole_trail_and_its_head_on_the_run_row(run_factory, steps):
    run = run_factory()
    kept = []
    with transaction.atomic():
        locked = lock_run(run)
        with appending(locked):
            for n, step in enumerate(steps):
                action = f"test.{step.replace(' ', '_')}.{n}"
                if step == "rolled back":
                    with pytest.raises(Refused), transaction.atomic():
                        _event(locked, action)
                        raise Refused()
                    continue
                if step == "with run fields":
                    locked.title = f"title {n}"
                    _event(locked, action, run_fields=["title"])
                elif step == "nested":
                    with appending(locked):
                        _event(locked, action)
                else:
                    _event(locked, action)
                kept.append(action)
    linked, head, last = _trail(run)
    assert [action for _seq, action, _ok in linked] == ["run.created", *kept]
    assert [seq for seq, _a, _ok in linked] == list(range(1, len(kept) + 2))  # no gap, no number twice
    assert all(ok for _s, _a, ok in linked)
    assert head == last and verify_chain(run).ok
    assert (locked.audit_head_seq, locked.audit_head_hash) == head


def test_an_exception_out_of_the_block_leaves_the_head_and_the_caller_rolls_the_events_back(run_factory):
    run = run_factory()
    before = _trail(run)
    with pytest.raises(Refused), transaction.atomic():
        locked = lock_run(run)
        with appending(locked):
            _event(locked, "test.one")
            _event(locked, "test.two")
            raise Refused()
    assert _trail(run) == before and verify_chain(run).ok


def test_events_after_the_block_follow_its_last(run_factory):
    run = run_factory()
    with transaction.atomic():
        locked = lock_run(run)
        with appending(locked):
            _event(locked, "test.in")
        _event(locked, "test.after")  # read from the run row, which the block's end moved
    linked, head, last = _trail(run)
    assert [a for _s, a, _ok in linked] == ["run.created", "test.in", "test.after"] and head == last
    assert verify_chain(run).ok


@pytest.mark.django_db(transaction=True)
def test_a_block_needs_a_transaction(run_factory):
    run = run_factory()
    with pytest.raises(transaction.TransactionManagementError), appending(run):
        pass

"""Values kept per run chain head (reviews.kept.KeptByHead): reused for the head they were computed for,
never kept when the head moved while they were being computed."""
from __future__ import annotations

import pytest

from reviews.audit import Actor, record_event
from reviews.kept import KeptByHead
from reviews.models import Run

pytestmark = pytest.mark.django_db


def _move_head(run: Run) -> None:
    record_event(run=Run.objects.get(pk=run.pk), actor=Actor.command("test"), action="run.note",
                 object_type="run", object_id=run.run_id, after={"note": "meanwhile"})


def test_a_value_is_computed_once_per_chain_head_and_not_kept_when_the_head_moved_meanwhile(run_factory):
    run = run_factory()
    store, computed = KeptByHead(size=4), []

    def compute(read):
        computed.append(read.audit_head_seq)
        return len(computed)

    assert store.kept(run, "x", compute) == store.kept(run, "x", compute) == 1

    def compute_while_a_change_commits(read):
        _move_head(read)  # another request's decision, committed between this one's statements
        return "mixed"

    _move_head(run)
    run = Run.objects.get(pk=run.pk)
    assert store.kept(run, "y", compute_while_a_change_commits) == "mixed"
    assert store.get_for(run, "y") is None  # the state it mixed is not served to the next reader

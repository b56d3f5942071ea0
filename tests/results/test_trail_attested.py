"""A final run's trail against its stored attestation's head (issue 36 item 4, DESIGN §8).

A database superuser can cut a final run's last events (the append-only trigger switched off) and move
the run's head back: the chain and its head agree again, but the run's own stored attestation names the
cut head. verify_audit compares each final run's trail with it.
"""
from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from results.services import finalize_run
from reviews.audit import verify_chain
from reviews.models import AuditEvent
from tests.results.test_approval import corpus_files, finalize_sends, ready_run  # noqa: F401
from tests.results.test_finalize import WORKER, approved_run  # noqa: F401
from tests.reviews.test_audit_head import _cut_last

pytestmark = pytest.mark.django_db


def _cut_tail_and_move_head(run, n: int) -> None:
    """As a superuser: delete the run's last n events behind the trigger's back, then the head onto the last left."""
    _cut_last(run, n)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE reviews_run SET (audit_head_seq, audit_head_hash) = (SELECT seq, hash FROM "
                       "reviews_auditevent WHERE run_id = %s ORDER BY seq DESC LIMIT 1) WHERE id = %s",
                       [run.pk, run.pk])


def test_a_cut_tail_with_its_head_moved_back_is_named_against_the_attestation(approved_run):  # noqa: F811
    result = finalize_run(run=approved_run, actor=WORKER)
    attested = result.attestation.audit_head_seq
    assert verify_chain(approved_run).ok
    _cut_tail_and_move_head(approved_run, 2)
    assert AuditEvent.objects.filter(run=approved_run).order_by("-seq").first().seq < attested
    check = verify_chain(approved_run)
    assert not check.ok and check.broken_seq == attested and "attestation" in check.reason
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("verify_audit", approved_run.run_id, stdout=out)
    assert f"#{attested}" in out.getvalue() and "attestation" in out.getvalue()

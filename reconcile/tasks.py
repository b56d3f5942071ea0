"""Reconcile's Celery tasks: take IDs, call a service, own the retry policy."""
from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from reviews.audit import Actor
from reviews.models import Run

from . import services


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def sync_run(run_pk: int) -> dict | None:
    """Bring the run's reconciliation up to date with its members (idempotent; bound to records' RUN_VALIDATED)."""
    run = Run.objects.filter(pk=run_pk).first()
    if run is None:
        return None
    return services.sync_run(run=run, actor=Actor.worker("sync_run")).as_dict()


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def build_consensus(run_pk: int) -> bool:
    """The consensus of a run's submitted review passes (idempotent; bound to consensus.CONSENSUS)."""
    from .passes import consensus

    run = Run.objects.filter(pk=run_pk).first()
    return run is not None and consensus.build_consensus(run=run)


@shared_task(acks_late=True)
def sweep_pending_consensus() -> int:
    """Queue the consensus of every run whose passes are all submitted but whose consensus was never made
    (a broker down at the last submission, a worker killed while making it)."""
    from .passes import consensus

    pending = consensus.runs_awaiting_consensus()
    for run_pk in pending:
        consensus.CONSENSUS.send(run_pk)
    return len(pending)

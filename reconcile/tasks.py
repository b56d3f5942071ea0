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

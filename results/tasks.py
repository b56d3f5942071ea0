"""Results' Celery tasks: take IDs, call a service, own the retry policy (DESIGN §10)."""
from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

from reviews.audit import Actor
from reviews.models import Run

from . import services


@shared_task(bind=True, acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True,
             retry_backoff_max=300, max_retries=5)
def finalize_run(self, run_pk: int) -> str:
    """Render and store the run's final result; idempotent (a second run returns the stored result)."""
    run = Run.objects.filter(pk=run_pk).first()
    if run is None:
        return "no such run"
    result = services.finalize_run(run=run, actor=Actor.worker("finalize_run"))
    return f"final {result.sha256}" if result is not None else f"not finalized: {run.status} {run.status_reason}"


@shared_task(acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def sweep_unfinished_finalizations() -> dict:
    """Beat task: re-queue finalize_run for runs stuck in approved or finalizing (DESIGN §10)."""
    return services.sweep_unfinished_finalizations(older_than_seconds=settings.PIPELINE_STUCK_AFTER_SECONDS,
                                                   actor=Actor.worker("sweep_unfinished_finalizations"))

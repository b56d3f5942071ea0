"""Pipeline tasks: each takes IDs, calls one service and owns the retry policy (DESIGN §10).

Idempotent (the services claim their work) and acks_late, so a redelivery
after a killed worker redoes only what is missing.
"""
from datetime import datetime

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from reviews.audit import Actor
from reviews.models import Run

from . import services

RETRY = dict(bind=True, acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)


@shared_task(bind=True, acks_late=True, max_retries=10)
def parse_member_version(self, version_pk: int, reclaim: str | None = None) -> str:
    # A database error retries within seconds (1, 2, 4 … 30 s apart), taking back the claim the failed try
    # made (`reclaim`), so the version is not left `parsing` until the sweep (issue 23).
    try:
        version = services.parse_member_version(version_pk=version_pk, actor=Actor.worker("parse_member_version"),
                                                reclaim=datetime.fromisoformat(reclaim) if reclaim else None)
    except (OperationalError, InterfaceError) as error:
        claim = getattr(error, "claimed_at", None)
        raise self.retry(exc=error, countdown=min(2 ** self.request.retries, 30), args=(),
                         kwargs={"version_pk": version_pk, "reclaim": claim.isoformat() if claim else reclaim})
    return version.status if version is not None else "nothing to claim"


@shared_task(**RETRY)
def validate_run(self, run_pk: int) -> str:
    # Claims the run's pending request: a burst of uploads is validated once, on its latest state. The run is
    # read once, by the claim's row lock.
    try:
        _report, outcome = services.validate_requested(run=Run(pk=run_pk), actor=Actor.worker("validate_run"))
    except Run.DoesNotExist:
        return "no such run"
    return outcome


@shared_task(**RETRY)
def sweep_stuck_members(self) -> dict:
    return services.sweep_stuck_members(older_than_seconds=settings.PIPELINE_STUCK_AFTER_SECONDS,
                                        actor=Actor.worker("sweep_stuck_members"))

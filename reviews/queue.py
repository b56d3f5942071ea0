"""Tasks queued after commit: the one way a service hands work to a worker (DESIGN §10, STYLE.md 6).

A service names the work as a `Job` declared beside it and calls `job.after_commit(*ids)`;
the app that owns the Celery task binds it from its AppConfig.ready (`job.bind(task)`). So a
service never imports its tasks module (which imports the service), and an app can ask for
work done by an app above it (records asks reconcile to sync a run) without naming it.

A broker that is down loses nothing: the committed rows stay, and each pipeline's periodic
sweep finds work that was never queued and queues it again.
"""
from __future__ import annotations

import logging
from functools import partial

from django.db import transaction

logger = logging.getLogger(__name__)

RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2}


class Job:
    """One kind of work a service queues; `tasks` are the Celery tasks bound to it (usually one)."""

    def __init__(self, name: str):
        self.name = name
        self.tasks: list = []

    def __repr__(self) -> str:
        return f"Job({self.name!r})"

    def bind(self, task) -> None:
        if task not in self.tasks:
            self.tasks.append(task)

    def after_commit(self, *args) -> None:
        """Queue every bound task with `args` once the caller's transaction commits (at once outside one)."""
        transaction.on_commit(partial(self.send, *args))

    def send(self, *args) -> None:
        for task in self.tasks:
            try:
                task.apply_async(args=args, retry=True, retry_policy=RETRY_POLICY)
            except Exception:  # noqa: BLE001 — whatever the transport raises, the committed rows are safe
                logger.warning("could not queue %s%r; the sweep will re-queue it", task.name, args, exc_info=True)

"""Wake-ups of the fan-out, coalesced: one fan-out queued at a time, however many events commit meanwhile.

Every commit that writes an event a subscription may be owed wakes the fan-out
(reviews.audit.on_event_committed, events.feed.may_be_delivered), and the fan-out reads the trail from
its own mark (events/services/deliveries.py), so one fan-out that *starts reading* after an event's
commit delivers it. A wake therefore queues a fan-out only when none is queued and not
yet started: it sets a mark in Redis (SET NX, beside the queue it names), and skips the publish when the
mark was already there; the fan-out task deletes the mark *before* it reads the trail. So an event whose
wake found the mark committed before the queued fan-out deletes it, and thus before that fan-out reads:
it is read. An event whose wake comes after the delete sets the mark again and queues the next fan-out.

What a lost wake-up costs is latency, never an event, as before: a mark left behind by a process that
died between the SET and the publish, or by a publish the broker refused, lasts MARK_SECONDS, and the
periodic sweep queues a fan-out regardless of the mark (and that fan-out deletes it). Without a broker
(no REDIS_URL) or with tasks run in process, there is nothing to coalesce: every wake runs the fan-out.
"""
from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings
from redis import Redis, RedisError

from .services.jobs import FAN_OUT

logger = logging.getLogger(__name__)

# How long a mark outlives a fan-out that was never queued (the sweep runs every minute by default).
MARK_SECONDS = 60

_client: Redis | None = None


def _redis() -> Redis:
    """One client per process (redis-py's pool is thread-safe and reconnects after a fork); short timeouts, as
    the limits cache's: a Redis that does not answer costs a wake half a second, then it publishes anyway."""
    global _client
    if _client is None:
        _client = Redis.from_url(settings.REDIS_URL, socket_connect_timeout=0.5, socket_timeout=0.5)
    return _client


def mark_key(queue: str | None = None) -> str:
    """The mark of a fan-out queued on `queue` (the default queue): queues are told apart, so a queue nobody
    consumes (a benchmark's) never silences the wakes of one a worker reads."""
    return f"aas-events:fan-out-queued:{queue or current_app.conf.task_default_queue}"


def _coalescing() -> bool:
    return bool(settings.REDIS_URL) and not current_app.conf.task_always_eager


def wake() -> None:
    """After an event's commit: queue a fan-out unless one is queued and has not started."""
    if _coalescing():
        try:
            if not _redis().set(mark_key(), "1", nx=True, ex=MARK_SECONDS):
                return  # the queued fan-out has not started: it will read this event
        except RedisError as error:  # the publish will most likely fail too, and the sweep re-queue it
            logger.warning("could not mark the fan-out as queued (%s); queueing it regardless", error)
    FAN_OUT.send()


def started(*, queue: str | None = None) -> None:
    """The fan-out task taken from `queue`, before it reads the trail: from now on a wake queues another."""
    if settings.REDIS_URL:  # tasks run in process leave no mark, but a worker's may have been left
        try:
            _redis().delete(mark_key(queue))
        except RedisError as error:  # the mark expires on its own; meanwhile the sweep still queues fan-outs
            logger.warning("could not clear the fan-out's queued mark (%s)", error)

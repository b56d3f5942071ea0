"""Counts behind the API request rates and the failed-login limits (DESIGN §9), shared by every process.

They live in the "limits" cache (config/settings.py): Redis when REDIS_URL is set, so every worker
process and every host counts against one budget; the process's memory otherwise (the
single-process `make run`). A count starts at its first hit and lasts `window` seconds from then:
a fixed window, so a client may spend one window's budget at its end and the next window's at
once (twice the budget in a burst, never more on average).

Each hit is one atomic increment in the cache (Redis INCR), so concurrent processes never lose one
another's hits. DRF's own throttles keep a list of request times that each request reads, extends
and writes back: with a shared cache, two processes reading the same list lose a request each
time they overlap (DRF's documentation says so), and the list is as long as the rate.

When Redis does not answer (down, or slower than the cache's socket timeout), counting falls back
to this process's memory and Redis is tried again RETRY_SECONDS later; the change is logged once
each way. No API call and no login fails because Redis is down, and the limits still hold per
process (a server with N processes allows N times them) rather than not at all. Refusing every
login instead (failing closed) would lock every reviewer out for as long as Redis is down, while
the rest of the app works on without it (DESIGN §10: uploads still succeed); not counting at all
(failing open) would allow unlimited password guesses meanwhile. The counts a process made during
the outage are dropped when Redis answers again.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

RETRY_SECONDS = 5
T = TypeVar("T")

# Where counts go while the shared cache does not answer; large enough that a flood of new keys
# (user names, addresses) cannot evict the counts that matter.
_local = LocMemCache("aas-limits-fallback", {"OPTIONS": {"MAX_ENTRIES": 100_000}})
_shared_down_until = 0.0  # time.monotonic() before which the shared cache is not tried; 0: it answers


def hit(key: str, window: int) -> int:
    """Count one hit on `key` and return its count so far; a new count lasts `window` seconds."""
    return _use(lambda cache: _increment(cache, key, window))


def counts(keys: Iterable[str]) -> dict[str, int]:
    """The current counts of those keys that have one."""
    keys = list(keys)
    return _use(lambda cache: cache.get_many(keys))


def forget(key: str) -> None:
    _use(lambda cache: cache.delete(key))


def _increment(cache, key: str, window: int) -> int:
    try:
        count = cache.incr(key)  # Redis: EXISTS, then INCRBY (which is atomic)
    except ValueError:  # no count yet, or it has just expired: this hit starts one...
        if cache.add(key, 1, timeout=window):
            return 1
        try:
            count = cache.incr(key)  # ...unless another process started it in between
        except ValueError:  # which expired already (this process stalled for a whole window)
            cache.set(key, 1, timeout=window)
            return 1
    if count == 1:
        # It expired between incr()'s EXISTS and its INCRBY, which created it again without an
        # expiry: give it its window, or it would count forever.
        cache.touch(key, window)
    return count


def _use(operation: Callable[..., T]) -> T:
    """`operation(cache)` on the limits cache, or on this process's memory while that does not answer."""
    global _shared_down_until
    if _shared_down_until and time.monotonic() < _shared_down_until:
        return operation(_local)
    try:
        result = operation(caches["limits"])
    except RedisError as error:
        if not _shared_down_until:
            logger.warning("limits cache unavailable (%s: %s): counting in this process's memory, "
                           "retrying every %s s", error.__class__.__name__, error, RETRY_SECONDS)
        _shared_down_until = time.monotonic() + RETRY_SECONDS
        return operation(_local)
    if _shared_down_until:
        logger.info("limits cache answers again: counting there")
        _shared_down_until = 0.0
        _local.clear()
    return result

"""The Redis transport the workers use: a Redis that refuses commands is a lost connection, not a crash.

kombu counts redis-py's ResponseError (OOM, READONLY, MISCONF, and the EXECABORT a refused write inside
MULTI turns into) as a *channel* error, and Celery's consumer treats channel errors as unrecoverable: the
worker exits (issue 23, reproduced by tests/reliability/test_broker_faults.py on kombu 5.7.0). Counted
as connection errors, they make the consumer close the connection and reconnect with backoff
(`broker_connection_retry`, forever: `broker_connection_max_retries = None`), so the worker takes up
the queue again once Redis accepts writes. A message whose ack was refused stays in kombu's unacked set
and is redelivered after the visibility timeout; the tasks are idempotent, and the pipeline's sweep
re-queues any work whose message was lost.

An ack Redis refuses is also forgotten locally (QoS below): left outstanding, it holds the worker's only
prefetch slot and the worker, alive, never takes another task (celery/celery#5716, "Celery deadlocks on
redis OOM"; seen here with --pool=solo and prefetch 1). The message stays in Redis's unacked set and is
redelivered after the visibility timeout, to a task that finds nothing left to claim.

kombu builds a redis-py client per publish; Channel keeps one per connection pool instead (below).

kombu 5.7.0's batch-publish check reads `transport.client.hostname` and fails with AttributeError once
the connection is closed (the reconnect path after a killed Redis): the property answers False then.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager

from kombu.transport import redis as kombu_redis
from kombu.transport import virtual
from redis import exceptions

logger = logging.getLogger(__name__)


class QoS(kombu_redis.QoS):
    def ack(self, delivery_tag):
        try:
            self._remove_from_indices(delivery_tag).execute()
        except (exceptions.ResponseError, exceptions.ConnectionError, exceptions.TimeoutError) as error:
            logger.warning("Redis refused the ack of %s (%s); it will be redelivered after the visibility "
                           "timeout", delivery_tag, error)
        virtual.QoS.ack(self, delivery_tag)


class Channel(kombu_redis.Channel):
    QoS = QoS
    _publish_client = None

    @contextmanager
    def conn_or_acquire(self, client=None):
        """kombu builds a new redis-py client for every command it sends outside its poller (every publish):
        about a third of a publish's CPU went into that constructor (it fills a table of ~170 reply callbacks)
        on the upload path (DESIGN §11 "uploads"). A client is a thin handle on the channel's connection pool
        and safe to share between threads, so one is kept per pool (a new pool after a reconnect gets a new one)."""
        if client:
            yield client
            return
        cached = self._publish_client
        if cached is None or cached.connection_pool is not self.pool:
            cached = self._publish_client = self._create_client()
        yield cached


class Transport(kombu_redis.Transport):
    Channel = Channel
    connection_errors = (*kombu_redis.Transport.connection_errors, exceptions.ResponseError)
    channel_errors = tuple(error for error in kombu_redis.Transport.channel_errors
                           if not issubclass(error, exceptions.ResponseError))

    @property
    def supports_batch_publish(self):
        if getattr(self, "client", None) is None:
            return False
        try:
            return super().supports_batch_publish
        except AttributeError:
            return False

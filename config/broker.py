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

kombu 5.7.0's batch-publish check reads `transport.client.hostname` and fails with AttributeError once
the connection is closed (the reconnect path after a killed Redis): the property answers False then.
"""
from __future__ import annotations

import logging

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

"""Celery tasks of the events app: a few lines each, calling a service; they own the retry policy."""
from __future__ import annotations

from celery import shared_task

from . import services, wakes


@shared_task(bind=True, acks_late=True)
def fan_out_events(self) -> int:
    # Before the trail is read, so an event committed from now on queues the next fan-out; the mark of the
    # queue this message came from (the default queue's when it was not delivered by a broker).
    wakes.started(queue=(self.request.delivery_info or {}).get("routing_key"))
    return services.fan_out()


@shared_task(acks_late=True)
def deliver_webhook(delivery_id: int) -> None:
    # Exponential backoff: a failed attempt that may be retried comes back after the delay it names.
    retry_in = services.attempt_delivery(delivery_id=delivery_id)
    if retry_in is not None:
        deliver_webhook.apply_async(args=[delivery_id], countdown=retry_in)


@shared_task(acks_late=True)
def sweep_webhook_deliveries() -> int:
    return services.sweep_deliveries()

"""Subscriptions: made, changed, deleted, disabled and asked to redeliver, each with its audit event."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from reviews.actions import Action
from reviews.audit import Actor, record_event

from ..addresses import checked_target
from ..feed import EVENT_TYPES, SUBSCRIBABLE
from ..models import Delivery, Webhook
from ..secrets import new_secret, seal
from .jobs import DELIVER


class WebhookRefused(ValueError):
    """A subscription that cannot be made as asked; the message names the field."""


def _described(webhook: Webhook) -> dict:
    # `owner` is what lets the owner find these run-less events in their feed (events.feed.visible_events).
    return {"owner": webhook.owner_id, "url": webhook.url, "event_types": webhook.event_types,
            "run_ids": webhook.run_ids, "active": webhook.active}


def _clean_types(event_types) -> list[str]:
    # Only SUBSCRIBABLE types: the fan-out is woken for no other (events.feed.may_be_delivered).
    unknown = sorted(set(event_types) - SUBSCRIBABLE)
    if unknown:
        raise WebhookRefused(f"unknown event types {', '.join(unknown)}; use any of {', '.join(EVENT_TYPES)}")
    return sorted(set(event_types))


def create_webhook(*, owner, url: str, event_types: list[str], run_ids: list[str], actor: Actor
                   ) -> tuple[Webhook, str]:
    """A new active subscription and its secret, which is returned here and never again."""
    checked_target(url)
    secret = new_secret()
    with transaction.atomic():
        webhook = Webhook.objects.create(owner=owner, url=url, event_types=_clean_types(event_types),
                                         run_ids=sorted(set(run_ids)), secret_encrypted=seal(secret))
        record_event(run=None, actor=actor, action=Action.WEBHOOK_CREATED, object_type="webhook",
                     object_id=webhook.pk, after=_described(webhook))
    return webhook, secret


def update_webhook(*, webhook: Webhook, actor: Actor, url: str | None = None, event_types: list[str] | None = None,
                   run_ids: list[str] | None = None, active: bool | None = None) -> Webhook:
    """Change what was given; turning a subscription back on clears its failure count."""
    if url is not None:
        checked_target(url)
    with transaction.atomic():
        locked = Webhook.objects.select_for_update().get(pk=webhook.pk)
        before = _described(locked)
        fields = []
        if url is not None:
            locked.url = url
            fields.append("url")
        if event_types is not None:
            locked.event_types = _clean_types(event_types)
            fields.append("event_types")
        if run_ids is not None:
            locked.run_ids = sorted(set(run_ids))
            fields.append("run_ids")
        if active is not None and active != locked.active:
            locked.active, locked.disabled_reason, locked.consecutive_failures = active, "", 0
            fields += ["active", "disabled_reason", "consecutive_failures"]
        if fields:
            locked.save(update_fields=[*fields, "updated_at"])
            record_event(run=None, actor=actor, action=Action.WEBHOOK_UPDATED, object_type="webhook",
                         object_id=locked.pk, before=before, after=_described(locked))
    return locked


def delete_webhook(*, webhook: Webhook, actor: Actor) -> None:
    with transaction.atomic():
        locked = Webhook.objects.select_for_update().get(pk=webhook.pk)
        record_event(run=None, actor=actor, action=Action.WEBHOOK_DELETED, object_type="webhook",
                     object_id=locked.pk, before=_described(locked))
        locked.delete()


def disable_webhook(*, webhook_id: int, reason: str, actor: Actor) -> bool:
    """Turn an active subscription off with a `webhook.disabled` event; False when it was already off.
    Its events stay in the feed, and redelivery resends them once it is on again."""
    with transaction.atomic():
        locked = Webhook.objects.select_for_update().filter(pk=webhook_id, active=True).first()
        if locked is None:
            return False
        locked.active, locked.disabled_reason = False, reason[:300]
        locked.save(update_fields=["active", "disabled_reason", "updated_at"])
        record_event(run=None, actor=actor, action=Action.WEBHOOK_DISABLED, object_type="webhook", object_id=locked.pk,
                     after=dict(_described(locked), reason=locked.disabled_reason,
                                consecutive_failures=locked.consecutive_failures))
    return True


def request_redelivery(*, delivery: Delivery, actor: Actor) -> Delivery:
    """Send a delivery again, with a fresh budget of attempts and the same `webhook-id`."""
    with transaction.atomic():
        locked = Delivery.objects.select_for_update().select_related("webhook").get(pk=delivery.pk)
        before = {"state": locked.state, "attempts": locked.attempts}
        locked.state, locked.attempts, locked.next_attempt_at = Delivery.State.PENDING, 0, timezone.now()
        locked.save(update_fields=["state", "attempts", "next_attempt_at"])
        record_event(run=None, actor=actor, action=Action.WEBHOOK_REDELIVERY_REQUESTED, object_type="webhook",
                     object_id=locked.webhook_id, before=before,
                     after={"owner": locked.webhook.owner_id, "delivery": locked.pk, "event": locked.event_id,
                            "event_type": locked.event_type})
        DELIVER.after_commit(locked.pk)
    return locked

"""From the trail to signed POSTs: the fan-out makes deliveries, an attempt sends one, the sweep re-queues.

The fan-out is a reader of the event feed with a mark of its own (FanOutMark), so it inherits the
feed's guarantee (events/feed.py): no event is passed over, whatever order transactions commit
in. It is woken after every commit that wrote an event a subscription may be owed
(reviews.audit.on_event_committed, events.feed.may_be_delivered) and by the sweep, so a wake-up lost with a dying process or a broker that is down costs latency, not
events. A delivery is made once per (subscription, event, type) by a unique constraint, and an
attempt claims its delivery with a conditional UPDATE, so duplicate tasks send nothing twice.
"""
from __future__ import annotations

import json
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from reviews.access import READ_AUDIT, roles_of, runs_with_readable_audit
from reviews.audit import Actor
from reviews.models import AuditEvent

from ..addresses import AddressRefused, checked_target, is_public
from ..feed import EVENT_TYPES, Cursor, event_types, payloads, read_page
from ..models import Delivery, DeliveryAttempt, FanOutMark, Webhook
from ..secrets import unseal
from ..sending import Reply, post, signed_headers
from .jobs import DELIVER, FAN_OUT
from .webhooks import disable_webhook

BATCH = 500
MARK = "webhooks"


class _Readers:
    """Which runs each subscription's owner may see, asked once per owner and batch."""

    def __init__(self):
        self._runs: dict[int, set[int] | None] = {}

    def may_see(self, webhook: Webhook, event: AuditEvent) -> bool:
        if event.run_id is None:  # run-less: only the events about the owner's own subscriptions
            return event.object_type == "webhook" and (event.after or {}).get("owner") == webhook.owner_id
        if webhook.run_ids and event.run.run_id not in webhook.run_ids:
            return False
        if webhook.owner_id not in self._runs:
            owner = webhook.owner
            self._runs[owner.pk] = (None if roles_of(owner) & READ_AUDIT else
                                    set(runs_with_readable_audit(owner).values_list("pk", flat=True)))
        runs = self._runs[webhook.owner_id]
        return runs is None or event.run_id in runs


def fan_out() -> int:
    """Make the deliveries owed for the feed past the mark, queue them after commit; how many were made.

    A subscription gets the events written after it was made, of its types (all of EVENT_TYPES when it
    names none) and runs, that its owner may see now.
    """
    made = 0
    while True:
        with transaction.atomic():
            FanOutMark.objects.get_or_create(name=MARK)
            mark = FanOutMark.objects.select_for_update().get(name=MARK)  # one fan-out at a time
            page = read_page(AuditEvent.objects.all(), after=Cursor.parse(mark.cursor), limit=BATCH)
            if not page:
                return made
            hooks = list(Webhook.objects.filter(active=True).select_related("owner"))
            readers, now, rows = _Readers(), timezone.now(), []
            for _cursor, event in page:
                types = event_types(event.action, event.after)
                for hook in hooks:
                    if event.created_at < hook.created_at or not readers.may_see(hook, event):
                        continue
                    wanted = set(hook.event_types or EVENT_TYPES)
                    rows += [Delivery(webhook=hook, event=event, event_type=t, next_attempt_at=now)
                             for t in types if t in wanted]
            if rows:
                Delivery.objects.bulk_create(rows, ignore_conflicts=True)
                for pk in Delivery.objects.filter(event_id__in=[e.pk for _c, e in page], attempts=0,
                                                  state=Delivery.State.PENDING).values_list("pk", flat=True):
                    DELIVER.after_commit(pk)
            mark.cursor = str(page[-1][0])
            mark.save(update_fields=["cursor"])
            made += len(rows)
        if len(page) < BATCH:
            return made


def retry_delay(attempts: int) -> float:
    """Seconds before the next attempt after `attempts` failed ones: base × 4^(attempts−1)
    (30 s, 2 min, 8 min, 32 min by default: five attempts over about 45 minutes)."""
    return settings.WEBHOOK_RETRY_BASE_MS / 1000 * 4 ** (attempts - 1)


def attempt_delivery(*, delivery_id: int) -> float | None:
    """Send one attempt of a pending delivery and log it; the seconds until the next attempt when it
    failed and may be tried again, else None (delivered, given up, or not this worker's to send)."""
    if not Delivery.objects.filter(pk=delivery_id, state=Delivery.State.PENDING).update(
            state=Delivery.State.SENDING, claimed_at=timezone.now()):
        return None
    delivery = Delivery.objects.select_related("webhook", "event", "event__run").get(pk=delivery_id)
    webhook = delivery.webhook
    if not webhook.active:
        Delivery.objects.filter(pk=delivery_id).update(state=Delivery.State.FAILED)
        return None
    body = json.dumps(payloads([delivery.event], only_types={delivery.event_type})[0], separators=(",", ":"))
    started = timezone.now()
    try:
        host, port, address = checked_target(webhook.url)
    except AddressRefused as refused:
        reply = Reply(None, "", str(refused)[:500], 0)
    else:
        headers = signed_headers(secret=unseal(webhook.secret_encrypted), message_id=delivery.message_id,
                                 sent_at=started, body=body)
        reply = post(url=webhook.url, host=host, port=port, address=address, public=is_public(address),
                     headers=headers, body=body, timeout=settings.WEBHOOK_TIMEOUT_SECONDS)
    return _record_attempt(delivery, reply, started)


def _record_attempt(delivery: Delivery, reply: Reply, started) -> float | None:
    with transaction.atomic():
        DeliveryAttempt.objects.create(
            delivery=delivery, number=delivery.attempt_log.count() + 1, started_at=started,
            duration_ms=reply.duration_ms, status_code=reply.status_code, response_excerpt=reply.excerpt,
            error=reply.error)
        delivery.attempts += 1
        delivery.last_status = reply.status_code
        retry = None
        if reply.ok:
            delivery.state, delivery.delivered_at = Delivery.State.DELIVERED, timezone.now()
            Webhook.objects.filter(pk=delivery.webhook_id).update(consecutive_failures=0)
        else:
            Webhook.objects.filter(pk=delivery.webhook_id).update(consecutive_failures=F("consecutive_failures") + 1)
            failures = Webhook.objects.values_list("consecutive_failures", flat=True).get(pk=delivery.webhook_id)
            if failures >= settings.WEBHOOK_DISABLE_AFTER_FAILURES:
                why = reply.error or f"HTTP {reply.status_code}"
                disable_webhook(webhook_id=delivery.webhook_id, actor=Actor.worker("deliver_webhook"),
                                reason=f"{failures} consecutive failed attempts; the last: {why}")
                delivery.state = Delivery.State.FAILED
            elif delivery.attempts >= settings.WEBHOOK_MAX_ATTEMPTS:
                delivery.state = Delivery.State.FAILED
            else:
                retry = retry_delay(delivery.attempts)
                delivery.state, delivery.next_attempt_at = Delivery.State.PENDING, timezone.now() + timedelta(
                    seconds=retry)
        delivery.save(update_fields=["attempts", "last_status", "state", "delivered_at", "next_attempt_at"])
    return retry


def sweep_deliveries() -> int:
    """Re-queue what no task holds: deliveries claimed by a worker that died, pending ones overdue by a
    minute (their task was lost), and the fan-out itself. How many deliveries were re-queued."""
    now = timezone.now()
    stuck = now - timedelta(seconds=settings.WEBHOOK_STUCK_AFTER_SECONDS)
    Delivery.objects.filter(state=Delivery.State.SENDING, claimed_at__lt=stuck).update(state=Delivery.State.PENDING)
    due = list(Delivery.objects.filter(state=Delivery.State.PENDING, next_attempt_at__lt=now - timedelta(minutes=1))
               .values_list("pk", flat=True)[:BATCH])
    for pk in due:
        DELIVER.send(pk)
    FAN_OUT.send()
    return len(due)

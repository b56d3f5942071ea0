"""Webhook subscriptions, their deliveries and each delivery's attempts (DESIGN.md §10, §13)."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from reviews.models import AuditEvent


class Webhook(models.Model):
    """A caller's subscription: which event types of which runs go to which URL, signed with its secret.

    The secret signs (HMAC-SHA256, Standard Webhooks), so it must be read back: it is stored
    encrypted (events/secrets.py), never hashed, and shown once when created.
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    url = models.URLField(max_length=500)
    event_types = models.JSONField(default=list)  # [] means every type in events.feed.EVENT_TYPES
    run_ids = models.JSONField(default=list)  # [] means every run the owner may see
    secret_encrypted = models.TextField()
    active = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=300, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"webhook {self.pk} → {self.url}"


class Delivery(models.Model):
    """One event of one type for one subscription; its `message_id` is the `webhook-id` of every attempt."""

    class State(models.TextChoices):
        PENDING = "pending"  # waiting for its (next) attempt
        SENDING = "sending"  # claimed by a worker
        DELIVERED = "delivered"
        FAILED = "failed"  # attempts exhausted or the subscription disabled; redelivery resends it

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(AuditEvent, on_delete=models.PROTECT, related_name="+")
    event_type = models.CharField(max_length=80)
    state = models.CharField(max_length=20, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    claimed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_status = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["pk"]
        constraints = [models.UniqueConstraint(fields=["webhook", "event", "event_type"],
                                               name="delivery_once_per_webhook_event_type")]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    @property
    def message_id(self) -> str:
        return f"msg_{self.pk}"


class DeliveryAttempt(models.Model):
    """What one POST of a delivery got back: a log, not domain state (so no audit event per attempt)."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    response_excerpt = models.TextField(blank=True)  # the first 1 KB of the reply
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["pk"]


class FanOutMark(models.Model):
    """How far the fan-out (trail → deliveries) has read the event feed: one row, locked while it reads."""

    name = models.CharField(max_length=40, unique=True)
    cursor = models.CharField(max_length=60, default="")

"""The audit trail: one function writes it, one verifies it (DESIGN.md §8).

Canonical form of an event, which the chain hashes: the JSON object of
`chain_payload` serialised per RFC 8785 (sorted keys, UTF-8, no
insignificant whitespace, ECMAScript number form). Each event's
hash = SHA-256(prev_hash as ASCII hex + canonical JSON bytes); the first
event of a chain has prev_hash = 64 zeros.
"""
from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import rfc8785
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from .models import AuditEvent, Run

GENESIS = "0" * 64


@dataclass(frozen=True)
class Actor:
    """Who acts: a user (browser), an API token's holder, or a worker task."""

    label: str
    user_id: int | None = None

    @classmethod
    def for_request(cls, request) -> "Actor":
        user = getattr(request, "user", None)
        token = getattr(request, "auth", None)
        token_name = getattr(token, "name", None)
        if token_name:
            return cls(label=f"token:{token_name}", user_id=user.pk)
        if user is not None and user.is_authenticated:
            return cls(label=f"user:{user.get_username()}", user_id=user.pk)
        return cls(label="anonymous")

    @classmethod
    def for_user(cls, user) -> "Actor":
        return cls(label=f"user:{user.get_username()}", user_id=user.pk)

    @classmethod
    def worker(cls, task: str) -> "Actor":
        return cls(label=f"worker:{task}")

    @classmethod
    def command(cls, name: str) -> "Actor":
        return cls(label=f"command:{name}")


def _plain(value: Any) -> Any:
    """JSON-ready copy: dates, decimals, UUIDs become strings, as DjangoJSONEncoder writes them."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return DjangoJSONEncoder().default(value)


def chain_payload(event: AuditEvent) -> dict:
    return {
        "run": event.run.run_id if event.run_id else None,
        "seq": event.seq,
        "actor": event.actor,
        "action": event.action,
        "object_type": event.object_type,
        "object_id": event.object_id,
        "before": event.before,
        "after": event.after,
        "created_at": event.created_at.isoformat(timespec="microseconds"),
        "prev_hash": event.prev_hash,
    }


def canonical_json(payload: dict) -> bytes:
    return rfc8785.dumps(payload)


def event_hash(prev_hash: str, payload: dict) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical_json(payload)).hexdigest()


def _lock_chain(run: Run | None) -> None:
    """Serialise appends to one chain so concurrent writers cannot fork it."""
    if connection.vendor == "postgresql":
        key = run.pk if run is not None else 0
        with connection.cursor() as cursor:
            # Two-int form: namespace 4242 keeps clear of other advisory locks.
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [4242, zlib.crc32(str(key).encode()) & 0x7FFFFFFF])
    # SQLite serialises writers on its own database lock.


def record_event(
    *,
    run: Run | None,
    actor: Actor,
    action: str,
    object_type: str,
    object_id: str | int,
    before: Any = None,
    after: Any = None,
) -> AuditEvent:
    """Append one event to the run's chain, in the caller's transaction."""
    with transaction.atomic():
        _lock_chain(run)
        events = AuditEvent.objects.filter(run=run) if run is not None else AuditEvent.objects.filter(run__isnull=True)
        last = events.order_by("-seq").values_list("seq", "hash").first()
        seq, prev_hash = (last[0] + 1, last[1]) if last else (1, GENESIS)
        event = AuditEvent(
            run=run,
            seq=seq,
            actor=actor.label,
            action=action,
            object_type=object_type,
            object_id=str(object_id),
            before=_plain(before),
            after=_plain(after),
            created_at=timezone.now(),
            prev_hash=prev_hash,
        )
        event.hash = event_hash(prev_hash, chain_payload(event))
        event.save(force_insert=True)
        return event


@dataclass(frozen=True)
class ChainCheck:
    ok: bool
    events: int
    broken_seq: int | None = None
    broken_event_id: int | None = None
    reason: str = ""

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "events": self.events,
            "broken_seq": self.broken_seq,
            "broken_event_id": self.broken_event_id,
            "reason": self.reason,
        }


def verify_chain(run: Run | None) -> ChainCheck:
    """Recompute the chain from its first event; name the first event that does not hold."""
    events = AuditEvent.objects.filter(run=run) if run is not None else AuditEvent.objects.filter(run__isnull=True)
    prev_hash = GENESIS
    count = 0
    for count, event in enumerate(events.select_related("run").order_by("seq").iterator(), start=1):
        if event.seq != count:
            return ChainCheck(False, count, event.seq, event.pk, f"sequence gap: expected {count}, found {event.seq}")
        if event.prev_hash != prev_hash:
            return ChainCheck(False, count, event.seq, event.pk, "prev_hash does not match the previous event's hash")
        # Recompute from the stored JSON exactly as it was hashed (JSON round trip).
        expected = event_hash(prev_hash, chain_payload(event))
        if expected != event.hash:
            return ChainCheck(False, count, event.seq, event.pk, "content does not match its hash (edited)")
        prev_hash = event.hash
    return ChainCheck(True, count)


def last_hash(run: Run) -> str:
    value = AuditEvent.objects.filter(run=run).aggregate(m=Max("seq"))["m"]
    if value is None:
        return GENESIS
    return AuditEvent.objects.get(run=run, seq=value).hash

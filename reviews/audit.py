"""The audit trail: one function writes it, one verifies it (DESIGN.md §8).

Each run has one chain of events; events without a run (tokens issued or
revoked) form one more chain. Within a chain, `seq` counts 1, 2, 3, … and

    hash = SHA-256(prev_hash as 64 ASCII hex digits + canonical JSON bytes)

where the first event's prev_hash is 64 zeros and the canonical JSON is the
object built by `chain_payload`: run (its `run_id`, or null), seq, actor,
action, object_type, object_id, before, after, created_at (ISO 8601 with
microseconds and offset, `2026-09-25T10:00:00.123456+00:00`) and prev_hash,
serialised per RFC 8785 (JCS) by the `rfc8785` package: keys sorted by
UTF-16 code units, UTF-8, no insignificant whitespace, numbers in their
ECMAScript form (`1.0` is `1`, `1e16` is `10000000000000000`). The API
returns `created_at` in exactly this form, so anyone can recompute the chain
from `GET /api/runs/{run_id}/audit/` alone.

What is hashed is what is stored, and what is stored survives PostgreSQL's
jsonb round trip unchanged. `record_event` therefore first makes before/after
plain JSON (`plain_json`): dates, decimals and UUIDs become strings as
Django's JSON encoder writes them, tuples become lists, sets sorted lists,
and the values neither jsonb nor JCS carry exactly are written as strings:
NaN and the infinities ("NaN", "Infinity", "-Infinity"), numbers beyond
±(2^53 − 1) (an integer as its digits, a float as Python's repr: "1e+16";
jsonb would hand such a float back as an integer that JCS refuses), and NUL
and lone surrogates inside strings (U+FFFD). Every number left is one that
JCS serialises and that a client decoding the API's JSON reads back to the
same value, so the chain can be recomputed from `GET …/audit/` alone. A
stored value JCS cannot serialise (only a hand-edited row holds one) makes
the chain broken at that event.

Rows are append-only: a PostgreSQL trigger refuses UPDATE, DELETE and
TRUNCATE (migration 0002). A chain cannot show that events were cut from its
end; anchoring the last hash elsewhere (the result, an export) covers that.
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any

import rfc8785
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.utils import timezone

from .models import AuditEvent, Run

GENESIS = "0" * 64
# The integers RFC 8785 (I-JSON) carries exactly.
SAFE_INT = 2**53 - 1

_UNSTORABLE_CHARS = re.compile("[\x00\ud800-\udfff]")


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
            return cls.for_user(user)
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


def _plain_str(value: str) -> str:
    # jsonb refuses \u0000 and both jsonb and UTF-8 refuse lone surrogates.
    return _UNSTORABLE_CHARS.sub("\ufffd", value)


def plain_json(value: Any) -> Any:
    """A copy of `value` that PostgreSQL jsonb stores and RFC 8785 serialises without loss."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value) if -SAFE_INT <= value <= SAFE_INT else str(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return float(value) if -SAFE_INT <= value <= SAFE_INT else repr(float(value))
    if isinstance(value, str):
        return _plain_str(str(value))
    if isinstance(value, dict):
        return {_plain_str(str(k)): plain_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain_json(v) for v in value), key=lambda v: canonical_json(v))
    return _plain_str(DjangoJSONEncoder().default(value))


def hashed_created_at(event: AuditEvent) -> str:
    return event.created_at.isoformat(timespec="microseconds")


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
        "created_at": hashed_created_at(event),
        "prev_hash": event.prev_hash,
    }


def canonical_json(payload: Any) -> bytes:
    """RFC 8785 bytes of `payload`; raises rfc8785.CanonicalizationError on what JSON cannot carry."""
    return rfc8785.dumps(payload)


def event_hash(prev_hash: str, payload: dict) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical_json(payload)).hexdigest()


def _chain(run: Run | None):
    return AuditEvent.objects.filter(run=run) if run is not None else AuditEvent.objects.filter(run__isnull=True)


def lock_run(run: Run) -> Run:
    """Lock the run's row for the rest of the transaction and return it fresh.

    This row lock is also what serialises appends to the run's audit chain, so
    every service that changes a run's state takes it FIRST, before locking any
    other row: one lock order (run, then its members, mappings, ...) means
    concurrent uploads, workers and reviewers queue up instead of deadlocking.
    """
    return Run.objects.select_for_update().get(pk=run.pk)


def _chain_head(run: Run | None) -> tuple[int, str] | None:
    """Serialise appends to one chain so concurrent writers cannot fork it, then read its last (seq, hash).

    A run's chain is guarded by the run's row lock (see lock_run; re-taking it in
    the same transaction is one cheap statement). The run-less chain (tokens,
    logins) has no row, so it takes a transaction-scoped advisory lock instead.
    SQLite serialises writers on its own database lock; UniqueConstraint(run, seq)
    backs both. The head is read by a statement of its own, after the lock: under
    READ COMMITTED only a statement that starts once the lock is granted sees the
    event its previous holder committed. Plain SQL: every event of every service
    passes here, and the ORM would rebuild the same two statements each time.
    """
    postgres = connection.vendor == "postgresql"
    events = AuditEvent._meta.db_table
    with connection.cursor() as cursor:
        if run is not None:
            if postgres:
                cursor.execute(f'SELECT 1 FROM "{Run._meta.db_table}" WHERE "id" = %s FOR UPDATE', [run.pk])
            cursor.execute(f'SELECT "seq", "hash" FROM "{events}" WHERE "run_id" = %s ORDER BY "seq" DESC LIMIT 1',
                           [run.pk])
        else:
            if postgres:
                # Two-int form: namespace 4242 keeps clear of other advisory locks.
                cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [4242, 0])
            cursor.execute(f'SELECT "seq", "hash" FROM "{events}" WHERE "run_id" IS NULL ORDER BY "seq" DESC LIMIT 1')
        return cursor.fetchone()


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
    """Append one event to the run's chain, in the caller's transaction.

    before/after are made plain JSON first (see the module docstring); the
    event's hash covers them as stored.
    """
    # Inside the caller's transaction no savepoint of its own: an event that cannot be written must
    # roll back the change it records, and two fewer statements per event matter on the upload path.
    with transaction.atomic(savepoint=False):
        last = _chain_head(run)
        seq, prev_hash = (last[0] + 1, last[1]) if last else (1, GENESIS)
        event = AuditEvent(
            run=run,
            seq=seq,
            actor=_plain_str(actor.label),
            action=action,
            object_type=object_type,
            object_id=_plain_str(str(object_id)),
            before=plain_json(before),
            after=plain_json(after),
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

    def report(self) -> dict:
        """The verify API's answer: the count when the chain holds, the first broken event when not."""
        if self.ok:
            return {"ok": True, "events": self.events}
        return {"ok": False, "broken_seq": self.broken_seq, "broken_event_id": self.broken_event_id,
                "reason": self.reason}


def verify_chain(run: Run | None) -> ChainCheck:
    """Recompute the chain from its first event; name the first event that does not hold.

    `events` counts the events read, up to and including a broken one.
    """
    prev_hash = GENESIS
    count = 0
    for count, event in enumerate(_chain(run).select_related("run").order_by("seq").iterator(), start=1):
        if event.seq != count:
            return ChainCheck(False, count, event.seq, event.pk,
                              f"sequence gap: expected event #{count}, found #{event.seq} (events deleted)")
        if event.prev_hash != prev_hash:
            return ChainCheck(False, count, event.seq, event.pk, "prev_hash does not match the previous event's hash")
        try:
            expected = event_hash(prev_hash, chain_payload(event))
        except (rfc8785.CanonicalizationError, UnicodeError) as error:
            return ChainCheck(False, count, event.seq, event.pk, f"content cannot be canonicalised (edited): {error}")
        if expected != event.hash:
            return ChainCheck(False, count, event.seq, event.pk, "content does not match its hash (edited)")
        prev_hash = event.hash
    return ChainCheck(True, count)


def record_login_failure(sender, credentials, request=None, **kwargs):
    """A failed browser login, on the run-less chain: who tried, never the password."""
    record_event(
        run=None,
        actor=Actor(label="anonymous"),
        action="login.failed",
        object_type="user",
        object_id=str(credentials.get("username", ""))[:150],
        after={"remote_addr": request.META.get("REMOTE_ADDR", "") if request is not None else ""},
    )

"""The audit trail as events for agents (DESIGN.md §13): their types, their payload, and a cursor over them.

The cursor, and why it cannot skip an event. `AuditEvent.id` comes from a sequence, and a
sequence hands out numbers in the order transactions *ask*, not the order they *commit*: a
transaction holding id 41 may commit after the one holding id 42, so a reader that saw 42 and
moved its cursor past it would never see 41. On PostgreSQL each event therefore carries the id
of the transaction that wrote it (`txid`, a column events/migrations/0001 adds, default
`pg_current_xact_id()`: the top-level transaction even inside a savepoint), and a page only
serves events whose transaction is older than a *horizon*: the oldest transaction id still
running in this database, or the next id to be handed out when none is (`horizon()`, read in a
statement before the page's own). Every transaction older than the horizon has ended, so the
page's later snapshot sees all of its events; every transaction that could still write one is
at least as new as the horizon. Ordered by (txid, id), a page boundary is therefore final:
nothing can appear behind a cursor once it was handed out. The price is latency: an event waits
until every transaction of this database that took its id earlier has ended (a long one holds
the feed back; it loses nothing). The horizon reads pg_stat_activity, which shows the
transaction ids of the sessions of the reader's own role (one role for the app in production,
reviews/db_roles.py); the global `pg_snapshot_xmin` would do without it but is held back by
every database of the cluster. Events written before the column existed read txid 0 and come
first, in id order.

SQLite (the single-process `make run`) serialises its writers on the database lock, so ids
commit in order there and the cursor is (0, id).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection
from django.db.models import Q
from django.db.models.expressions import RawSQL
from django.urls import reverse

from reviews.access import (
    ADMIN,
    AUDITOR,
    READ_AUDIT,
    roles_of,
    runs_with_readable_audit,
)
from reviews.actions import Action
from reviews.audit import hashed_created_at
from reviews.audit_links import object_urls
from reviews.models import AuditEvent

# The types of DESIGN §13 (reviews.actions: an action's feed names): what a subscription gets unless it names
# others. An action the vocabulary does not know is an event of its own name.
EVENT_TYPES = tuple(dict.fromkeys(name for action in Action if action.subscribed for name in action.feed))
_FEED = {action.value: action.feed for action in Action}
_CURSOR = re.compile(r"^(\d{1,19})-(\d{1,19})$")
_TABLE = AuditEvent._meta.db_table


def event_types(action: str, after) -> tuple[str, ...]:
    """The event types one audit event is.

    records writes one `run.validated` per validation of the run's current member set (with the
    run's move, if any, in `after.run_status`): that is `member.validated` for the members it
    validated, plus `run.in_review` or `run.failed` when it moved the run. `member.parsed` is not
    `member.validated`: a parsed member can still fail the set's validation.
    """
    if action == Action.RUN_VALIDATED:
        moved_to = ((after or {}).get("run_status") or {}).get("after")
        if moved_to == "failed":
            return ("run.failed",)  # as a failed finalization is (Action.RUN_FINALIZE_FAILED)
        validated, in_review = Action.RUN_VALIDATED.feed
        return (validated, in_review) if moved_to == "in_review" else (validated,)
    return _FEED.get(action, (action,))


# What a subscription may name (events.services.webhooks refuses any other type), and what one that names
# none gets: every delivery the fan-out makes is of one of these types.
SUBSCRIBABLE = frozenset(EVENT_TYPES)


def may_be_delivered(action: str, after) -> bool:
    """Whether an audit event can owe any subscription a delivery: one of its types is SUBSCRIBABLE. Only these
    wake the fan-out (events/apps.py); it reads the others too, when another event or the sweep wakes it, and
    makes nothing of them. So an upload (`member.uploaded`), which no subscription can receive, costs no
    round trip to Redis, with no cache of the subscriptions to keep fresh."""
    return not SUBSCRIBABLE.isdisjoint(event_types(action, after))


@dataclass(frozen=True, order=True)
class Cursor:
    txid: int
    event_id: int

    def __str__(self) -> str:
        return f"{self.txid}-{self.event_id}"

    @classmethod
    def parse(cls, text: str | None) -> Cursor:
        """The cursor a page handed out ("" or None: the start); ValueError on anything else."""
        if not text:
            return START
        match = _CURSOR.match(text)
        if not match:
            raise ValueError(f"{text!r} is not a cursor of this feed (use the `next` a page returned)")
        return cls(int(match[1]), int(match[2]))


START = Cursor(0, 0)


def visible_events(user):
    """The audit events that concern `user`: every run's for reviewers, auditors and admins, the runs an
    agent created or took part in (reviews.access.may_read_audit); run-less events only to auditors and
    admins, except the events about a caller's own webhooks, which their owner sees."""
    roles = roles_of(user)
    if roles & {AUDITOR, ADMIN}:
        return AuditEvent.objects.all()
    own_webhooks = Q(run__isnull=True, object_type="webhook", after__owner=user.pk)
    if roles & READ_AUDIT:
        return AuditEvent.objects.filter(Q(run__isnull=False) | own_webhooks)
    return AuditEvent.objects.filter(Q(run__in=runs_with_readable_audit(user).values("pk")) | own_webhooks)


_XID32 = 2**32


def horizon() -> int:
    """The oldest transaction id (64-bit) that may still write an event in this database; see the module
    docstring. The next id to be handed out is read first (the statement's snapshot), then the sessions:
    a transaction that took its id in between is newer than that, which the signed 32-bit difference
    below keeps (pg_stat_activity shows the 32-bit form of the id)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # pg_stat_activity is cached per transaction
        cursor.execute(
            "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint, "
            "ARRAY(SELECT backend_xid::text::bigint FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_xid IS NOT NULL AND pid <> pg_backend_pid())")
        next_id, running = cursor.fetchone()
    oldest = next_id
    for short in running or ():
        delta = (short - next_id) % _XID32
        if delta >= _XID32 // 2:
            delta -= _XID32
        oldest = min(oldest, next_id + delta)
    return oldest


def read_page(events, *, after: Cursor, limit: int) -> list[tuple[Cursor, AuditEvent]]:
    """Up to `limit` of `events` (a queryset of AuditEvent) past `after`, oldest first, each with its cursor."""
    if connection.vendor == "postgresql":
        page = (events.annotate(txid=RawSQL(f'"{_TABLE}"."txid"', []))
                .extra(where=[f'("{_TABLE}"."txid", "{_TABLE}"."id") > (%s, %s)', f'"{_TABLE}"."txid" < %s'],
                       params=[after.txid, after.event_id, horizon()])
                .order_by("txid", "id"))
    else:
        page = events.filter(pk__gt=after.event_id).order_by("id")
    rows = list(page.select_related("run")[:limit])
    return [(Cursor(getattr(event, "txid", 0) or 0, event.pk), event) for event in rows]


def _links(run, events) -> dict:
    pages = object_urls(run, events)
    api = {"run": reverse("api-run-detail", args=[run.run_id]), "audit": reverse("api-run-audit", args=[run.run_id])}
    found = {}
    for event in events:
        links = dict(api, page=pages[event.pk])
        if event.object_type == "correction_request":
            links["corrections"] = reverse("api-corrections", args=[run.run_id])
        elif event.object_type == "member_version":
            links["member"] = reverse("api-member-detail", args=[run.run_id, event.object_id.split("/", 1)[0]])
        found[event.pk] = links
    return found


def payloads(events, *, only_types: set[str] | None = None) -> list[dict]:
    """The Standard Webhooks payloads of these events, one per (event, type), in the events' order:
    `{type, timestamp, data}` where data is the audit event (id, run, seq, action, object, actor,
    time, before, after, chain) plus links to its objects."""
    by_run: dict = {}
    for event in events:
        by_run.setdefault(event.run_id, (event.run, []))[1].append(event)
    links = {}
    for run, group in by_run.values():
        links.update(_links(run, group) if run is not None else {})
    out = []
    for event in events:
        for event_type in event_types(event.action, event.after):
            if only_types is not None and event_type not in only_types:
                continue
            out.append(payload(event, event_type, links.get(event.pk, {})))
    return out


def payload(event: AuditEvent, event_type: str, links: dict) -> dict:
    time = hashed_created_at(event)
    return {
        "type": event_type,
        "timestamp": time,
        "data": {
            "id": event.pk,
            "run": event.run.run_id if event.run_id else None,
            "seq": event.seq,
            "action": event.action,
            "object": {"type": event.object_type, "id": event.object_id},
            "actor": event.actor,
            "time": time,
            "before": event.before,
            "after": event.after,
            "chain": {"seq": event.seq, "prev_hash": event.prev_hash, "hash": event.hash},
            "links": links,
        },
    }

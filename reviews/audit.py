"""The audit trail: one function writes it, one verifies it (DESIGN.md §8).

Each run has one chain of events; events without a run (tokens issued or
revoked) form one more chain. Within a chain, `seq` counts 1, 2, 3, … and

    hash = SHA-256(prev_hash as 64 ASCII hex digits + canonical JSON bytes)

where the first event's prev_hash is 64 zeros and the canonical JSON is the
object built by `chain_payload`: run (its `run_id`, or null), seq, actor,
action, object_type, object_id, before, after, created_at (ISO 8601 with
microseconds and offset, `2026-09-25T10:00:00.123456+00:00`), prev_hash and
salt (32 hex digits: 16 random bytes; events written before salts have none,
and their payload no `salt` key), serialised per RFC 8785 (JCS) by the `rfc8785` package: keys sorted by
UTF-16 code units, UTF-8, no insignificant whitespace, numbers in their
ECMAScript form (`1.0` is `1`, `1e16` is `10000000000000000`). The API
returns `created_at` in exactly this form, so anyone can recompute the chain
from `GET /api/runs/{run_id}/audit/` alone.

Blind and signed (DESIGN §8): the salt is withheld with a withheld event's
content (reviews/withheld.py), so its hash confirms no guess of that content;
a chain's events after its first salted one must all be salted. Each event's
`signature` is the audit key's Ed25519 signature of its hash
(reviews/audit_keys.py), a key the database never holds: verify_chain
(reviews/audit_check.py) names an event unsigned, or wrongly signed, after the
chain's first signed event; those before it are unsigned history.

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
TRUNCATE (migration 0002), and in production the app's database role owns no
table, so it can neither disable nor drop that trigger (reviews/db_roles.py).
A chain alone cannot show that events were cut from its end, so the run row
keeps the chain head (`audit_head_seq`, `audit_head_hash`), written by
`record_event` in the transaction of each event (or once for a block of
them: `appending`) and read back as the next event's predecessor:
`verify_chain` compares the trail with it, and sequence numbers freed by a
deletion are never handed out again.

Denials (`permission.denied`) go through `record_denial`, which folds one
caller's denials on one run into one event per FOLD_SECONDS with a count, so
a caller cannot flood a run's permanent trail.
"""
from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta
from functools import lru_cache, partial
from typing import Any, Callable

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.models.sql import InsertQuery
from django.utils import timezone

from .actions import Action
from .audit_check import ChainCheck, verify_chain  # noqa: F401  (callers import the chain's check from here)
from .audit_form import GENESIS, canonical_json, chain_payload, event_hash, hashed_created_at, new_salt  # noqa: F401
from .audit_keys import event_signature
from .binding import cursor_for
from .models import ApiToken, AuditEvent, DenialTally, Run

# The integers RFC 8785 (I-JSON) carries exactly.
SAFE_INT = 2**53 - 1
# A denial is not participation in a run (reviews.access.may_read_audit reads this).
DENIED = Action.PERMISSION_DENIED
# One caller's denials on one run within this many seconds of the window's first are one event.
FOLD_SECONDS = 60

_UNSTORABLE_CHARS = re.compile("[\x00\ud800-\udfff]")

# Called with each event's pk once the transaction that wrote it commits. An app above reviews (events,
# which turns the trail into webhook deliveries) registers here from its AppConfig.ready, so reviews
# never imports it. A hook is a wake-up, not the record: what it missed (a process that died between
# the commit and the call) is still in the trail, and whoever it wakes reads the trail from its own mark.
# Each hook comes with the test of the events it is for (`wants(action, after)`), or None for every event.
_committed_hooks: list[tuple[Callable[[int], None], Callable[[str, Any], bool] | None]] = []


def on_event_committed(hook: Callable[[int], None], *, wants: Callable[[str, Any], bool] | None = None) -> None:
    """Call `hook(event_pk)` after the commit of every event record_event writes (once per hook); with `wants`,
    only of the events for which `wants(action, after)` is true (`after` as stored, made plain JSON)."""
    if all(known is not hook for known, _wants in _committed_hooks):
        _committed_hooks.append((hook, wants))


@dataclass(frozen=True)
class Actor:
    """Who acts: a user (browser), an API token's holder, or a worker task."""

    label: str
    user_id: int | None = None
    # The API token the request came with: record_event re-checks it in the transaction it commits.
    token_id: int | None = field(default=None, compare=False)

    @classmethod
    def for_request(cls, request) -> "Actor":
        user = getattr(request, "user", None)
        token = getattr(request, "auth", None)
        token_name = getattr(token, "name", None)
        if token_name:
            return cls(label=f"token:{token_name}", user_id=user.pk, token_id=getattr(token, "pk", None))
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


def lock_run(run: Run | str) -> Run:
    """Lock the run's row for the rest of the transaction and return it fresh.

    `run` is the Run, or its run_id (the upload API passes the ID, so that the run is read once, by this
    lock); Run.DoesNotExist when there is none.

    This row lock is also what serialises appends to the run's audit chain, so
    every service that changes a run's state takes it FIRST, before locking any
    other row: one lock order (run, then its members, mappings, ...) means
    concurrent uploads, workers and reviewers queue up instead of deadlocking.

    A raw statement, its text built once per process: the ORM compiled this one-row read for about three
    times the CPU of running it, and every service passes here.
    """
    if connection.features.has_select_for_update and connection.get_autocommit():
        # As the ORM's select_for_update() refuses: a lock that would end with its own statement is a bug.
        raise transaction.TransactionManagementError("lock_run() outside a transaction locks nothing")
    by_id = isinstance(run, str)
    found = next(iter(Run.objects.raw(_lock_run_sql(by_id), [run if by_id else run.pk])), None)
    if found is None:
        raise Run.DoesNotExist(f"no run {run!r}" if by_id else f"no run with pk {run.pk}")
    return found


@lru_cache(maxsize=2)
def _lock_run_sql(by_run_id: bool) -> str:
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return f'SELECT * FROM "{Run._meta.db_table}" WHERE "{"run_id" if by_run_id else "id"}" = %s{lock}'


def _chain_head(run: Run | None) -> tuple[int, str] | None:
    """Serialise appends to one chain so concurrent writers cannot fork it, then read its last (seq, hash).

    A run's chain is guarded by the run's row lock (see lock_run; re-taking it in
    the same transaction is one cheap statement), and its head is read from the
    run row by that same statement: the row, not the events, says where the chain
    ends, so events deleted behind the trigger's back leave a gap, never a reused
    number. The run-less chain (tokens, logins) has no row, so it takes a
    transaction-scoped advisory lock and reads its last event by a statement of
    its own, after the lock: under READ COMMITTED only a statement that starts
    once the lock is granted sees the event its previous holder committed. SQLite
    serialises writers on its own database lock; UniqueConstraint(run, seq) backs
    both. Plain SQL: every event of every service passes here.
    """
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if run is not None:
            cursor.execute(f'SELECT "audit_head_seq", "audit_head_hash" FROM "{Run._meta.db_table}" WHERE "id" = %s'
                           + (" FOR UPDATE" if postgres else ""), [run.pk])
            row = cursor.fetchone()
            return (row[0], row[1]) if row and row[0] else None
        if postgres:
            # Two-int form: namespace 4242 keeps clear of other advisory locks.
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [4242, 0])
        cursor.execute(f'SELECT "seq", "hash" FROM "{AuditEvent._meta.db_table}" WHERE "run_id" IS NULL '
                       'ORDER BY "seq" DESC LIMIT 1')
        return cursor.fetchone()


def _advance_head(run: Run, seq: int, hash_: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f'UPDATE "{Run._meta.db_table}" SET "audit_head_seq" = %s, "audit_head_hash" = %s '
                       'WHERE "id" = %s', [seq, hash_, run.pk])
    run.audit_head_seq, run.audit_head_hash = seq, hash_


# Runs whose events an `appending` block writes: run pk → the run row's head when the block began.
_appending: ContextVar[dict[int, tuple[int, str] | None]] = ContextVar("aas_audit_appending", default={})
_NOT_APPENDING = object()


@contextlib.contextmanager
def appending(run: Run) -> Iterator[None]:
    """Write many events of `run` in the caller's transaction (which holds the run's row lock, lock_run) and
    move the run row's chain head once, when the block ends, not once per event (PostgreSQL).

    Every event moved the head by updating the run row, and PostgreSQL keeps each version of a row updated
    in one transaction until it ends: the 2,000th event of a bulk accept walked 2,000 versions of the row
    to read the head, as many to move it, and so did each foreign-key check on the run (2,000 acceptances:
    28.9 s, 10.9 s in a block, measured in process). In the block each event's predecessor
    is the last event the block wrote, read from the events themselves (a savepoint rolled back takes its
    events with it), or the row's head before the first; no one else appends meanwhile (the row lock) nor
    deletes (the trigger). An exception out of the block leaves the row as it was, and the caller's atomic
    block rolls the events back with the change they record."""
    if connection.vendor != "postgresql" or run.pk in _appending.get():
        yield
        return
    if not connection.in_atomic_block:
        raise transaction.TransactionManagementError("appending() outside a transaction moves no head")
    start = _chain_head(run)
    token = _appending.set(_appending.get() | {run.pk: start})
    try:
        yield
    finally:
        _appending.reset(token)
    # Forward only, to the last event written since the block began (none: the head stays where it was).
    last = _appended_head(run, start)
    if last != start:
        _advance_head(run, *last)
    else:
        run.audit_head_seq, run.audit_head_hash = start or (0, "")


def _appended_head(run: Run, start: tuple[int, str] | None) -> tuple[int, str] | None:
    """The chain's head inside an `appending` block that began at `start`: its last event written since."""
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "seq", "hash" FROM "{AuditEvent._meta.db_table}" WHERE "run_id" = %s AND "seq" > %s '
                       'ORDER BY "seq" DESC LIMIT 1', [run.pk, start[0] if start else 0])
        return cursor.fetchone() or start


def _insert_at_head(run: Run, event: AuditEvent, run_fields=(), token_id: int | None = None,
                    with_event: WithEvent | None = None, move_head: bool = True) -> bool | None:
    """Insert `event` and move the run's chain head to it (saving `run_fields` of `run` too) in one
    statement, a data-modifying CTE: every service writes at least one event, and the upload's ingest
    writes three (issue 23 item 7). With `token_id`, the same statement re-checks that API token as
    confirm_token does (its row read FOR SHARE) and returns whether it is live (None: no such token);
    the caller raises, and the transaction rolls back with the event. `with_event`: the caller's change,
    written by the same statement (its CTEs first), its value set."""
    fields = [Run._meta.get_field(name) for name in run_fields]
    params = list(with_event.params) if with_event else []
    params += [f.get_db_prep_save(f.pre_save(event, True), connection) for f in _EVENT_FIELDS]
    if move_head:
        params += [event.seq, event.hash, *(f.get_db_prep_save(f.pre_save(run, False), connection) for f in fields),
                   run.pk]
    if token_id is not None:
        params.append(token_id)
    with cursor_for(params) as cursor:  # a version's bytes (with_event) travel as they are
        cursor.execute(_insert_at_head_sql(tuple(run_fields), token_id is not None,
                                           (with_event.ctes, with_event.returning) if with_event else None,
                                           move_head), params)
        event.pk, live, *carried = cursor.fetchone()
    if with_event:
        with_event.value = carried[0]
    event._state.adding, event._state.db = False, connection.alias
    run.audit_head_seq, run.audit_head_hash = event.seq, event.hash
    return live


_EVENT_FIELDS = [f for f in AuditEvent._meta.local_concrete_fields if not f.primary_key]


@lru_cache(maxsize=64)
def _insert_at_head_sql(run_fields: tuple[str, ...], check_token: bool, carried: tuple[str, str] | None,
                        move_head: bool = True) -> str:
    """_insert_at_head's statement, compiled by the ORM once per process and shape (PostgreSQL only): its text
    does not depend on the values, whose parameters are prepared per event as the ORM's compiler prepares
    them (each field's pre_save, then get_db_prep_save). Compiled on every event, it cost more CPU than it
    took PostgreSQL to run it (the upload's, DESIGN §11 "uploads")."""
    query = InsertQuery(AuditEvent)
    query.insert_values(_EVENT_FIELDS, [AuditEvent(run_id=0, seq=0, created_at=timezone.now())])
    [(insert, _params)] = query.get_compiler(connection=connection).as_sql()
    pk = AuditEvent._meta.pk.column
    sets = "".join(f', "{Run._meta.get_field(name).column}" = %s' for name in run_fields)
    token = (f'(SELECT "revoked_at" IS NULL FROM "{ApiToken._meta.db_table}" WHERE "id" = %s FOR SHARE)'
             if check_token else "NULL")
    ctes, returning = (f"{carried[0]}, ", f", {carried[1]}") if carried else ("", "")
    if not move_head:  # inside `appending`: the run row's head moves once, at the block's end
        return f'WITH {ctes}"event" AS ({insert} RETURNING "{pk}") SELECT (SELECT "{pk}" FROM "event"), {token}{returning}'
    return (f'WITH {ctes}"event" AS ({insert} RETURNING "{pk}") UPDATE "{Run._meta.db_table}" '
            f'SET "audit_head_seq" = %s, "audit_head_hash" = %s{sets} WHERE "id" = %s '
            f'RETURNING (SELECT "{pk}" FROM "event"), {token}{returning}')


@dataclass
class WithEvent:
    """A change of the caller's that the statement inserting its event writes too (PostgreSQL, an event of a
    run: `carries_changes`): the change and its event in one round trip. `ctes`: data-modifying CTEs
    (`"name" AS (INSERT … RETURNING …), …`, none named "event") with their `params`; `returning`: one SQL
    expression over them (`(SELECT "id" FROM "name")`), whose value record_event puts in `value`."""

    ctes: str
    params: list
    returning: str
    value: Any = None


def carries_changes(run: Run | None) -> bool:
    """Whether record_event can write a WithEvent for an event of `run` (elsewhere the caller writes it)."""
    return run is not None and connection.vendor == "postgresql"


class TokenRevoked(Exception):
    """The request's API token was revoked after it was authenticated and before its change committed."""


def confirm_token(actor: Actor) -> None:
    """Re-check the actor's API token inside the caller's transaction; TokenRevoked (nothing commits) if revoked.

    On PostgreSQL the token row is read FOR SHARE: a revocation that starts now waits for this commit, so
    a change is either committed under a live token or not at all (issue 23: a token revoked mid-upload).
    record_event does the same for an event of a run on PostgreSQL inside the statement that inserts it
    (_insert_at_head): one round trip fewer for every such event.
    """
    if actor.token_id is None:
        return
    share = " FOR SHARE" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT revoked_at FROM {ApiToken._meta.db_table} WHERE id = %s{share}", [actor.token_id])
        row = cursor.fetchone()
    if row is None or row[0] is not None:
        raise TokenRevoked(_REVOKED)


_REVOKED = "This token was revoked while the request ran; nothing was stored."


def record_event(
    *,
    run: Run | None,
    actor: Actor,
    action: Action,
    object_type: str,
    object_id: str | int,
    before: Any = None,
    after: Any = None,
    head_known: bool = False,
    run_fields: tuple[str, ...] | list[str] = (),
    with_event: WithEvent | None = None,
) -> AuditEvent:
    """Append one event to the run's chain, and move the run's chain head to it, in the caller's transaction.

    before/after are made plain JSON first (see the module docstring); the
    event's hash covers them as stored. `head_known`: the caller took `run` from
    lock_run in this transaction and no event of the run has been written since,
    so its audit_head fields are the chain's head and need not be read again (the
    upload and the parse, issue 23 item 7); were they not, the (run, seq)
    constraint refuses the event rather than fork the chain. `run_fields`: fields
    of `run` the caller changed and would save just before the event, saved by
    the same statement that moves the head instead (its status, say). `with_event`: a change of the
    caller's that the event's own statement writes (only where carries_changes(run); ValueError elsewhere).
    """
    # Inside the caller's transaction no savepoint of its own: an event that cannot be written must
    # roll back the change it records, and two fewer statements per event matter on the upload path.
    with transaction.atomic(savepoint=False):
        in_statement = carries_changes(run)  # the token re-checked by the insert
        if with_event is not None and not in_statement:
            raise ValueError("record_event carries a change only for an event of a run on PostgreSQL")
        if not in_statement:
            confirm_token(actor)
        appended_from = _appending.get().get(run.pk, _NOT_APPENDING) if run is not None else _NOT_APPENDING
        if appended_from is not _NOT_APPENDING:
            last = _appended_head(run, appended_from)
        elif head_known and run is not None:
            last = (run.audit_head_seq, run.audit_head_hash) if run.audit_head_seq else None
        else:
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
            salt=new_salt(),
        )
        event.hash = event_hash(prev_hash, chain_payload(event))
        event.signature = event_signature(event.hash)
        if in_statement:
            live = _insert_at_head(run, event, run_fields, actor.token_id, with_event,
                                   move_head=appended_from is _NOT_APPENDING or bool(run_fields))
            if actor.token_id is not None and not live:
                raise TokenRevoked(_REVOKED)
        else:
            if run is not None and run_fields:
                run.save(update_fields=list(run_fields))
            event.save(force_insert=True)
            if run is not None:
                _advance_head(run, event.seq, event.hash)
        for hook, wants in _committed_hooks:
            if wants is None or wants(action, event.after):
                transaction.on_commit(partial(hook, event.pk))
        return event


def record_denial(*, run: Run, actor: Actor, attempted: str, roles: list[str] | set[str],
                  outside: bool = False) -> AuditEvent:
    """Audit a denial to `actor` on `run`, folding repeats into one event per FOLD_SECONDS with a count.

    The window's first denial writes a `permission.denied` event (`count` 1, and
    the final count of the caller's previous window when there was one); later
    denials in the window only add to the caller's DenialTally. Returns the
    event that stands for this denial. Takes the run's row lock, like every
    writer of its chain. `outside`: the caller is an agent outside the run, whose
    denial goes on the run-less chain (naming the run), never on the run's trail.
    """
    now = timezone.now()
    with transaction.atomic():
        lock_run(run)
        label = _plain_str(actor.label)
        tally = DenialTally.objects.filter(run=run, actor=label).select_related("event").first()
        if tally is not None and now - tally.window_start < timedelta(seconds=FOLD_SECONDS):
            tally.count += 1
            tally.attempts[attempted] = tally.attempts.get(attempted, 0) + 1
            tally.save(update_fields=["count", "attempts"])
            return tally.event
        after = {"attempted": attempted, "roles": sorted(roles), "count": 1,
                 "fold_seconds": FOLD_SECONDS}
        if tally is not None:
            after["previous_window"] = {"started": tally.window_start.isoformat(), "count": tally.count,
                                        "attempts": tally.attempts, "event_seq": tally.event.seq}
        event = record_event(run=None if outside else run, actor=actor, action=DENIED, object_type="run",
                             object_id=run.run_id, after=after)
        if tally is None:
            DenialTally.objects.create(run=run, actor=label, window_start=now, count=1, attempts={attempted: 1},
                                       event=event)
        else:
            tally.window_start, tally.count, tally.attempts, tally.event = now, 1, {attempted: 1}, event
            tally.save(update_fields=["window_start", "count", "attempts", "event"])
        return event


def chain_head(run: Run) -> tuple[int, str]:
    """The (seq, hash) the run row records as its chain's end: what approval, finalization and the
    attestation record, and what an export carries as audit.json's `head`."""
    seq, digest = Run.objects.filter(pk=run.pk).values_list("audit_head_seq", "audit_head_hash").get()
    return seq, digest or GENESIS


def record_login_failure(sender, credentials, request=None, **kwargs):
    """A failed browser login, on the run-less chain: who tried, never the password."""
    record_event(
        run=None,
        actor=Actor(label="anonymous"),
        action=Action.LOGIN_FAILED,
        object_type="user",
        object_id=str(credentials.get("username", ""))[:150],
        after={"remote_addr": request.META.get("REMOTE_ADDR", "") if request is not None else ""},
    )

"""A report's bytes go to PostgreSQL as a binary parameter, not as hex written into the statement's text
(reviews.binding, DESIGN §11): the statement that stores them runs on a server-binding cursor, through
the connection's execute wrappers, and PostgreSQL's own digest of the stored column is the bytes' digest."""
import hashlib

import psycopg
import pytest
from django.db import connection

from records import services
from records.models import MemberVersion
from reviews import queue
from reviews.audit import Actor
from reviews.binding import cursor_for
from tests.conftest import seed_bytes

ACTOR = Actor.command("test")
# What hex or escape quoting gets wrong: backslashes, quotes, `\\x` that reads as hex, multi-byte characters.
ODD = "\n\\x00 \\\\ ' '' \" \t \u00e9 \u2014 \U0001f600 \\\n".encode("utf-8")


def _uploaded(run, content, monkeypatch):
    monkeypatch.setattr(queue.Job, "send", lambda job, *args: None)
    seen = []

    def watch(execute, sql, params, many, context):
        if params and any(isinstance(p, psycopg.Binary) for p in params):
            seen.append(type(context["cursor"].cursor))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        version, _ = services.ingest_member_report(run=run, role="memory", filename="m.md", content=content,
                                                   actor=ACTOR)
    return version, seen


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("first", [True, False])  # the first version (its event carries it) and a later one
def test_the_stored_bytes_are_sent_bound_on_the_server_and_stored_exactly(run_factory, monkeypatch, first):
    run = run_factory()
    if not first:
        _uploaded(run, seed_bytes("002"), monkeypatch)
    content = seed_bytes("002") + ODD
    version, seen = _uploaded(run, content, monkeypatch)
    assert seen and all(kind is psycopg.Cursor for kind in seen)  # not the client-binding ClientCursor
    with connection.cursor() as cursor:
        cursor.execute("SELECT encode(sha256(content), 'hex'), length(content) FROM records_memberversion "
                       "WHERE id = %s", [version.pk])
        assert cursor.fetchone() == (hashlib.sha256(content).hexdigest(), len(content))
    assert MemberVersion.objects.get(pk=version.pk).sha256 == hashlib.sha256(content).hexdigest()


@pytest.mark.django_db
def test_a_statement_without_bytes_keeps_django_s_cursor():
    with cursor_for([1, "a", None]) as cursor:
        assert isinstance(cursor.cursor, psycopg.ClientCursor)
    with cursor_for([1, psycopg.Binary(b"x")]) as cursor:
        assert type(cursor.cursor) is psycopg.Cursor

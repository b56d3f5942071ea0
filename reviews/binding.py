"""A statement that carries a report's bytes, bound on the server: the bytes travel as they are (DESIGN §11).

Django's psycopg cursor binds on the client: every parameter is written into the statement's text, so
a 2 MB report went to PostgreSQL as 4 MB of hex that the client wrote and the server parsed back (33-49 ms
of a 2 MB upload; 4-8 ms as a binary parameter, measured apart). A statement with a bytes parameter gets
a server-binding cursor on the same connection and transaction instead, wrapped as Django wraps its own
(execute wrappers, the query log), so whatever counts or logs statements sees it. Every other statement
keeps Django's cursor: server-side binding everywhere would change how PostgreSQL types each parameter.
Its results load through the connection's loaders, without the time zone Django may set on each cursor of
its own: the callers read ids back, nothing else.
"""
from __future__ import annotations

from collections.abc import Sequence

from django.db import connection


def cursor_for(params: Sequence):
    """A cursor to execute one statement with `params`: a server-binding one on PostgreSQL when a parameter is
    bytes, Django's own otherwise. Use it as `connection.cursor()` (a context manager)."""
    if connection.vendor != "postgresql":
        return connection.cursor()
    import psycopg

    # A BinaryField's value arrives wrapped in the driver's Binary (its get_db_prep_value).
    if not any(isinstance(p, (bytes, bytearray, memoryview, psycopg.Binary)) for p in params):
        return connection.cursor()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    raw = psycopg.Cursor(connection.connection)
    return connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)

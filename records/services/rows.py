"""Rows written in bulk from plain tuples: PostgreSQL's COPY for the thousands a large report makes (DESIGN §11).

A 2 MB report stores about 900 records, 1,400 quotation checks and 3,600 findings. Through
`bulk_create` each row was a model instance first and each value went through the ORM's
preparation and the client-side quoting of a multi-row INSERT; COPY takes the values as they are, in
PostgreSQL's binary format (each column typed as its field's database type).
Nothing reads the new rows' primary keys back (COPY returns none). Elsewhere (SQLite) the rows
become model instances and `bulk_create` writes them, as before.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from django.db import connection, models

_TYPE_MODIFIER = re.compile(r"\(.*\)")


def insert_rows(model: type[models.Model], fields: Sequence[str], rows: Sequence[Sequence]) -> None:
    """Insert `rows` into `model`'s table: each row holds the values of `fields` (attnames, such as
    `run_id`, in that order). The caller gives every column without a database default (the
    model's Python defaults are not applied) and values the columns accept (lengths cut already).
    No rows, no statement (as bulk_create)."""
    if not rows:
        return
    meta = model._meta
    by_attname = {f.attname: f for f in meta.concrete_fields}
    targets = [by_attname[name] for name in fields]
    if connection.vendor != "postgresql":
        model.objects.bulk_create([model(**dict(zip(fields, row))) for row in rows], batch_size=500)
        return
    # JSON values adapted as the ORM adapts them (Jsonb with the field's encoder); the rest as they are.
    json_at = [(i, f.encoder) for i, f in enumerate(targets) if isinstance(f, models.JSONField)]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in targets)
    adapt = connection.ops.adapt_json_value
    # Binary: no escaping of the texts on either side (a 2 MB report's records with their foreign-key checks,
    # alternating in process: median 87 -> 74 ms).
    sql = f"COPY {connection.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN (FORMAT BINARY)"
    types = [_TYPE_MODIFIER.sub("", f.db_type(connection)) for f in targets]  # `varchar(120)` is a varchar

    def copy_rows(sql, params, many, context) -> None:
        with context["cursor"].copy(sql) as copy:
            copy.set_types(types)
            for row in rows:
                if json_at:
                    row = list(row)
                    for i, encoder in json_at:
                        if row[i] is not None:
                            row[i] = adapt(row[i], encoder)
                copy.write_row(row)

    # Through the connection's execute wrappers, as the ORM runs its statements (Django's debug cursor logs
    # a COPY itself, but no wrapper sees one): what counts statements with a wrapper (the bench) counts it.
    with connection.cursor() as cursor:
        execute = copy_rows
        for wrapper in reversed(connection.execute_wrappers):
            execute = functools.partial(wrapper, execute)
        execute(sql, None, False, {"connection": connection, "cursor": cursor})

"""`make run`'s first step: create the PostgreSQL database DATABASE_URL names when it does not exist.

A new user following the README (`DATABASE_URL=postgres://…/aas … make run`) otherwise stops at
`migrate` with 'database "aas" does not exist'. Nothing happens on SQLite (the file is created on
first use) or when the database answers; any other connection error is raised as it is.
"""
from django.core.management.base import BaseCommand
from django.db import connection
from django.db.utils import OperationalError


class Command(BaseCommand):
    help = "Create the configured PostgreSQL database if it does not exist (nothing on SQLite)."

    def handle(self, *args, **options):
        if connection.vendor != "postgresql":
            return
        try:
            connection.ensure_connection()
            return
        except OperationalError as error:
            # 3D000 invalid_catalog_name; libpq's connection errors may carry no SQLSTATE, so the
            # English text (lc_messages) is the fallback.
            missing = getattr(error.__cause__, "sqlstate", None) == "3D000" or "does not exist" in str(error)
            if not missing:
                raise
        name = connection.settings_dict["NAME"]
        # Django's own way in when the database is missing: a cursor on the server's `postgres` database.
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {connection.ops.quote_name(name)}")
        self.stdout.write(f"created database {name}")

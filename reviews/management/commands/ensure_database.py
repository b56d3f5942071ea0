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
            if "does not exist" not in str(error):
                raise
        name = connection.settings_dict["NAME"]
        # Django's own way in when the database is missing: a cursor on the server's `postgres` database.
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {connection.ops.quote_name(name)}")
        self.stdout.write(f"created database {name}")

"""The two PostgreSQL roles of a production database (DESIGN §8): an owner that migrates, an app that owns nothing.

The owner role owns every table (it runs `manage.py migrate`, and only it
could disable, drop or alter the audit trail's append-only triggers). The
app role, which the web server and the workers connect as, owns no table and
holds only row privileges: SELECT, INSERT, UPDATE and DELETE on the app's
tables, SELECT and INSERT alone on the audit table, SELECT alone on
`django_migrations`. PostgreSQL lets only a table's owner run `ALTER TABLE`
(`DISABLE TRIGGER` included) or `DROP TRIGGER`, and TRUNCATE needs a privilege
never granted, so the app role cannot cut the trail by any of them.
"""
from __future__ import annotations

from django.db import connection

from .models import AuditEvent

READ_ONLY = ("django_migrations",)


def app_role_grants(*, app_role: str, owner_role: str) -> list[str]:
    """The statements (run as the owner, after `migrate`) that give `app_role` what the app needs, and no more."""
    quote = connection.ops.quote_name
    app, owner = quote(app_role), quote(owner_role)
    audit = quote(AuditEvent._meta.db_table)
    database = quote(connection.settings_dict["NAME"])
    statements = [
        f"GRANT CONNECT ON DATABASE {database} TO {app}",
        f"GRANT USAGE ON SCHEMA public TO {app}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {app}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {app}",
        # Tables that later migrations create get the same row privileges.
        f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {app}",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {app}",
        # The trail: read and append only (the trigger refuses UPDATE and DELETE to its owner too).
        f"REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON {audit} FROM {app}",
    ]
    statements += [f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON {quote(table)} FROM {app}" for table in READ_ONLY]
    return statements


def apply_app_role_grants(*, app_role: str, owner_role: str) -> list[str]:
    """Run `app_role_grants` on the default connection (which must be the owner's); returns what ran."""
    statements = app_role_grants(app_role=app_role, owner_role=owner_role)
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    return statements

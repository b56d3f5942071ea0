"""`python manage.py db_roles APP_ROLE --owner OWNER [--apply]`: the app role's grants (reviews/db_roles.py)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from reviews.db_roles import app_role_grants, apply_app_role_grants


class Command(BaseCommand):
    help = ("Print (or with --apply, run as the owner role) the GRANT statements that let APP_ROLE use the "
            "app's tables without owning any: the audit table only SELECT and INSERT. PostgreSQL only.")

    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("app_role", help="the role the web server and workers connect as, e.g. aas_app")
        parser.add_argument("--owner", required=True, help="the role that owns the tables and migrates, e.g. aas_owner")
        parser.add_argument("--apply", action="store_true", help="run the statements on DATABASE_URL")

    def handle(self, *args, app_role: str, owner: str, apply: bool, **options):
        if connection.vendor != "postgresql":
            raise CommandError("db_roles: roles and grants are PostgreSQL's; DATABASE_URL names "
                               f"{connection.vendor}")
        statements = (apply_app_role_grants if apply else app_role_grants)(app_role=app_role, owner_role=owner)
        for statement in statements:
            self.stdout.write(statement + ";")

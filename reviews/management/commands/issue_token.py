from django.core.management.base import BaseCommand, CommandError

from reviews.access import ROLES
from reviews.audit import Actor
from reviews.services import issue_token


class Command(BaseCommand):
    help = "Create the user if needed, give it ROLE, and print a new API token (only the token)."

    # Needs the database, not SECRET_KEY: no system checks, so it runs without one (issue 24 item 8).
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument("--password", help="set this UI login password for the user")
        parser.add_argument("--adjudicate", action="store_true",
                            help="a reviewer who may settle conflicts between independent review passes")

    def handle(self, *args, name, role, password=None, adjudicate=False, **options):
        try:
            _, key = issue_token(name=name, role=role, password=password, adjudicate=adjudicate,
                                  actor=Actor.command("issue_token"))
        except ValueError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(key)

from django.core.management.base import BaseCommand, CommandError

from reviews.audit import Actor
from reviews.models import ApiToken
from reviews.services import revoke_token


class Command(BaseCommand):
    help = "Revoke every active API token of NAME, or the one whose key starts with --prefix."

    # Needs the database, not SECRET_KEY (issue 24 item 8).
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--prefix", help="the first characters of the key, as listed in the admin")

    def handle(self, *args, name, prefix=None, **options):
        tokens = ApiToken.objects.filter(name=name, revoked_at__isnull=True)
        if prefix:
            tokens = tokens.filter(key_prefix__startswith=prefix[:10])
        if not tokens.exists():
            raise CommandError(f"no active token named {name!r}")
        for token in tokens:
            revoke_token(token=token, actor=Actor.command("revoke_token"))
            self.stdout.write(f"revoked {token}")

"""`python manage.py audit_key ensure|rotate|list`: the audit key that signs every audit event (reviews.audit_keys)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from reviews import audit_keys


class Command(BaseCommand):
    help = ("Manage the audit key at AUDIT_KEY_PATH: `ensure` makes one when there is none (so does "
            "`signing_key ensure`), `rotate` replaces it (the old public key stays published with its "
            "valid_until), `list` the published audit keys. Prints key IDs only, never a private key.")

    # Key files need neither the database nor a secret: no system checks (so no SECRET_KEY either).
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["ensure", "rotate", "list"])

    def handle(self, *args, action: str, **options):
        try:
            if action == "ensure":
                keyid, created = audit_keys.ensure_audit_key()
                self.stdout.write(f"{'created' if created else 'kept'} audit key {keyid} at {audit_keys.key_path()}")
            elif action == "rotate":
                old, new = audit_keys.rotate_audit_key()
                self.stdout.write(f"retired {old} (still published)\ncurrent {new}")
            else:
                keys = audit_keys.published_audit_keys()
                if not keys:
                    self.stdout.write(f"no published audit key in {audit_keys.public_dir()}")
                for key in keys:
                    until = f"until {key.valid_until}" if key.valid_until else "current"
                    self.stdout.write(f"{key.keyid}  ed25519  audit  from {key.valid_from}  {until}")
        except audit_keys.AuditKeyError as error:
            raise CommandError(str(error)) from None

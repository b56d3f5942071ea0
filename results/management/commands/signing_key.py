"""`python manage.py signing_key create|rotate|list|ensure`: the server's Ed25519 signing keys (results.signing)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from results import signing
from reviews import audit_keys


class Command(BaseCommand):
    help = ("Manage the result-signing key at SIGNING_KEY_PATH: `create` a first key, `rotate` to a new one "
            "(the old public key stays published, retired: its valid_until set, the new key's valid_from), `list` "
            "the published keys with the fingerprint to publish out of band, `ensure` a key (and write purpose, "
            "valid_from and valid_until into keys published before them). Prints key IDs, fingerprints and "
            "public keys only, never a private key.")

    # Key files need neither the database nor a secret: no system checks (so no SECRET_KEY either).
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["create", "rotate", "list", "ensure"],
                            help="ensure: create a key only when there is none (what `make run` does), and the "
                                 "audit key likewise (`manage.py audit_key`)")

    def handle(self, *args, action: str, **options):
        try:
            if action == "create":
                key = signing.create_key()
                self.stdout.write(f"created {key.keyid} at {signing.key_path()}")
            elif action == "ensure":
                key, created = signing.ensure_key()
                self.stdout.write(f"{'created' if created else 'kept'} {key.keyid} at {signing.key_path()}")
                audit_id, created = audit_keys.ensure_audit_key()
                self.stdout.write(f"{'created' if created else 'kept'} audit key {audit_id} at {audit_keys.key_path()}")
                self._complete()
            elif action == "rotate":
                retired, new = signing.rotate_key()
                self.stdout.write(f"retired {retired.keyid} (still published)\ncurrent {new.keyid}")
                self._complete()
            else:
                self._list()
        except (signing.SigningKeyError, audit_keys.AuditKeyError) as error:
            raise CommandError(str(error)) from None

    def _complete(self) -> None:
        completed = signing.complete_published()
        if completed:
            self.stdout.write(f"added purpose, valid_from, valid_until to {completed} published "
                              f"key{'s' if completed != 1 else ''} in {signing.public_dir()}")

    def _list(self) -> None:
        try:
            current = signing.load_signing_key().keyid
        except signing.SigningKeyError:
            current = None
        keys = signing.published_keys()
        if not keys:
            self.stdout.write(f"no published key in {signing.public_dir()}")
        for key in keys:
            state = "current" if key.keyid == current else (f"retired {key.retired}" if key.retired else "published")
            window = f"valid {key.valid_from or key.created} to {key.valid_until or 'now'}"
            self.stdout.write(f"{key.keyid}  ed25519  {key.purpose}  fingerprint {key.fingerprint}  {window}  "
                              f"created {key.created}  {state}")

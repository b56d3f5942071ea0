"""`python manage.py audit_key ensure|rotate|list|seal`: the audit key that signs every audit event
(reviews.audit_keys), and the seal of the history written before signatures (reviews.audit_seal)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from reviews import audit_keys, audit_seal
from reviews.audit_check import recorded_heads, verify_chain
from reviews.models import AuditEvent, Run


class Command(BaseCommand):
    help = ("Manage the audit key at AUDIT_KEY_PATH: `ensure` makes one when there is none (so does "
            "`signing_key ensure`), `rotate` replaces it (the old public key stays published with its "
            "valid_until), `list` the published audit keys, `seal` records each audit chain's head and the final "
            "runs without an attestation in a file signed by the audit key (AUDIT_SEAL_PATH): only events at or "
            "below a sealed head may be unsigned. Prints key IDs only, never a private key.")

    # Key files need neither the database nor a secret: no system checks (so no SECRET_KEY either).
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["ensure", "rotate", "list", "seal"])

    def handle(self, *args, action: str, **options):
        try:
            if action == "ensure":
                keyid, created = audit_keys.ensure_audit_key()
                self.stdout.write(f"{'created' if created else 'kept'} audit key {keyid} at {audit_keys.key_path()}")
            elif action == "seal":
                self._seal()
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
        except (audit_keys.AuditKeyError, audit_seal.SealError) as error:
            raise CommandError(str(error)) from None

    def _seal(self) -> None:
        """Seal every chain as it is now, once; refused while any chain does not verify. Signs no event."""
        if audit_seal.load_seal() is not None:
            raise audit_seal.SealError(f"{audit_seal.seal_path()}: history is sealed already")
        runs = list(Run.objects.order_by("created_at", "id"))
        broken = [audit_seal.chain_label(run) for run in [*runs, None] if not verify_chain(run).ok]
        if broken:
            raise audit_seal.SealError(f"not sealed: {len(broken)} chain(s) do not verify ({', '.join(broken[:5])}); "
                                       "`verify_audit` names why")
        heads = {}
        for run in [*runs, None]:
            last = AuditEvent.objects.filter(run=run).order_by("-seq").values_list("seq", "hash").first()
            if last is not None:
                heads[audit_seal.chain_label(run)] = last
        unattested = [run.run_id for run in runs if run.status == Run.Status.FINAL and not recorded_heads(run)]
        seal = audit_seal.write_seal(heads, unattested)
        self.stdout.write(f"sealed {len(heads)} chain(s) and {len(unattested)} final run(s) without an attestation "
                          f"at {seal.path} (signed by audit key {seal.keyid})")

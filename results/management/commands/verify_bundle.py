"""`python manage.py verify_bundle FILE [--key PEM] [--json]`: aas_verify's check, from the app's command line.

Exactly `python -m aas_verify`: same checks, same output, same exit codes; it
needs no database and no SECRET_KEY (no system checks run).
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from aas_verify.cli import main


class Command(BaseCommand):
    help = ("Verify an exported run bundle offline (DESIGN §7): pins, MANIFEST.json, the member hashes in the "
            "result, the audit chain and its head, and the signed attestation. Exits 1 on any failure.")

    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("file", help="the exported bundle (zip or tar.gz)")
        parser.add_argument("--key", help="a PEM public key, or the JSON of GET /api/keys/")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--max-bytes", type=int, help="refuse bundles that uncompress to more than this")

    def handle(self, *args, file: str, key: str | None, json: bool, max_bytes: int | None, **options):
        argv = [file] + (["--key", key] if key else []) + (["--json"] if json else [])
        argv += ["--max-bytes", str(max_bytes)] if max_bytes else []
        code = main(argv, stdout=self.stdout)
        if code:
            raise CommandError(f"{file}: verification failed" if code == 1 else f"{file}: cannot be checked",
                               returncode=code)

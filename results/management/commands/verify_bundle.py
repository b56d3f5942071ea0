"""`python manage.py verify_bundle FILE (--key FILE | --key-fingerprint SHA256) [--json]`: aas_verify's check,
from the app's command line.

Exactly `python -m aas_verify`: same checks, same output, same exit codes (0 verified against a trusted key,
1 a check failed, 2 no trusted key given or the bundle or key cannot be read); it needs no database and no
SECRET_KEY (no system checks run).
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from aas_verify.cli import add_key_arguments, main


class Command(BaseCommand):
    help = ("Verify an exported run bundle offline (DESIGN §7): pins, MANIFEST.json, the member hashes in the "
            "result, the audit chain and its head, and the signed attestation against a key you trust. Exits 1 on "
            "any failure, 2 when no trusted key is given (--key or --key-fingerprint) or the bundle cannot be read.")

    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("file", help="the exported bundle (zip or tar.gz)")
        add_key_arguments(parser)
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--max-bytes", type=int, help="refuse bundles that uncompress to more than this")

    def handle(self, *args, file: str, key: list[str], key_fingerprint: list[str], json: bool,
               max_bytes: int | None, **options):
        argv = [file] + [arg for path in key for arg in ("--key", path)]
        argv += [arg for pin in key_fingerprint for arg in ("--key-fingerprint", pin)] + (["--json"] if json else [])
        argv += ["--max-bytes", str(max_bytes)] if max_bytes else []
        code = main(argv, stdout=self.stdout)
        if code:
            raise CommandError(f"{file}: verification failed" if code == 1 else
                               f"{file}: not verified (no trusted key given, or the bundle or key cannot be read)",
                               returncode=code)

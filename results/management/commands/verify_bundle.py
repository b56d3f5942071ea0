"""`python manage.py verify_bundle FILE`: check every hash in an export bundle, offline."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from results.bundles import DEFAULT_MAX_BYTES, verify_export


class Command(BaseCommand):
    help = ("Check an exported run bundle (zip or tar.gz) offline: ARTIFACT.yaml pins and MANIFEST.json "
            "hashes against the bytes. Prints OK, or one line per failing file; exits 1 on any failure.")

    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("file", help="the exported bundle (zip or tar.gz)")
        parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                            help="refuse archives that uncompress to more than this (default %(default)s)")

    def handle(self, *args, file: str, max_bytes: int, **options):
        try:
            with open(file, "rb") as handle:
                data = handle.read()
        except OSError as error:
            raise CommandError(f"{file}: cannot read ({error.strerror or error})") from None
        problems = verify_export(data, max_bytes=max_bytes)
        if not problems:
            self.stdout.write("OK")
            return
        for problem in problems:
            self.stdout.write(problem)
        raise CommandError(f"{file}: {len(problems)} problem{'s' if len(problems) != 1 else ''} found", returncode=1)

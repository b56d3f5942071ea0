from django.conf import settings
from django.core.management.base import BaseCommand

from records.services import sweep_stuck_members
from reviews.audit import Actor


class Command(BaseCommand):
    help = "Re-queue member parses that never ran or whose worker died, and runs stuck in validating."

    def add_arguments(self, parser):
        parser.add_argument("--older-than", type=int, default=settings.PIPELINE_STUCK_AFTER_SECONDS,
                            help="seconds without progress before a step counts as stuck")

    def handle(self, *args, older_than, **options):
        counts = sweep_stuck_members(older_than_seconds=older_than, actor=Actor.command("sweep_stuck_members"))
        self.stdout.write(f"re-queued {counts['versions']} member versions and {counts['runs']} runs")

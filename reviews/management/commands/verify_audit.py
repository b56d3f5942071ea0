from django.core.management.base import BaseCommand, CommandError

from reviews.audit import verify_chain
from reviews.audit_seal import load_seal, seal_path
from reviews.models import Run

RUNLESS = "(no run: tokens)"


class Command(BaseCommand):
    help = ("Recompute audit chains and name the first broken event, each event unsigned or wrongly signed "
            "by the audit key, and each chain head a final run's attestation records that the trail no longer "
            "holds. With RUN_ID, that run's chain; without, every run's chain and the chain of events without "
            "a run; and whether the history written before signatures is sealed (reviews.audit_seal). Exits 1 when any "
            "is broken.")

    # Needs the database, not SECRET_KEY: no system checks, so it runs without one (issue 24 item 8).
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("run_id", nargs="?", help="e.g. AAS-2026-09-25-supermemory-02")

    def handle(self, *args, run_id=None, **options):
        if run_id:
            run = Run.objects.filter(run_id=run_id).first()
            if run is None:
                raise CommandError(f"unknown run {run_id!r}")
            chains = [(run.run_id, run)]
        else:
            chains = [(run.run_id, run) for run in Run.objects.order_by("created_at", "id")]
            chains.append((RUNLESS, None))
        broken = 0
        for label, run in chains:
            check = verify_chain(run)
            history = f", unsigned history to #{check.unsigned_history}" if check.unsigned_history else ""
            if check.ok:
                self.stdout.write(f"OK {label} ({check.events} event{'' if check.events == 1 else 's'}{history})")
                continue
            broken += 1
            self.stdout.write(
                f"BROKEN {label} at event #{check.broken_seq} (id {check.broken_event_id}): {check.reason}")
            for problem in (*check.signature_failures, *check.head_failures):
                self.stdout.write(f"  event #{problem.seq} (id {problem.event_id}): {problem.reason}")
        seal = load_seal()  # whether unsigned history is sealed: a note on stderr, a broken seal a failure
        if seal is None:
            self.stderr.write(f"NOTE: history is unsealed (no seal at {seal_path()}): unsigned events count as history up "
                              "to each chain's first signed one; `manage.py audit_key seal` records the heads")
        elif seal.problem:
            broken += 1
            self.stdout.write(f"BROKEN seal: {seal.problem}")
        else:
            self.stderr.write(f"NOTE: history sealed at {seal.sealed_at} by audit key {seal.keyid} ({len(seal.heads)} chains)")
        if broken:
            raise CommandError(f"{broken} of {len(chains)} audit chain{'s' if len(chains) != 1 else ''} broken",
                               returncode=1)

"""Demo data for `make run`: a reviewer and an agent, the seeds, the corpus runs and the links-form example set as runs.

Idempotent: a run that exists is left as it is, so `make run` can be repeated.
Each time it ends by saying which demo runs cannot be approved and why (their
validation errors, grouped), since the single-member seed runs cite runtime
records that are not in their run.
"""
import io
import os
import zipfile
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from records.manifests import MANIFEST_NAME, manifest_fields, read_manifest, role_for_filename, sha256_hex
from records.finding_groups import blocking_reasons
from records.models import ImportedManifest
from records.parsing import parse_report
from records.services import UploadRefused, current_versions, import_bundle, ingest_member_report
from records.validation import MemberInput, RunFacts, validate_set
from reviews.access import AGENT, REVIEWER
from reviews.audit import Actor
from reviews.demo import DEMO_AGENT, DEMO_PASSWORD, DEMO_REVIEWER
from reviews.models import Run
from reviews.services import create_run, issue_token

SUPERMEMORY_COMMIT = "0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f"

# run_id, system, title, commit, [(seed prefix, role)]
SEED_RUNS = [
    ("AAS-2026-09-25-supermemory-02", "Supermemory", "Supermemory Vercel memory wrapper (imported result)",
     SUPERMEMORY_COMMIT, [("000", "result")]),
    ("AAS-2026-09-26-supermemory-03", "Supermemory", "Supermemory workflow and memory reports",
     SUPERMEMORY_COMMIT, [("001", "workflow"), ("002", "memory")]),
    ("AAS-2026-09-27-ace-01", "ACE", "ACE memory report", "0" * 40, [("003", "memory")]),
]


class Command(BaseCommand):
    help = "Create the demo reviewer and agent and load the seeds and corpus runs (idempotent)."

    def handle(self, *args, **options):
        self.actor = Actor.command("load_demo")
        self.ensure_people()
        shared = Path(os.environ.get("SHARED_DIR", settings.BASE_DIR.parent / "shared"))
        seeds, corpus = shared / "seeds", shared / "corpus"
        if seeds.is_dir():
            for run_id, system, title, commit, members in SEED_RUNS:
                self.load_seed_run(seeds, run_id, system, title, commit, members)
        else:
            self.stdout.write(f"no seeds at {seeds}: skipping the seed runs")
        demo_runs = [run_id for run_id, *_ in SEED_RUNS] if seeds.is_dir() else []
        if corpus.is_dir():
            for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
                self.load_corpus_run(folder)
                demo_runs.append(folder.name)
        # The links form's example set (not a real run), loaded like a corpus run.
        for folder in sorted((shared / "examples" / "links-form").glob("AAS-*")):
            self.load_corpus_run(folder)
            self.answer_round(folder.parent / "round-2", run_id=folder.name)
            demo_runs.append(folder.name)
        for run in Run.objects.filter(run_id__in=demo_runs).order_by("run_id"):
            self.say_whether_approvable(run)

    def answer_round(self, folder: Path, *, run_id: str) -> None:
        """The example's correction round: its verification's blocker on a member is a correction request
        once the run is synced; each `<member>.md` of the round, uploaded with its `<member>-answers.md`,
        answers it, and the request waits for the reviewer."""
        run = Run.objects.filter(run_id=run_id).first()
        if run is None or not folder.is_dir():
            return
        loaded = {v.sha256 for v in current_versions(run)}
        for report in sorted(folder.glob("*.md")):
            if report.name.endswith("-answers.md"):
                continue
            role, answers = role_for_filename(report.name), folder / f"{report.stem}-answers.md"
            if role is None or not answers.is_file() or sha256_hex(report.read_bytes()) in loaded:
                continue
            try:
                version, created = ingest_member_report(run=run, role=role, filename=report.name,
                                                        content=report.read_bytes(), actor=self.actor,
                                                        answers=answers.read_text(encoding="utf-8"))
            except UploadRefused as refused:
                self.stdout.write(f"{run_id}: the {role} correction round is not loaded yet ({refused.message}); "
                                  "once a worker has synced the run, `load_demo` again loads it")
                continue
            if created:
                self.stdout.write(f"{run_id}: {role} v{version.version} answers the verification's request")

    def say_whether_approvable(self, run: Run) -> None:
        """Validate the run's current members here (the worker may not have run yet) and say what blocks it.
        A run already signed off (a repeated `make run` after an approval) is past approving: say so."""
        if run.status in (Run.Status.APPROVED, Run.Status.FINALIZING, Run.Status.FINAL):
            closed = "; closed, Revise on its page starts the next run" if run.status == Run.Status.FINAL else ""
            self.stdout.write(f"{run.run_id}: {run.get_status_display().lower()}, nothing left to approve{closed}")
            return
        versions = sorted(current_versions(run), key=lambda v: v.member.role)
        members = [MemberInput(v.member.role, v.member.role, parse_report(bytes(v.content).decode("utf-8", "replace")))
                   for v in versions]
        findings = validate_set(members, RunFacts(run_id=run.run_id, reviewed_boundary=run.reviewed_boundary))
        errors = sum(1 for f in findings if f.severity == "error")
        warnings = len(findings) - errors
        if not errors:
            self.stdout.write(f"{run.run_id}: no validation errors ({warnings} warning{'s' if warnings != 1 else ''} "
                              "before the quotation check); "
                              "approvable once its decisions are made and no correction request is pending "
                              f"(its blockers: /runs/{run.run_id}/reconcile/blockers/)")
            return
        reasons = "; ".join(blocking_reasons(findings, roles=[v.member.role for v in versions]))
        self.stdout.write(f"{run.run_id}: cannot be approved, {errors} validation error{'s' if errors != 1 else ''}: {reasons}")

    def ensure_people(self):
        User = get_user_model()
        if not User.objects.filter(username=DEMO_REVIEWER).exists():
            issue_token(name=DEMO_REVIEWER, role=REVIEWER, password=DEMO_PASSWORD, actor=self.actor)
        if not User.objects.filter(username=DEMO_AGENT).exists():
            issue_token(name=DEMO_AGENT, role=AGENT, actor=self.actor)
        self.stdout.write(f"demo reviewer: user name 'reviewer', password '{DEMO_PASSWORD}'")
        self.stdout.write("demo agent: 'demo-agent' (python manage.py issue_token demo-agent --role agent for a token)")

    def load_seed_run(self, seeds, run_id, system, title, commit, members):
        if Run.objects.filter(run_id=run_id).exists():
            return
        run = create_run(actor=self.actor, run_id=run_id, system=system, title=title, run_date=run_id[4:14],
                         target_class="host integration", boundary_kind="subsystem-only",
                         reviewed_boundary=commit, evidence_tier="code-grounded", analysis_cutoff=run_id[4:14])
        for prefix, role in members:
            path = next(iter(sorted(seeds.glob(f"{prefix}_*"))), None)
            if path is None:
                self.stdout.write(f"seed {prefix} missing: {run_id} lacks its {role} member")
                continue
            ingest_member_report(run=run, role=role, filename=path.name, content=path.read_bytes(), actor=self.actor)
        self.stdout.write(f"loaded {run_id}")

    def load_corpus_run(self, folder: Path):
        run_id = folder.name
        if Run.objects.filter(run_id=run_id).exists():
            return
        files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
        leading = (files.get("overview.md") or files.get("result.md") or files.get("boundary.md")
                   or next(iter(files.values()), b""))
        meta = parse_report(leading.decode("utf-8", "replace")).front_matter
        run = create_run(
            actor=self.actor, run_id=run_id, system=str(meta.get("system") or run_id.split("-")[4]),
            title=str(meta.get("description") or run_id)[:300], run_date=str(meta.get("run-date") or run_id[4:14]),
            target_class=str(meta.get("target-class", "")), boundary_kind=str(meta.get("boundary-kind", "")),
            reviewed_boundary=str(meta.get("reviewed-boundary") or "0" * 40),
            evidence_tier=str(meta.get("evidence-tier", "")),
            analysis_cutoff=str(meta.get("analysis-cutoff") or run_id[4:14]),
        )
        if MANIFEST_NAME in files:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                for name, data in files.items():
                    archive.writestr(name, data)
            import_bundle(run=run, archive=buffer.getvalue(), actor=self.actor)
            ImportedManifest.objects.get_or_create(run=run, defaults={"fields": manifest_fields(read_manifest(files))})
        else:
            for name, data in files.items():
                role = role_for_filename(name)
                if role is None:
                    self.stdout.write(f"{run_id}/{name}: not a member file name, skipped")
                    continue
                ingest_member_report(run=run, role=role, filename=name, content=data, actor=self.actor)
        self.stdout.write(f"loaded {run_id} from the corpus")

"""Member reports through the real records pipeline, step by step, for reconcile's tests.

Each step is called directly (not through on_commit), so a test in a plain
`db` transaction sees the rows the pipeline would leave.
"""
from __future__ import annotations

from pathlib import Path

from reconcile import services
from records import services as records_services
from records.models import MemberVersion
from reviews.audit import Actor
from reviews.models import Run
from tests.conftest import CORPUS, SEEDS

AGENT = Actor("token:agent-1")
WORKER = Actor.worker("test")
REVIEWER = Actor("user:reviewer-1")

CHEATSHEET = CORPUS / "AAS-2026-10-02-dynamic-cheatsheet-01"
INSTINCTUAL = CORPUS / "AAS-2026-10-02-instinctual-memory-02"


def seed_path(name: str) -> Path:
    return sorted(SEEDS.glob(f"{name}*"))[0]


def upload(run: Run, role: str, content: bytes | str, *, sync: bool = True) -> MemberVersion:
    """Upload, parse and validate one member report; then sync the reconciliation (unless told not to)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    version, _created = records_services.ingest_member_report(run=run, role=role, filename=f"{role}.md",
                                                              content=data, actor=AGENT)
    records_services.parse_member_version(version_pk=version.pk, actor=WORKER)
    records_services.validate_run(run=run, actor=WORKER)
    run.refresh_from_db()
    if sync:
        services.sync_run(run=run, actor=WORKER)
    version.refresh_from_db()
    return version


def upload_file(run: Run, role: str, path: Path, **kwargs) -> MemberVersion:
    return upload(run, role, path.read_bytes(), **kwargs)

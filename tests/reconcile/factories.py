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


# A current-form (slug) runtime report for the Supermemory seeds: two of its records share a slug with
# the memory reports' declarations, one shares a label.
RUNTIME_SLUG = """---
type: agentic-system-analyses/types/agentic-system-runtime-report.md
---

# Supermemory runtime report

## Shared records

### Components

#### RT-CMP-wrapper — withSupermemory proxy wrapper

- Identity: the wrapper around the caller's model.

### Operative objects

#### RT-OBJ-memory-cache — Wrapper-local formatted memory cache

- Identity: the per-wrapper in-memory cache of formatted memory strings.

#### RT-OBJ-document-content — Document content and chunks

- Identity: raw submitted documents and their source-grounding chunks, stored by the remote engine.

### Routes

#### RT-RTE-mcp-read — MCP explicit memory and document read-back

- Immediate return: memory text.

#### RT-RTE-vercel-call — Vercel model call with memory injection

- Immediate return: model output.

### Claims

none declared in this member

### Evidenced absences

none declared in this member

### Behavioral-authority paths

none declared in this member
"""

# A small current-form memory report: three declarations and two integration issues.
MEMORY_SMALL = """---
type: agentic-system-analyses/types/agentic-system-memory-report.md
---

# Supermemory memory report

## Shared records

### Operative objects

#### MEM-OBJ-memory-facts — Extracted and inferred memory text

- Identity: the graph's atomic fact strings, including inferred facts.

#### MEM-OBJ-profile-summary — Static, dynamic and bucketed profile

- Identity: the profile strings the engine synthesises.

### Routes

#### MEM-RTE-mcp-read — MCP explicit memory and document read-back

- Immediate return: memory text and documents.

## Integration issues

- Record overlap: MEM-RTE-mcp-read is adjacent to RT-RTE-mcp-read, not identical.
- Version skew: the v5 profile is query-free while MEM-OBJ-profile-summary was inspected on v4.
"""

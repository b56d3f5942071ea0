"""Runs ready for the reconciliation page, built straight from the models with bulk_create.

`build_reconcile_run(records=N)` makes a run whose runtime member seeds N/2
canonical records per kind cycle and whose memory member declares N records:
half suggested `same` as a runtime record (with a score and a reason), half
suggested `new`, plus integration issues with their decisions. The benchmark
(bench/) uses it too, so it must work outside pytest.
"""
from __future__ import annotations

import hashlib
from datetime import date

from records.member_page import count_kinds
from records.models import IntegrationIssue, MemberReport, MemberVersion, Record
from reconcile.models import AmendmentDecision, CanonicalRecord, IssueDecision, KindCounter, Mapping
from reviews.audit import Actor
from reviews.models import Run
from reviews.services import create_run

KINDS = ("CMP", "OBJ", "RTE", "CLM", "ABS", "BAP")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def make_run(run_id: str) -> Run:
    existing = Run.objects.filter(run_id=run_id).first()
    if existing is not None:
        return existing
    return create_run(
        actor=Actor.command("test"), run_id=run_id, system="Supermemory", title="Page test run",
        run_date=date(2026, 9, 25), reviewed_boundary="0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f",
        target_class="host integration", boundary_kind="subsystem-only", evidence_tier="code-grounded",
        analysis_cutoff=date(2026, 9, 25),
    )


def make_member(run: Run, role: str, *, content: bytes = b"report", version: int = 1) -> MemberVersion:
    member, _ = MemberReport.objects.get_or_create(run=run, role=role)
    mv = MemberVersion.objects.create(
        member=member, version=version, filename=f"{role}.md", content=content, sha256=sha(content.decode()),
        size=len(content), status=MemberVersion.Status.VALIDATED, uploaded_by="test",
    )
    member.current_version = mv
    member.save(update_fields=["current_version"])
    return mv


def declaration(mv: MemberVersion, ordinal: int, record_id: str, label: str, body: str) -> Record:
    kind = record_id.split("-")[1] if record_id.split("-")[0] in ("RT", "MEM", "EPI") else record_id.split("-")[0]
    prefix = record_id.split("-")[0] if record_id.split("-")[0] in ("RT", "MEM", "EPI") else ""
    text = f"#### {record_id} — {label}\n\n{body}\n"
    return Record(
        run_id=mv.member.run_id, member_version=mv, ordinal=ordinal, record_type=Record.Type.DECLARATION,
        record_id=record_id, kind=kind, prefix=prefix, label=label, text=text, body=body,
        line_start=ordinal * 10, line_end=ordinal * 10 + 5, content_sha256=sha(text),
    )


def canonical_from(record: Record, origin=CanonicalRecord.Origin.RUNTIME) -> CanonicalRecord:
    return CanonicalRecord(
        run_id=record.run_id, canonical_id=record.record_id, kind=record.kind, label=record.label,
        text=record.text, origin=origin, source_record_id=record.record_id,
    )


def suggestion(record: Record, *, relation: str, target: str = "", score: float | None = 0.5,
               reason: str = "label similarity 0.50") -> Mapping:
    return Mapping(
        run_id=record.run_id, source=record.record_id, source_record=record, relation=relation, target=target,
        origin=Mapping.Origin.SUGGESTED, score=score, reason=reason, proposed_by="app", origin_key=record.record_id,
    )


def issues(mv: MemberVersion, texts: list[str]) -> list[IssueDecision]:
    made = IntegrationIssue.objects.bulk_create([
        IntegrationIssue(run_id=mv.member.run_id, member_version=mv, index=i, text=text, line=100 + i,
                         references=[w.strip(".,;") for w in text.split() if w.startswith(("RT-", "MEM-"))],
                         content_sha256=sha(text))
        for i, text in enumerate(texts, start=1)
    ])
    return IssueDecision.objects.bulk_create([IssueDecision(run_id=mv.member.run_id, issue=i) for i in made])


def amendments(mv: MemberVersion, paragraphs: list[tuple[str, str]]) -> list[AmendmentDecision]:
    """One open decision per (kind, text) paragraph: kind `amendment` or `unresolved-conflict`."""
    return AmendmentDecision.objects.bulk_create([
        AmendmentDecision(run_id=mv.member.run_id, member_version=mv, kind=kind, index=i, text=text, line=200 + i,
                          references=[w.strip(".,;") for w in text.split() if w.startswith(("RT-", "MEM-"))],
                          content_sha256=sha(text))
        for i, (kind, text) in enumerate(paragraphs, start=1)
    ])


def build_reconcile_run(*, records: int, run_id: str = "AAS-2026-09-25-page-01", issue_count: int = 4):
    """A run with `records` memory declarations facing runtime-seeded canonical records.

    Returns (run, member role of the records).
    """
    run = make_run(run_id)
    if MemberReport.objects.filter(run=run, role="memory").exists():
        return run, "memory"
    runtime = make_member(run, "runtime", content=f"runtime of {run_id}".encode())
    memory = make_member(run, "memory", content=f"memory of {run_id}".encode())

    half = max(1, records // 2)
    runtime_records = Record.objects.bulk_create([
        declaration(runtime, n, f"RT-{KINDS[n % 6]}-slot{_word(n)}", f"Runtime thing {n}",
                    f"The runtime stores item {n} in the document table and reads it back on recall.")
        for n in range(half)
    ])
    CanonicalRecord.objects.bulk_create([canonical_from(r) for r in runtime_records])
    memory_records = Record.objects.bulk_create([
        declaration(memory, n, f"MEM-{KINDS[n % 6]}-slot{_word(n)}", f"Memory thing {n}",
                    f"The memory layer keeps item {n} in the document store and recalls it by query.")
        for n in range(records)
    ])
    mappings = []
    for n, record in enumerate(memory_records):
        if n < half:
            mappings.append(suggestion(record, relation=Mapping.Relation.SAME, target=runtime_records[n].record_id,
                                       score=0.95 if n % 2 == 0 else 0.6,
                                       reason=f"same slug 'slot{_word(n)}' under RT-; label similarity 0.80"))
        else:
            mappings.append(suggestion(record, relation=Mapping.Relation.NEW, score=0.2,
                                       reason="no canonical record is close"))
    Mapping.objects.bulk_create(mappings)
    for version, rows in ((runtime, runtime_records), (memory, memory_records)):  # as the parse keeps them
        MemberVersion.objects.filter(pk=version.pk).update(kind_counts=count_kinds(rows))
    KindCounter.objects.bulk_create([KindCounter(run=run, kind=k, last_number=0) for k in KINDS])
    issues(memory, [f"MEM-OBJ-slot{_word(i)} refines RT-OBJ-slot{_word(i)}: issue {i}." for i in range(issue_count)])
    return run, "memory"


def write_member_text(version: MemberVersion) -> bytes:
    """Give a factory-made version the bytes of a report whose lines hold its records where they say
    (the member page shows them), and return them."""
    lines: list[str] = []
    for text, start in Record.objects.filter(member_version=version).order_by("ordinal").values_list(
            "text", "line_start"):
        lines.extend("" for _ in range(max(0, start - 1 - len(lines))))
        lines.extend(text.splitlines())
    content = ("\n".join(lines) + "\n").encode()
    MemberVersion.objects.filter(pk=version.pk).update(content=content, size=len(content),
                                                        sha256=hashlib.sha256(content).hexdigest())
    return content


def _word(n: int) -> str:
    """A slug word for a number (slugs are letters): 0 → a, 25 → z, 26 → ba …"""
    letters = ""
    while True:
        letters = chr(ord("a") + n % 26) + letters
        n //= 26
        if n == 0:
            return letters

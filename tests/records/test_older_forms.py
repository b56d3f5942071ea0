"""Older declaration and mapping-statement forms (DESIGN §2, issue 12 item 8),
through the real parser and validator on a small older result."""
from __future__ import annotations

from records.parsing import parse_report
from records.validation import MemberInput, RunFacts, validate_set

COMMIT = "94c3fe9f238f3dbf29c9ce98643bd71eb13077cd"
RUN = RunFacts(run_id="AAS-2026-09-26-example-02", reviewed_boundary=COMMIT)

RESULT = f"""---
{{"type": "types/agentic-system-analysis-result.md", "run-id": "{RUN.run_id}", "reviewed-boundary": "{COMMIT}"}}
---

# Example analysis result

## Shared records

### Components

**CMP-4 — Conditional spaCy NLP.** The entity routes load a tagger.

CMP-5 —**Qdrant BM25 and symbolic ranking.** The adapter lazily requests sparse embeddings.

### Operative objects

**OBJ-8.** Memory points with their vectors; ranked by CMP-5.

**OBJ-12.** History rows per memory.

### Routes

**RTE-8.** Remote bridge: uploaded conversations reach a profile read by CMP-5.

**RTE-9.** Entity maintenance.

## Reconciliation

The memory report's proposals were registered as follows:

- `MEM-OBJ-1` → OBJ-12.
- `MEM-OBJ-2` → OBJ-8.

Exact token mappings after review: MEM-OBJ-3 → OBJ-8; MEM-RTE-1 → RTE-9.

- MEM-ABS-1 → limitation on RTE-8, not an ABS record.

Route chain for the reader: OBJ-8 → RTE-8 → OBJ-12.
"""


def test_it_declares_a_record_written_without_a_space_after_the_dash():
    report = parse_report(RESULT)
    cmp5 = next(d for d in report.declarations if d.record_id == "CMP-5")
    assert cmp5.label == "Qdrant BM25 and symbolic ranking"
    assert cmp5.body.startswith("The adapter lazily")


def test_it_reads_bullet_inline_and_non_record_mapping_statements():
    got = [(m.source, m.target, m.form) for m in parse_report(RESULT).mappings]
    assert got == [
        ("MEM-OBJ-1", "OBJ-12", "list"),
        ("MEM-OBJ-2", "OBJ-8", "list"),
        ("MEM-OBJ-3", "OBJ-8", "list"),
        ("MEM-RTE-1", "RTE-9", "list"),
        ("MEM-ABS-1", "", "list"),
    ]
    no_record = parse_report(RESULT).mappings[-1]
    assert "limitation on RTE-8, not an ABS record" in no_record.disposition


def test_it_reads_no_mapping_from_a_route_chain():
    sources = {m.source for m in parse_report(RESULT).mappings}
    assert not sources & {"OBJ-8", "RTE-8"}


def test_it_reads_no_mapping_from_an_arrow_in_prose():
    text = (
        "## Runtime account\n\n"
        "RT-RTE-1 → RT-OBJ-2 handoff stays in prose: no lead-in, no bullet.\n\n"
        "Also seen: MEM-RTE-2 → RTE-8 carries the upload, which the bridge reads.\n"
    )
    assert parse_report(text).mappings == ()


def test_it_does_not_report_the_proposals_on_the_left_as_unresolved():
    findings = validate_set([MemberInput("result.md", "result", parse_report(RESULT))], RUN)
    unresolved = [(f.record_id, f.line) for f in findings if f.code == "unresolved-reference"]
    assert unresolved == []
    assert [f for f in findings if f.severity == "error"] == []


def test_it_still_reports_an_undeclared_canonical_target_on_the_right():
    text = RESULT.replace("MEM-RTE-1 → RTE-9", "MEM-RTE-1 → RTE-19")
    findings = validate_set([MemberInput("result.md", "result", parse_report(text))], RUN)
    assert [f.record_id for f in findings if f.code == "unresolved-reference"] == ["RTE-19"]


def test_it_counts_the_statements_as_mappings():
    assert parse_report(RESULT).counts()["mappings"] == 5


MIXED = f"""---
{{"type": "types/agentic-system-analysis-result.md", "run-id": "{RUN.run_id}", "reviewed-boundary": "{COMMIT}"}}
---

# Example analysis result

## Shared records

### Components

CMP-1 — Vector store. The adapter writes points.

CMP-2 — Graph store. Entities and relations.

#### CMP-3 — Reranker

Orders what CMP-1 and CMP-2 return.

## Limitations

CMP-1 and CMP-3 are read at the reviewed commit only.
"""


def test_a_result_mixing_heading_and_paragraph_declarations_declares_both():
    """Issue 25: a result whose Shared records mix `#### CMP-3 — Label` headings with paragraphs
    `CMP-1 — Label. …` (DESIGN §1 lists both as declarations in older results) reads both."""
    report = parse_report(MIXED)
    assert [(d.record_id, d.label) for d in report.declarations] == [
        ("CMP-1", "Vector store"), ("CMP-2", "Graph store"), ("CMP-3", "Reranker")]
    findings = validate_set([MemberInput("result.md", "result", report)], RUN)
    assert [f for f in findings if f.code == "unresolved-reference"] == []


def test_a_current_member_declaring_by_headings_still_reads_a_leading_paragraph_as_a_reference():
    member = MIXED.replace("types/agentic-system-analysis-result.md", "agentic-system-analyses/types/agentic-system-runtime-report.md")
    assert [d.record_id for d in parse_report(member).declarations] == ["CMP-3"]

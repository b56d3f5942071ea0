"""The report parser: pure tests on the seeds, the corpus and crafted text.

No database and no Django: the parser is plain Python on strings.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from records.parsing import parse_report, parse_report_strict

SHARED = Path(__file__).resolve().parents[3] / "shared"  # the shared/ folder beside the checkout
SEEDS = SHARED / "seeds"
CORPUS = SHARED / "corpus"

SEED_000 = "000_aa3f7ad8e0e621fa.txt"
SEED_001 = "001_2d93ac8df91c43d1.txt"
SEED_002 = "002_dda508aebb9e1f41.txt"
SEED_003 = "003_7d8774e7cd9385bc.txt"

INSTINCTUAL = "AAS-2026-10-02-instinctual-memory-02"
CHEATSHEET = "AAS-2026-10-02-dynamic-cheatsheet-01"
MEM0 = "AAS-2026-09-26-mem0-02"


def read(path: Path) -> str:
    # newline="" keeps the bytes' line endings exactly as stored
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def seed(name: str) -> str:
    return read(SEEDS / name)


def corpus(run: str, member: str) -> str:
    return read(CORPUS / run / member)


ALL_INPUTS = sorted(SEEDS.glob("*.txt")) + sorted(CORPUS.glob("*/*.md"))


def assert_lossless(report, text: str) -> None:
    assert "".join(s.text for s in report.segments) == text
    lines = text.split("\n")
    for decl in list(report.declarations) + list(report.annotations):
        # a record's text is the exact slice of its lines
        expected = "\n".join(lines[decl.line_start - 1: decl.line_end])
        assert decl.text.rstrip("\n") == expected.rstrip("\n")
        assert decl.text in text


def ids_of(records) -> list[str]:
    return [getattr(r, "record_id", None) or r.target for r in records]


# --------------------------------------------------------------------------
# Markdown form of a plain-text seed, built independently of the parser


_TOP = {
    "run identity", "boundary and evidence", "source register", "shared records", "annotations",
    "runtime account", "workflow account", "core ideas", "write side", "read-back",
    "integration issues", "limitations and checks", "limitations", "reconciliation",
    "verification and blockers", "lens scoping", "lens outputs", "bounded synthesis",
}
_SUB = {
    "components", "operative objects", "routes", "claims", "evidenced absences",
    "behavioral-authority paths", "semantic verification", "deterministic validation", "blockers",
    "memory/context scope", "epistemic scope", "memory/context lens", "epistemic lens",
}
_ID = r"(?:(?:RT|MEM|EPI)-)?(?:CMP|OBJ|RTE|CLM|ABS|BAP)-(?:\d+|[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*){0,2})"
_ANCHOR = re.compile(r"^(?P<before>.*?)(?:^|\s)--- (?P<path>\S+?)(?: @ (?P<commit>\S+))?\s*$")


def to_markdown(plain: str) -> str:
    """Rewrite a plain-text seed in the Markdown heading form (DESIGN §1)."""
    lines = plain.split("\n")
    out: list[str] = ["---", "type: from-a-seed", "run-id: AAS-2026-09-25-test-01", "---", ""]
    in_shared = False
    in_table = False

    def isolated(i: int) -> bool:
        return (i == 0 or not lines[i - 1].strip()) and (i == len(lines) - 1 or not lines[i + 1].strip())

    def next_nonblank(i: int) -> str:
        for line in lines[i + 1:]:
            if line.strip():
                return line
        return ""

    for i, line in enumerate(lines):
        stripped = line.strip()
        low = stripped.lower()
        if "\t" in line and not _ANCHOR.match(line):
            cells = [c.strip() for c in line.split("\t")]
            out.append("| " + " | ".join(cells) + " |")
            if not in_table:
                out.append("|" + "---|" * len(cells))
            in_table = True
            continue
        in_table = False
        if i == 0:
            out.append("# " + stripped)
        elif isolated(i) and low in _TOP:
            out.append("## " + stripped)
            in_shared = low == "shared records"
        elif isolated(i) and low in _SUB:
            out.append("### " + stripped)
        elif re.fullmatch(rf"On {_ID}", stripped):
            out.append(f"#### {stripped} — annotation")
        elif in_shared and re.fullmatch(_ID, stripped) and next_nonblank(i).startswith("Label:"):
            label = next_nonblank(i)[len("Label:"):].strip()
            out.append(f"#### {stripped} — {label}")
        elif in_shared and (m := re.match(rf"^({_ID}) — (.*)$", line)):
            rest = m.group(2)
            label, _, body = rest.partition(". ")
            out.append(f"#### {m.group(1)} — {label}")
            if body:
                out.extend(["", body])
        elif m := _ANCHOR.match(line):
            anchor = f"> --- `{m.group('path')}`" + (f" @ `{m.group('commit')}`" if m.group("commit") else "")
            if m.group("before").strip():
                out.append("> " + m.group("before").strip())
                out.append(anchor)
            else:
                # quote the paragraph the anchor closes
                k = len(out) - 1
                while k >= 0 and not out[k].strip():
                    k -= 1
                while k >= 0 and out[k].strip() and not out[k].startswith(("#", ">")):
                    out[k] = "> " + out[k]
                    k -= 1
                while out and not out[-1].strip():
                    out.pop()
                out.append(anchor)
        elif line.startswith("• "):
            out.append("- " + line[2:])
        else:
            out.append(line)
    return "\n".join(out)


# --------------------------------------------------------------------------
# Plain-text seeds


def test_it_reads_the_plain_text_seed_declarations_of_a_finished_result():
    report = parse_report(seed(SEED_000))
    expected = (
        [f"CMP-{n}" for n in range(1, 4)]
        + [f"OBJ-{n}" for n in range(1, 6)]
        + [f"RTE-{n}" for n in range(1, 9)]
        + ["CLM-1", "ABS-1", "BAP-1", "BAP-2"]
    )
    assert ids_of(report.declarations) == expected
    assert {d.form for d in report.declarations} == {"line"}
    assert len(report.annotations) == 0
    assert [s.source_id for s in report.sources] == ["SRC-1", "SRC-2"]
    assert report.generation == "bare-numbered"


def test_it_reads_the_reconciliation_mappings_of_seed_000():
    report = parse_report(seed(SEED_000))
    pairs = [(m.source, m.target, m.disposition, m.form) for m in report.mappings]
    assert pairs == [
        ("MEM-OBJ-1", "OBJ-5", "mapped", "list"),
        ("MEM-RTE-1", "RTE-6", "mapped", "list"),
        ("MEM-RTE-2", "RTE-7", "mapped", "list"),
        ("MEM-RTE-3", "RTE-8", "mapped", "list"),
        ("MEM-ABS-1", "ABS-1", "mapped", "list"),
    ]


def test_it_reads_the_seed_000_source_register_columns():
    report = parse_report(seed(SEED_000))
    first = report.sources[0]
    assert first.columns[0] == ("Source ID", "SRC-1")
    assert len(first.columns) == 8
    assert first.revision == "0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f"


def test_it_keeps_a_route_table_outside_shared_records_from_declaring():
    report = parse_report(seed(SEED_000))
    rte1 = [d for d in report.declarations if d.record_id == "RTE-1"]
    assert len(rte1) == 1
    assert rte1[0].label == "Construction"
    # the route summary table in Runtime account only references RTE-1
    assert any(r.record_id == "RTE-1" and r.line > rte1[0].line_end for r in report.references)


def test_it_ends_a_plain_declaration_before_the_next_one_and_keeps_its_quotations():
    text = seed(SEED_000)
    report = parse_report(text)
    rte1, rte2 = report.declarations[8], report.declarations[9]
    assert rte1.record_id == "RTE-1" and rte2.record_id == "RTE-2"
    assert rte1.line_end < rte2.line_start
    assert rte1.text.rstrip().endswith("0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f")
    quote = next(q for q in report.quotations if rte1.line_start < q.line <= rte1.line_end)
    assert quote.path == "packages/tools/src/vercel/index.ts"
    assert quote.commit == "0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f"
    assert quote.text.lstrip().startswith("verbose: options.verbose")
    assert quote.text.endswith("options.skipMemoryOnError ?? true")


def test_it_reads_the_plain_text_sections_of_seed_000():
    report = parse_report(seed(SEED_000))
    titles = [s.title for s in report.sections]
    assert titles[:5] == ["Supermemory Vercel memory wrapper", "Run identity", "Boundary and evidence",
                          "Source register", "Shared records"]
    assert "Runtime account" in titles and "Blockers" in titles
    shared = next(s for s in report.sections if s.title == "Shared records")
    routes = next(s for s in report.sections if s.title == "Routes")
    assert shared.level < routes.level
    assert shared.line_start < routes.line_start <= routes.line_end <= shared.line_end
    assert report.title == "Supermemory Vercel memory wrapper"
    assert report.doc_type == "types/agentic-system-analysis-result.md"


def test_it_reads_the_single_annotation_of_the_workflow_seed():
    report = parse_report(seed(SEED_001))
    assert report.declarations == ()
    assert ids_of(report.annotations) == ["RT-RTE-tool-loop"]
    annotation = report.annotations[0]
    assert [f.label for f in annotation.fields] == [
        "Workflow selection", "Handoff ordering", "Verification and recovery", "Delivery boundary",
    ]
    assert annotation.text.startswith("On RT-RTE-tool-loop")
    assert report.generation == "slug"
    assert report.doc_type == "agentic-system-analyses/types/agentic-system-workflow-report.md"


def test_it_reads_the_workflow_seed_sub_headings_without_touching_its_prose():
    report = parse_report(seed(SEED_001))
    titles = [s.title for s in report.sections]
    assert "Selection and evidence boundary" in titles
    assert "Model proposal, tool dispatch and return" in titles
    assert all(len(t) < 60 for t in titles)


def test_it_reads_the_memory_seed_declarations_annotations_and_issues():
    report = parse_report(seed(SEED_002))
    assert len(report.declarations) == 18
    assert {d.form for d in report.declarations} == {"id-line"}
    assert report.declarations[0].record_id == "MEM-CMP-claude-model"
    assert report.declarations[0].label == "Claude memory-example model"
    assert ids_of(report.annotations) == [
        "RT-RTE-vercel-call", "RT-OBJ-memory-cache", "RT-RTE-tool-loop", "RT-RTE-mcp-save",
        "RT-BAP-memory-context",
    ]
    assert len(report.integration_issues) == 8
    assert [i.index for i in report.integration_issues] == list(range(1, 9))
    assert report.generation == "slug"


def test_it_reads_the_seven_route_fields_as_unindented_bullets():
    report = parse_report(seed(SEED_002))
    route = next(d for d in report.declarations if d.record_id == "MEM-RTE-engine-dreaming")
    bullets = [f.label for f in route.fields if f.bullet]
    assert bullets == [
        "Immediate return", "Later read-back", "Delegated visibility", "Selection predicate",
        "Invalidation or expiry", "Activation or effect", "Evidence limits",
        "design conclusion status", "operation conclusion status",
    ]
    status = next(f for f in route.fields if f.label == "operation conclusion status")
    assert status.value == "uninspected"


def test_it_names_the_ids_of_each_integration_issue_in_order_once():
    report = parse_report(seed(SEED_002))
    sixth = report.integration_issues[5]
    assert sixth.text.startswith("Withdrawal propagation:")
    assert sixth.references == (
        "MEM-RTE-inference-review", "MEM-RTE-source-maintenance", "MEM-RTE-semantic-forget",
        "RT-OBJ-memory-cache",
    )


def test_it_reads_the_ace_memory_seed():
    report = parse_report(seed(SEED_003))
    decl_ids = ids_of(report.declarations)
    assert len(decl_ids) == 8
    assert sum(i.startswith("MEM-OBJ-") for i in decl_ids) == 7
    assert decl_ids[-1] == "MEM-RTE-counter-update"
    assert len(report.annotations) == 4
    assert len(report.integration_issues) == 5
    assert report.integration_issues[0].references[:2] == ("MEM-RTE-counter-update", "RT-RTE-batch-adaptation")


def test_it_reads_a_bullet_quotation_with_a_line_anchor_as_a_quotation_not_a_field():
    report = parse_report(seed(SEED_003))
    quote = next(q for q in report.quotations if q.path == "ace/prompts/curator.py")
    assert quote.lines == "1-70"
    assert quote.commit == ""
    assert "Total token budget" in quote.text
    annotation = next(a for a in report.annotations if a.target == "RT-RTE-sample-adaptation")
    assert "Total token budget" not in [f.label for f in annotation.fields]


def test_it_skips_quotations_when_collecting_references():
    report = parse_report(seed(SEED_002))
    quoted_lines = {q.line for q in report.quotations}
    assert quoted_lines
    assert not quoted_lines & {r.line for r in report.references}


@pytest.mark.parametrize(
    "name, declarations, annotations, issues, sources, mappings",
    [
        (SEED_000, 20, 0, 0, 2, 5),
        (SEED_001, 0, 1, 0, 0, 0),
        (SEED_002, 18, 5, 8, 0, 0),
        (SEED_003, 8, 4, 5, 0, 0),
    ],
)
def test_it_counts_the_same_records_in_plain_text_and_markdown_form(
    name, declarations, annotations, issues, sources, mappings
):
    plain = seed(name)
    markdown = to_markdown(plain)
    for text in (plain, markdown):
        report = parse_report(text)
        counts = report.counts()
        assert counts["declarations"] == declarations
        assert len(report.annotations) == annotations
        assert counts["integration_issues"] == issues
        assert counts["sources"] == sources
        assert counts["mappings"] == mappings
        assert_lossless(report, text)
    md = parse_report(markdown)
    assert md.front_matter == {"type": "from-a-seed", "run-id": "AAS-2026-09-25-test-01"}
    assert md.doc_type == "from-a-seed"
    assert {d.form for d in md.declarations} <= {"heading"}
    assert ids_of(md.declarations) == ids_of(parse_report(plain).declarations)
    assert ids_of(md.annotations) == ids_of(parse_report(plain).annotations)


def test_it_reads_the_markdown_quotation_anchors_of_a_converted_seed():
    report = parse_report(to_markdown(seed(SEED_003)))
    quote = next(q for q in report.quotations if q.path == "ace/core/reflector.py")
    assert quote.text == "return response, bullet_tags, call_info"
    assert quote.commit == ""


def test_it_reads_crlf_line_endings_and_a_missing_final_newline():
    text = seed(SEED_002).replace("\n", "\r\n").rstrip("\r\n")
    report = parse_report(text)
    assert_lossless(report, text)
    assert len(report.declarations) == 18
    assert len(report.annotations) == 5
    assert len(report.integration_issues) == 8
    assert report.declarations[0].label == "Claude memory-example model"


def test_it_parses_all_four_seeds_quickly():
    texts = [seed(n) for n in (SEED_000, SEED_001, SEED_002, SEED_003)]
    started = time.perf_counter()
    for text in texts:
        parse_report(text)
    assert time.perf_counter() - started < 1.0


# --------------------------------------------------------------------------
# The corpus runs


@pytest.mark.parametrize("path", ALL_INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_it_loses_no_text_of_any_seed_or_corpus_file(path):
    text = read(path)
    report = parse_report_strict(text)
    assert_lossless(report, text)
    assert report.front_matter_error == ""


def test_it_reads_bare_numbered_heading_declarations_in_an_older_runtime_member():
    report = parse_report(corpus(INSTINCTUAL, "runtime.md"))
    # counted by hand: CMP-1..3, OBJ-1..4, RTE-1..11, BAP-1
    expected = (
        [f"CMP-{n}" for n in range(1, 4)]
        + [f"OBJ-{n}" for n in range(1, 5)]
        + [f"RTE-{n}" for n in range(1, 12)]
        + ["BAP-1"]
    )
    assert ids_of(report.declarations) == expected
    assert {d.form for d in report.declarations} == {"heading"}
    assert report.generation == "bare-numbered"
    obj1 = report.declarations[3]
    assert (obj1.record_id, obj1.label, obj1.prefix, obj1.kind) == ("OBJ-1", "Published memory snapshot", "", "OBJ")
    rte11 = report.declarations[-2]
    assert rte11.record_id == "RTE-11"
    assert rte11.label == "Compare retrieval against an explicit rubric"
    assert report.front_matter["run-id"] == INSTINCTUAL


def test_it_reads_route_fields_written_inside_older_prose():
    report = parse_report(corpus(INSTINCTUAL, "runtime.md"))
    rte1 = next(d for d in report.declarations if d.record_id == "RTE-1")
    labels = [f.label for f in rte1.fields]
    for label in ("Immediate return", "Later read-back", "Delegated visibility", "Selection predicate",
                  "Evidence limits", "Implementation conclusion status"):
        assert label in labels
    assert not any(f.bullet for f in rte1.fields)
    status = next(f for f in rte1.fields if f.label == "Implementation conclusion status")
    assert status.value == "wired"


def test_it_reads_a_memory_member_with_annotations_only():
    report = parse_report(corpus(INSTINCTUAL, "memory.md"))
    assert report.declarations == ()
    assert ids_of(report.annotations) == [
        "OBJ-1", "OBJ-2", "OBJ-3", "OBJ-4", "RTE-1", "RTE-2", "RTE-3", "RTE-4", "RTE-5", "RTE-6",
        "RTE-7", "RTE-8", "RTE-10",
    ]
    assert report.annotations[0].label == "Content and access parts of the published snapshot"
    assert len(report.integration_issues) == 5
    # its memory-comparison profile is a JSON flow mapping inside YAML
    assert isinstance(report.front_matter["memory-comparison"], dict)


def test_it_keeps_table_rows_outside_shared_records_from_declaring():
    report = parse_report(corpus(INSTINCTUAL, "epistemic.md"))
    assert ids_of(report.declarations) == [
        "EPI-OBJ-1", "EPI-OBJ-2", "EPI-OBJ-3", "EPI-OBJ-4", "EPI-RTE-1", "EPI-CLM-1", "EPI-CLM-2", "EPI-CLM-3",
    ]
    assert report.generation == "prefixed-numbered"


def test_it_reads_the_value_amendments_of_an_older_reconciliation():
    report = parse_report(corpus(INSTINCTUAL, "reconciliation.md"))
    assert [a.kind for a in report.amendments] == ["amendment"] * 6
    assert report.amendments[0].references[0] == "RTE-4"
    assert report.amendments[0].text.startswith("RTE-4's description")
    assert len(report.quotations) == 1
    assert report.mappings == ()


def test_it_reads_prefixed_numbered_declarations_of_every_analyst():
    runtime = parse_report(corpus(CHEATSHEET, "runtime.md"))
    assert len(runtime.declarations) == 16  # RT-CMP-1..2, RT-OBJ-1..4, RT-RTE-1..8, RT-BAP-1..2
    obj2 = next(d for d in runtime.declarations if d.record_id == "RT-OBJ-2")
    assert (obj2.prefix, obj2.kind, obj2.label) == ("RT", "OBJ", "Retrieval corpus and embeddings")
    assert runtime.generation == "prefixed-numbered"
    assert runtime.annotations == ()

    memory = parse_report(corpus(CHEATSHEET, "memory.md"))
    assert ids_of(memory.declarations) == ["MEM-OBJ-1", "MEM-OBJ-2"]
    assert [d.part_of for d in memory.declarations] == [("RT-OBJ-2",), ("RT-OBJ-2",)]
    mem1 = memory.declarations[0]
    part_of = next(f for f in mem1.fields if f.label == "Part of")
    assert part_of.bullet is False
    assert [f.bullet for f in mem1.fields if f.label != "Part of"] == [True] * 7
    assert len(memory.annotations) == 7
    assert memory.front_matter["memory-comparison"]["axes"]["storage_substrate"]["values"] == ["in-memory"]

    epistemic = parse_report(corpus(CHEATSHEET, "epistemic.md"))
    assert "EPI-RTE-1" in ids_of(epistemic.declarations)
    part_of = {d.record_id: d.part_of for d in epistemic.declarations if d.part_of}
    assert part_of["EPI-OBJ-2"] == ("RT-OBJ-2",)
    assert part_of["EPI-OBJ-5"] == ("RT-OBJ-4",)
    # the ledger table names proposals and targets but states no mappings
    assert epistemic.mappings == ()


def test_it_reads_supersession_and_relation_amendments():
    report = parse_report(corpus(CHEATSHEET, "reconciliation.md"))
    assert len(report.amendments) == 4
    assert report.amendments[2].text.startswith("EPI-OBJ-4 is superseded by MEM-OBJ-2.")
    assert report.amendments[2].references[:2] == ("EPI-OBJ-4", "MEM-OBJ-2")


def test_it_reads_the_source_register_of_an_overview():
    report = parse_report(corpus(CHEATSHEET, "overview.md"))
    assert [s.source_id for s in report.sources] == ["SRC-1", "SRC-2"]
    assert report.sources[0].columns[3][0] == "revision or capture"
    assert report.front_matter["run-date"] == "2026-10-02"


def test_it_reads_a_finished_result_with_bold_declarations_and_json_front_matter():
    report = parse_report(corpus(MEM0, "result.md"))
    # counted by hand: CMP-1..5, OBJ-1..5, RTE-1..6, CLM-1..3, ABS-1, BAP-1..2
    assert len(report.declarations) == 22
    assert {d.form for d in report.declarations} == {"bold"}
    cmp1 = report.declarations[0]
    assert (cmp1.record_id, cmp1.label) == ("CMP-1", "Memory coordinator")
    obj1 = next(d for d in report.declarations if d.record_id == "OBJ-1")
    assert obj1.body.startswith("Raw, extracted and procedural text")
    profile = report.front_matter["memory-comparison"]
    assert isinstance(profile, dict)
    assert len(profile["axes"]) == 14
    assert report.front_matter["run-date"] == "2026-09-26"
    assert [(m.source, m.target) for m in report.mappings] == [("MEM-RTE-1", "RTE-5"), ("MEM-RTE-2", "RTE-6")]
    assert [s.source_id for s in report.sources] == ["SRC-1", "SRC-2"]
    # the epistemic ledger tables after Shared records only reference records
    assert all(d.line_start < 862 for d in report.declarations)
    assert report.title == "Mem0 synchronous OSS memory analysis"
    assert report.generation == "bare-numbered"


# --------------------------------------------------------------------------
# Crafted documents


CURRENT = """---
type: agentic-systems/types/agent-memory-analysis-report.md
run-id: AAS-2026-10-02-x-01
---

# X memory report

## Shared records

### Operative objects

#### MEM-OBJ-store — Retained store

Part of: RT-OBJ-cache
- Source-native identity: a file.
  - Nested: not a top-level bullet.
- Evidence: see RT-OBJ-cache and RTE-1..3.

> - Immediate return: quoted, so no field. MEM-OBJ-quoted
> --- `src/a.py:3-9` @ `abc1234`

```
Label: fenced, so no field. MEM-OBJ-fenced
```

- MEM-OBJ-listed is a reference in the current form.

MEM-OBJ-prose — also only a reference here.

##### A deeper heading stays inside the record

Still MEM-OBJ-store's text.

#### MEM-RTE-write — Write route

- Immediate return: ok

### Routes

none declared in this member

## Annotations

#### On RT-RTE-loop — Loop

- Read-back: later.

## Integration issues

- First: RT-OBJ-cache and MEM-OBJ-store, then RT-OBJ-cache again.
- Second, with no ID
  continued on a lazy line naming MEM-RTE-write.
1. Third: numbered, names OBJ-1–OBJ-3.
"""


def test_it_declares_only_level_four_headings_in_the_current_form():
    report = parse_report(CURRENT)
    assert ids_of(report.declarations) == ["MEM-OBJ-store", "MEM-RTE-write"]
    store = report.declarations[0]
    assert store.label == "Retained store"
    assert store.part_of == ("RT-OBJ-cache",)
    assert "Still MEM-OBJ-store's text." in store.text
    assert store.text.startswith("#### MEM-OBJ-store — Retained store\n")
    assert store.text.endswith("Still MEM-OBJ-store's text.\n")
    refs = [r.record_id for r in report.references]
    assert "MEM-OBJ-listed" in refs and "MEM-OBJ-prose" in refs


def test_it_reads_fields_outside_quotations_and_fences_with_their_bullet_flag():
    report = parse_report(CURRENT)
    store = report.declarations[0]
    fields = [(f.label, f.bullet) for f in store.fields]
    assert fields == [
        ("Part of", False),
        ("Source-native identity", True),
        ("Nested", False),
        ("Evidence", True),
    ]


def test_it_never_scans_quotations_or_fences_for_references():
    report = parse_report(CURRENT)
    refs = {r.record_id for r in report.references}
    assert "MEM-OBJ-quoted" not in refs
    assert "MEM-OBJ-fenced" not in refs
    quote = report.quotations[0]
    assert (quote.path, quote.lines, quote.commit) == ("src/a.py", "3-9", "abc1234")
    assert quote.text == "- Immediate return: quoted, so no field. MEM-OBJ-quoted"


def test_it_reports_ranges_and_never_expands_them():
    report = parse_report(CURRENT)
    assert [r.text for r in report.ranges] == ["RTE-1..3"]
    refs = [r.record_id for r in report.references]
    assert "RTE-1" not in refs and "RTE-2" not in refs


def test_it_reads_current_form_annotations_and_issues():
    report = parse_report(CURRENT)
    assert ids_of(report.annotations) == ["RT-RTE-loop"]
    assert report.annotations[0].fields[0].label == "Read-back"
    issues = report.integration_issues
    assert [i.index for i in issues] == [1, 2, 3]
    assert issues[0].references == ("RT-OBJ-cache", "MEM-OBJ-store")
    assert issues[1].references == ("MEM-RTE-write",)
    assert "continued on a lazy line" in issues[1].text
    assert issues[2].references == ("OBJ-1", "OBJ-3")
    assert report.generation == "slug"


def test_it_ends_a_region_at_a_heading_of_the_same_or_higher_level():
    report = parse_report(CURRENT)
    write = report.declarations[1]
    assert write.text == "#### MEM-RTE-write — Write route\n\n- Immediate return: ok\n"


def test_it_segments_the_document_without_losing_a_character():
    report = parse_report(CURRENT)
    kinds = [s.kind for s in report.segments]
    assert kinds[0] == "front_matter"
    assert kinds.count("declaration") == 2 and kinds.count("annotation") == 1
    assert "".join(s.text for s in report.segments) == CURRENT


OLDER = """# Older result

## Shared records

### Components

**CMP-1 — Memory coordinator.** Dispatch. Conclusion status: wired; more.

CMP-2 — Adapter, text of the adapter.

### Operative objects

### OBJ-1 — Snapshot

**OBJ-2.** History records. Evidence: SRC-1.

| ID | Label | Note |
|---|---|---|
| OBJ-3 | Table object | from a cell |

## Runtime account

OBJ-1 — not a declaration outside Shared records.
"""


def test_it_reads_every_older_declaration_form():
    # a `### ID — Label` heading makes this a heading-form document: only
    # headings declare. Without it, the other forms declare.
    without_heading = OLDER.replace("### OBJ-1 — Snapshot\n", "OBJ-1 — Snapshot\n")
    report = parse_report(without_heading)
    got = [(d.record_id, d.form, d.label) for d in report.declarations]
    assert got == [
        ("CMP-1", "bold", "Memory coordinator"),
        ("CMP-2", "line", "Adapter, text of the adapter"),
        ("OBJ-1", "line", "Snapshot"),
        ("OBJ-2", "bold", "History records."),
        ("OBJ-3", "table", "Table object"),
    ]
    cmp1 = report.declarations[0]
    assert [(f.label, f.value) for f in cmp1.fields] == [("Conclusion status", "wired; more.")]
    assert report.declarations[3].references == (report.declarations[3].references[0],)
    assert report.declarations[3].references[0].record_id == "SRC-1"
    assert report.generation == "bare-numbered"


def test_it_reads_an_older_heading_declaration():
    report = parse_report(OLDER)
    assert [(d.record_id, d.form) for d in report.declarations] == [("OBJ-1", "heading")]


def test_it_reads_mapping_tables_in_any_column_order():
    text = (
        "## Reconciliation\n\n"
        "| Disposition | Canonical record | Member proposal |\n"
        "|---|---|---|\n"
        "| registered | OBJ-5 | MEM-OBJ-1 |\n"
        "| rejected | — | `MEM-RTE-2` |\n"
        "| merged | RTE-6 | text without an ID |\n\n"
        "Exact token mappings: MEM-RTE-1 -> RTE-5 and MEM-RTE-3 → RTE-8. Then MEM-X → nothing.\n"
    )
    report = parse_report(text)
    got = [(m.source, m.target, m.disposition, m.form) for m in report.mappings]
    assert got == [
        ("MEM-OBJ-1", "OBJ-5", "registered", "table"),
        ("MEM-RTE-2", "", "rejected", "table"),
        ("MEM-RTE-1", "RTE-5", "mapped", "list"),
        ("MEM-RTE-3", "RTE-8", "mapped", "list"),
    ]


def test_it_reads_amendments_and_unresolved_conflicts():
    text = (
        "## Reconciliation\n\n"
        "Amendment: MEM-RTE-3 is superseded by RT-RTE-7 and RT-RTE-8.\n\n"
        "**Unresolved conflict:** RT-OBJ-1 and MEM-OBJ-2 disagree\nabout RT-OBJ-1's expiry.\n\n"
        "No unresolved conflict remains.\n"
    )
    report = parse_report(text)
    got = [(a.kind, a.references, a.line) for a in report.amendments]
    assert got == [
        ("amendment", ("MEM-RTE-3", "RT-RTE-7", "RT-RTE-8"), 3),
        ("unresolved-conflict", ("RT-OBJ-1", "MEM-OBJ-2"), 5),
    ]
    assert report.amendments[1].text == "RT-OBJ-1 and MEM-OBJ-2 disagree\nabout RT-OBJ-1's expiry."


def test_it_takes_each_line_as_an_issue_when_bullets_were_lost():
    text = "Integration issues\n\nFirst issue names RT-OBJ-a.\nSecond issue names MEM-RTE-b.\n\nLimitations\n\nnone\n"
    report = parse_report(text)
    assert [(i.index, i.references) for i in report.integration_issues] == [
        (1, ("RT-OBJ-a",)),
        (2, ("MEM-RTE-b",)),
    ]


def test_it_counts_no_issue_when_the_section_says_none():
    report = parse_report("## Integration issues\n\nnone\n")
    assert report.integration_issues == ()


def test_it_reports_bad_yaml_front_matter_instead_of_raising():
    text = "---\ntype: [unclosed\n---\n\n# Title\n"
    report = parse_report(text)
    assert report.front_matter == {}
    assert report.front_matter_error.startswith("front matter is not valid YAML")
    assert report.title == "Title"
    assert "".join(s.text for s in report.segments) == text


def test_it_reports_front_matter_that_is_not_a_mapping():
    report = parse_report("---\n- a\n- b\n---\nbody\n")
    assert report.front_matter_error == "front matter is not a mapping"


def test_it_reports_an_unclosed_front_matter_block():
    text = "---\ntype: x\n"
    report = parse_report(text)
    assert report.front_matter_error
    assert "".join(s.text for s in report.segments) == text


def test_it_reads_the_empty_string():
    report = parse_report("")
    assert report.segments == ()
    assert report.declarations == ()
    assert report.title == ""


def test_it_reads_a_declaration_without_a_trailing_newline():
    text = "Shared records\n\nRoutes\n\nRT-RTE-loop — Loop route. Body."
    report = parse_report(text)
    assert report.declarations[0].text == "RT-RTE-loop — Loop route. Body."
    assert report.declarations[0].label == "Loop route"
    assert report.declarations[0].body == "Body."
    assert "".join(s.text for s in report.segments) == text


# --------------------------------------------------------------------------
# Properties: any text parses, losslessly


REPORT_LINES = st.sampled_from([
    "", " ", "\t", "---", "```", "~~~", "# Title", "## Shared records", "### Routes", "#### RT-RTE-1 — Label",
    "#### On RT-OBJ-1 — Label", "Shared records", "Routes", "Annotations", "Integration issues",
    "Source register", "Source ID\tKind\tRevision", "SRC-1\tGit\tabc", "| Source ID | Revision |", "|---|---|",
    "| SRC-1 | abc |", "MEM-OBJ-x", "Label: X", "- Immediate return: ok", "• Part of: RT-OBJ-1",
    "CMP-1 — label. text", "**OBJ-1.** text", "**CMP-1 — Label.** body", "On RT-RTE-tool-loop",
    "> quoted MEM-OBJ-q", "> --- `a/b.py:1-2` @ `abc`", "code --- a/b.py @ abc", "--- a/b.py",
    "Mappings: MEM-OBJ-1 → OBJ-5; MEM-RTE-1 -> RTE-6.", "Amendment: X is superseded by Y",
    "Unresolved conflict: RTE-1..3", "RTE-1–3 and OBJ-1–OBJ-3", "\r", "é — ünïcode", "1. item", "* item",
    "| Disposition | Canonical | Proposal |", "| mapped | OBJ-1 | MEM-OBJ-1 |", "type: [", "\ufeff---",
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_it_never_raises_and_loses_nothing_on_arbitrary_text(text):
    report = parse_report_strict(text)
    assert "".join(s.text for s in report.segments) == text
    for decl in report.declarations:
        assert decl.text in text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(REPORT_LINES, max_size=40), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_it_never_raises_and_loses_nothing_on_report_like_text(lines, newline, final_newline):
    text = newline.join(lines) + (newline if final_newline else "")
    report = parse_report_strict(text)
    assert "".join(s.text for s in report.segments) == text
    for record in list(report.declarations) + list(report.annotations):
        assert record.text in text
        assert 1 <= record.line_start <= record.line_end
    assert parse_report(text).counts() == report.counts()

"""Only what the generation required (DESIGN §6, issue 12 item 4).

A rule the current form added is not reported against an older generation,
not even as warnings; an upstream-accepted older result leaves a reviewer a
few warnings worth reading. Inputs are older-generation excerpts (bare
numbered IDs, `### OBJ-1 — Label`, prose anchors with line ranges) and the
real corpus and seed results.
"""
from __future__ import annotations

from pathlib import Path

from records.parsing import parse_report
from records.validation import MemberInput, RunFacts, validate_set

SHARED = Path(__file__).resolve().parents[3] / "shared"
COMMIT = "94c3fe9f238f3dbf29c9ce98643bd71eb13077cd"
RUN = RunFacts(run_id="AAS-2026-09-20-example-01", reviewed_boundary=COMMIT)

OLDER_RESULT = f"""---
{{"type": "types/agentic-system-analysis-result.md", "run-id": "{RUN.run_id}", "reviewed-boundary": "{COMMIT}"}}
---

# Example analysis result

## Shared records

### Components

### CMP-1 — Memory coordinator

Dispatch and validation. SRC-1 `mem0/memory/main.py:487-2189`. Wiring: `wired`.

### Operative objects

### OBJ-1 — Memory points

Readable facts with vectors, written by CMP-1 (`mem0/memory/main.py:881-1220,2007-2050`).
"""

CURRENT_SYNTHESIS = """---
type: agentic-system-analyses/types/agentic-system-synthesis.md
---

# Synthesis

## Bounded synthesis

RT-OBJ-store keeps the text; see `src/store.py:12-30`.
"""


def findings_of(text: str, role: str):
    return validate_set([MemberInput(f"{role}.md", role, parse_report(text))], RUN)


def test_it_does_not_report_prose_line_anchors_against_a_bare_numbered_result():
    found = [f for f in findings_of(OLDER_RESULT, "result") if f.code == "prose-line-anchor"]
    assert found == []


def test_it_still_refuses_prose_line_anchors_in_the_current_form():
    found = [(f.code, f.severity) for f in findings_of(CURRENT_SYNTHESIS, "synthesis") if f.code == "prose-line-anchor"]
    assert found == [("prose-line-anchor", "error")]


def test_it_does_not_report_an_empty_quotation_against_an_older_result():
    text = OLDER_RESULT + "\n> --- `mem0/memory/main.py`\n"
    assert "empty-quotation" not in {f.code for f in findings_of(text, "result")}


def test_it_does_not_report_ambiguous_references_in_older_members_only_the_duplicate():
    runtime = OLDER_RESULT.replace("types/agentic-system-analysis-result.md", "agentic-systems/types/agentic-system-runtime-report.md")
    epistemic = runtime.replace("### CMP-1 — Memory coordinator", "### OBJ-1 — Duplicate")
    members = [
        MemberInput("runtime.md", "runtime", parse_report(runtime + "\nOBJ-1 again.\n")),
        MemberInput("epistemic.md", "epistemic", parse_report(epistemic)),
    ]
    codes = {f.code for f in validate_set(members, RUN)}
    assert "duplicate-declaration-across-members" in codes
    assert "ambiguous-reference" not in codes


def test_it_holds_each_generation_to_its_own_rules():
    from records.validation.generation_rules import CURRENT_ONLY, held_to

    assert held_to("prose-line-anchor", current=True) == "error"
    assert held_to("prose-line-anchor", current=False) is None
    assert held_to("missing-route-field", current=True) == "error"
    assert held_to("missing-route-field", current=False) == "warning"
    assert held_to("quotation-path-not-registered", current=False, severity="warning") == "warning"
    assert "prose-line-anchor" in CURRENT_ONLY


def test_it_leaves_the_corpus_result_a_few_warnings_worth_reading():
    text = (SHARED / "corpus" / "AAS-2026-09-26-mem0-02" / "result.md").read_text(encoding="utf-8")
    report = parse_report(text)
    front = report.front_matter
    findings = validate_set([MemberInput("result.md", "result", report)], RunFacts(front["run-id"], front["reviewed-boundary"]))
    assert [f for f in findings if f.severity == "error"] == []
    warnings = [f for f in findings if f.severity == "warning"]
    assert {f.code for f in warnings} <= {"missing-route-field", "missing-conclusion-status"}
    assert len(warnings) <= 12


def test_it_leaves_seed_000_only_its_compact_route_warnings():
    path = next((SHARED / "seeds").glob("000_*.txt"))
    run = RunFacts("AAS-2026-09-25-supermemory-02", "0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f")
    findings = validate_set([MemberInput("result.md", "result", parse_report(path.read_text(encoding="utf-8")))], run)
    assert {f.code for f in findings} <= {"missing-route-field", "missing-conclusion-status"}

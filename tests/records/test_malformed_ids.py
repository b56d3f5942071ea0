"""Malformed IDs are refused whole (DESIGN §6, issue 12 item 2): through the
real parser and validator, no database."""
from __future__ import annotations

from records.parsing import parse_report
from records.validation import MemberInput, RunFacts, validate_set

COMMIT = "5cfe3c37e8e52b1d858d0f3df46e7f17c50991b9"
RUN = RunFacts(run_id="AAS-2026-10-02-example-01", reviewed_boundary=COMMIT)

CURRENT_MEMORY = """---
type: agentic-system-analyses/types/agent-memory-analysis-report.md
---

# Example memory report

## Shared records

### Operative objects

#### MEM-OBJ-tag-to-note-map — Tag to note map

- Source-native identity: the map from tags to notes.

#### MEM-OBJ-store — Stored notes

- Source-native identity: the notes file; filled from MEM-OBJ-Draft.
"""

OLDER_MEMORY = """---
type: agentic-systems/types/agent-memory-analysis-report.md
---

# Example memory report

## Shared records

### Operative objects

#### MEM-OBJ-1 — Stored notes

Fed by MEM-OBJ-Draft drafts.
"""


def findings_of(text: str, role: str = "memory"):
    return validate_set([MemberInput("memory.md", role, parse_report(text))], RUN)


def test_it_reads_a_four_word_slug_declaration_as_the_whole_token():
    report = parse_report(CURRENT_MEMORY)
    assert [d.record_id for d in report.declarations] == ["MEM-OBJ-store"]
    assert [(m.token, m.line, m.declared) for m in report.malformed_ids] == [
        ("MEM-OBJ-tag-to-note-map", 11, True),
        ("MEM-OBJ-Draft", 17, False),
    ]
    assert "MEM-OBJ-tag-to-note" not in {r.record_id for r in report.references}


def test_it_reports_a_malformed_declared_id_as_an_error_naming_the_whole_token():
    findings = [f for f in findings_of(CURRENT_MEMORY) if f.code == "malformed-id"]
    assert [(f.record_id, f.severity, f.line) for f in findings] == [
        ("MEM-OBJ-tag-to-note-map", "error", 11),
        ("MEM-OBJ-Draft", "error", 17),
    ]
    assert "four or more words" in findings[0].message
    assert "upper-case" in findings[1].message


def test_it_never_names_an_id_nobody_wrote():
    named = {f.record_id for f in findings_of(CURRENT_MEMORY)}
    assert "MEM-OBJ-tag-to-note" not in named


def test_it_keeps_the_malformed_declarations_region_out_of_the_record_before_it():
    text = CURRENT_MEMORY.replace("#### MEM-OBJ-store — Stored notes\n\n- Source-native identity: the notes file; filled from MEM-OBJ-Draft.\n", "")
    text = text.replace("#### MEM-OBJ-tag-to-note-map", "#### MEM-OBJ-store — Stored notes\n\n- Source-native identity: the notes file.\n\n#### MEM-OBJ-tag-to-note-map")
    store = parse_report(text).declarations[0]
    assert "tag" not in store.text


def test_it_only_warns_about_a_malformed_reference_in_an_older_generation():
    findings = [f for f in findings_of(OLDER_MEMORY) if f.code == "malformed-id"]
    assert [(f.record_id, f.severity) for f in findings] == [("MEM-OBJ-Draft", "warning")]


def test_it_reports_a_malformed_declaration_as_an_error_in_an_older_generation_too():
    text = OLDER_MEMORY.replace("Fed by MEM-OBJ-Draft drafts.", "#### MEM-REC-2 — Drafts")
    findings = [f for f in findings_of(text) if f.code == "malformed-id"]
    assert [(f.record_id, f.severity) for f in findings] == [("MEM-REC-2", "error")]
    assert "unknown kind" in findings[0].message


def test_it_reads_a_plain_text_line_declaration_with_a_malformed_id_whole():
    text = "Shared records\n\nMEM-OBJ-tag-to-note-map — Tag map. The map from tags to notes.\n"
    report = parse_report(text)
    assert report.declarations == ()
    assert [(m.token, m.declared) for m in report.malformed_ids] == [("MEM-OBJ-tag-to-note-map", True)]


def test_it_does_not_scan_fences_for_malformed_ids():
    text = CURRENT_MEMORY + "\n```\nMEM-OBJ-Example-Token\n```\n"
    assert "MEM-OBJ-Example-Token" not in {m.token for m in parse_report(text).malformed_ids}


def test_it_reads_a_range_at_the_start_of_a_line_as_a_range_not_a_malformed_declaration():
    report = parse_report("Shared records\n\nRTE-1-3: the three routes share a store.\n")
    assert report.declarations == () and report.malformed_ids == ()
    assert [r.text for r in report.ranges] == ["RTE-1-3"]

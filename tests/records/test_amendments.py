"""Wrapped amendments (DESIGN §6 amendments, issue 12 item 3): read after
collapsing whitespace, through the real parser and validator."""
from __future__ import annotations

from records.parsing import parse_report
from records.validation import MemberInput, RunFacts, validate_set

COMMIT = "5cfe3c37e8e52b1d858d0f3df46e7f17c50991b9"
RUN = RunFacts(run_id="AAS-2026-10-02-example-01", reviewed_boundary=COMMIT)

MEMORY = """---
type: agentic-system-analyses/types/agent-memory-analysis-report.md
---

# Memory

## Shared records

### Operative objects

#### MEM-OBJ-tag-map — Tag map

- Source-native identity: tags.

#### MEM-OBJ-notes — Notes

- Source-native identity: notes.
"""

RUNTIME = MEMORY.replace("agent-memory-analysis-report", "agentic-system-runtime-report").replace(
    "MEM-OBJ-tag-map — Tag map", "RT-OBJ-tags — Tags"
).replace("#### MEM-OBJ-notes — Notes\n\n- Source-native identity: notes.\n", "")


def reconciliation(body: str) -> str:
    return (
        "---\ntype: agentic-system-analyses/types/agentic-system-reconciliation-report.md\n---\n\n"
        "# Example reconciliation\n\n## Reconciliation\n\n" + body
    )


def amendment_findings(body: str):
    members = [
        MemberInput("memory.md", "memory", parse_report(MEMORY)),
        MemberInput("runtime.md", "runtime", parse_report(RUNTIME)),
        MemberInput("reconciliation.md", "reconciliation", parse_report(reconciliation(body))),
    ]
    return [f for f in validate_set(members, RUN) if f.member == "reconciliation.md"]


def test_it_reads_a_supersession_wrapped_after_the_first_id():
    body = "Amendment: MEM-OBJ-tag-map\nis superseded by RT-OBJ-tags; both name the tag index.\n"
    assert amendment_findings(body) == []


def test_it_reads_a_supersession_wrapped_anywhere_with_two_targets():
    body = "Amendment: MEM-OBJ-tag-map is\n  superseded by\nRT-OBJ-tags and\nMEM-OBJ-notes.\n"
    assert amendment_findings(body) == []


def test_it_names_the_amended_record_in_a_refused_value_amendment():
    body = "Amendment: MEM-OBJ-notes's retention is\nreplaced by per-project retention.\n"
    found = [(f.code, f.record_id, f.line) for f in amendment_findings(body)]
    assert found == [("value-amendment", "MEM-OBJ-notes", 9)]


def test_it_takes_no_amendment_from_an_example_in_a_fenced_block():
    body = (
        "No amendment is needed. A value amendment would read:\n\n"
        "- Example:\n\n"
        "    ```\n"
        "    Amendment: MEM-OBJ-notes has a new value\n"
        "    ```\n"
    )
    assert parse_report(reconciliation(body)).amendments == ()
    assert amendment_findings(body) == []

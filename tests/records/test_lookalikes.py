"""Look-alike IDs and invisible controls (issue 25 item 5; DESIGN §6, last paragraph): errors naming the
character and its column in every generation; warnings elsewhere in headings and labels."""
from __future__ import annotations

from records.parsing import parse_report
from records.validation import MemberInput, RunFacts, validate_member

RUN = RunFacts(run_id="AAS-2026-09-26-example-02", reviewed_boundary="94c3fe9f238f3dbf29c9ce98643bd71eb13077cd")

RESULT = """---
{"type": "types/agentic-system-analysis-result.md", "run-id": "AAS-2026-09-26-example-02"}
---

# Example analysis result

## Shared records

### Components

**CMP-1 — Store.** The store.

**CMP-3 — Loader.** Reads CMP-1.
"""


def found(text: str, code: str):
    report = parse_report(text)
    return [f for f in validate_member(MemberInput("result.md", "result", report), RUN) if f.code == code]


def test_a_cyrillic_letter_in_an_id_is_a_confusable_id_error_naming_it():
    text = RESULT.replace("Reads CMP-1.", "Reads \u0421MP-1.")
    [finding] = found(text, "confusable-id")
    assert finding.severity == "error"
    assert finding.line == 13 and finding.record_id == "CMP-1"
    assert "U+0421 CYRILLIC CAPITAL LETTER ES" in finding.message
    assert "column 27" in finding.message


def test_a_twin_declaration_with_a_cyrillic_letter_is_reported_on_its_line():
    text = RESULT.replace("**CMP-3 — Loader.**", "**\u0421MP-1 — Loader.**")
    assert [(f.line, f.record_id) for f in found(text, "confusable-id")] == [(13, "CMP-1")]


def test_a_right_to_left_override_inside_an_id_is_a_bidi_control_error():
    text = RESULT.replace("**CMP-3 — Loader.**", "**CMP\u202e-3 — Loader.**")
    [finding] = found(text, "bidi-control")
    assert finding.severity == "error" and finding.record_id == "CMP-3"
    assert "U+202E RIGHT-TO-LEFT OVERRIDE at column 6" in finding.message


def test_a_control_inside_a_label_warns():
    text = RESULT.replace("Label", "").replace("Loader.**", "Lo\u202eader.**").replace(
        "**CMP-3 — Lo\u202eader.**", "#### CMP-3 — Lo\u202eader")
    [finding] = found(text, "suspicious-character")
    assert finding.severity == "warning" and "U+202E" in finding.message


def test_plain_ascii_ids_and_other_scripts_in_prose_give_no_finding():
    text = RESULT.replace("The store.", "The store (Speicher — хранилище) → CMP-3.")
    assert found(text, "confusable-id") == [] and found(text, "bidi-control") == []

"""The earliest memory-comparison profiles (Appendix A, issue 12 item 1):
axis-level `basis`, no per-value `evidence`, checked by their own rules.

Inputs are realistic excerpts of older results: bare numbered IDs, `### OBJ-1
— Label` declarations and the profile in the front matter; one test converts
the corpus mem0 result's profile to the earliest form.
"""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from records.parsing import parse_report
from records.validation import MemberInput, RunFacts, validate_set

SHARED = Path(__file__).resolve().parents[3] / "shared"
COMMIT = "94c3fe9f238f3dbf29c9ce98643bd71eb13077cd"
RUN = RunFacts(run_id="AAS-2026-09-20-example-01", reviewed_boundary=COMMIT)


def earliest_axes() -> dict:
    def known(values, basis, records, note="Read from the adapter code."):
        return {"assessment": "known", "values": values, "basis": basis, "records": records, "note": note}

    def none(assessment, records=(), note="No route was inspected for this axis."):
        return {"assessment": assessment, "values": [], "basis": None, "records": list(records), "note": note}

    return {
        "storage_substrate": known(["sqlite", "vector"], "wired", ["OBJ-1", "OBJ-2"]),
        "representational_form": known(["natural-language", "symbolic"], "wired", ["OBJ-1"]),
        "lineage": known(["trace-extracted"], "wired", ["RTE-1"]),
        "behavioral_authority": known(["knowledge"], "afforded", ["RTE-2"]),
        "write_agency": known(["automatic", "manual"], "wired", ["RTE-1", "RTE-2"]),
        "curation_operations": {"assessment": "partial", "values": ["dedup"], "basis": "wired",
                                "records": ["RTE-1"], "note": "Exact-hash suppression only."},
        "read_back_direction": known(["pull"], "wired", ["RTE-2"]),
        "read_back_signal": known(["inferred-embedding"], "wired", ["RTE-2"]),
        "trace_learning": known(["yes"], "wired", ["RTE-1"]),
        "trace_source": known(["session-logs"], "wired", ["RTE-1"]),
        "learning_scope": none("uninspected"),
        "learning_timing": known(["online"], "wired", ["RTE-1"]),
        "distilled_form": known(["natural-language"], "wired", ["OBJ-1"]),
        "faithfulness_tested": none("not-determinable", ["RTE-1"], "No retained comparison of inputs and facts."),
    }


BODY = """
# Example analysis result

## Shared records

### Operative objects

### OBJ-1 — Memory points

Readable facts with vectors. Implementation conclusion status: wired.

### OBJ-2 — History rows

Old and new text per memory. Implementation conclusion status: wired.

### Routes

### RTE-1 — Inferred add

Messages are reduced to facts and stored in OBJ-1. Implementation conclusion status: wired.

### RTE-2 — Search

Callers search OBJ-1 by embedding. Implementation conclusion status: wired.
"""


def result_text(axes: dict) -> str:
    front = {
        "type": "types/agentic-system-analysis-result.md",
        "run-id": RUN.run_id,
        "reviewed-boundary": COMMIT,
        "memory-comparison": {"scope": "Synchronous OSS memory with its default adapters.", "axes": axes},
    }
    return "---\n" + json.dumps(front, indent=2) + "\n---\n" + BODY


def profile_findings(axes: dict, role: str = "result", text: str | None = None):
    report = parse_report(text if text is not None else result_text(axes))
    return [f for f in validate_set([MemberInput("result.md", role, report)], RUN) if f.code.startswith("profile")]


def test_it_accepts_an_earliest_result_profile_with_axis_level_basis():
    assert profile_findings(earliest_axes()) == []


def test_it_accepts_an_earliest_ten_axis_profile_in_an_older_memory_member():
    axes = dict(list(earliest_axes().items())[:10])
    text = (
        "---\ntype: agentic-systems/types/agent-memory-analysis-report.md\n"
        + yaml.safe_dump({"memory-comparison": {"scope": "The memory store.", "axes": axes}}, sort_keys=False)
        + "---\n" + BODY
    )
    assert profile_findings({}, role="memory", text=text) == []


def test_it_accepts_the_corpus_result_profile_rewritten_in_the_earliest_form():
    text = (SHARED / "corpus" / "AAS-2026-09-26-mem0-02" / "result.md").read_text(encoding="utf-8")
    front_text, body = text[4:].split("\n---\n", 1)
    front = json.loads(front_text)
    for body_ in front["memory-comparison"]["axes"].values():
        evidence = body_.pop("evidence")
        body_["basis"] = next(iter(evidence.values()))["basis"] if evidence else None
    rewritten = "---\n" + json.dumps(front, indent=2) + "\n---\n" + body
    report = parse_report(rewritten)
    findings = validate_set([MemberInput("result.md", "result", report)], RunFacts(front["run-id"], front["reviewed-boundary"]))
    assert [f for f in findings if f.severity == "error"] == []


def test_it_requires_an_axis_level_basis_where_the_assessment_gives_values():
    axes = earliest_axes()
    axes["lineage"]["basis"] = None
    found = [(f.code, f.record_id) for f in profile_findings(axes)]
    assert found == [("profile-invalid-basis", "lineage")]


def test_it_requires_a_null_basis_where_the_assessment_gives_no_values():
    axes = earliest_axes()
    axes["learning_scope"]["basis"] = "wired"
    found = [(f.code, f.record_id) for f in profile_findings(axes)]
    assert found == [("profile-invalid-basis", "learning_scope")]


def test_it_refuses_an_axis_level_basis_outside_the_five_values():
    axes = earliest_axes()
    axes["storage_substrate"]["basis"] = "inspected"
    assert [(f.code, f.record_id) for f in profile_findings(axes)] == [("profile-invalid-basis", "storage_substrate")]


def test_it_refuses_an_axis_mixing_the_two_forms():
    axes = earliest_axes()
    axes["lineage"]["evidence"] = {"trace-extracted": {"basis": "wired", "records": ["RTE-1"], "note": "n"}}
    found = [(f.code, f.record_id, f.severity) for f in profile_findings(axes)]
    assert found == [("profile-axis-mixed-forms", "lineage", "error")]


def test_it_requires_an_observed_axis_basis_for_faithfulness_tested_yes():
    axes = earliest_axes()
    axes["faithfulness_tested"] = {"assessment": "known", "values": ["yes"], "basis": "wired", "records": ["RTE-1"], "note": "n"}
    assert [f.code for f in profile_findings(axes)] == ["profile-faithfulness-basis"]
    axes["faithfulness_tested"]["basis"] = "observed"
    assert profile_findings(axes) == []


def test_it_still_requires_per_value_evidence_of_an_axis_without_a_basis():
    axes = earliest_axes()
    del axes["lineage"]["basis"]
    found = [(f.code, f.record_id) for f in profile_findings(axes)]
    assert ("profile-axis-malformed", "lineage") in found
    assert ("profile-evidence-mismatch", "lineage") in found

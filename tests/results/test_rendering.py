"""The final result (DESIGN §7) rendered from plain data; pure, no database."""
from __future__ import annotations

from results import selfcheck

import dataclasses
import hashlib
import json
import random
import re
from pathlib import Path

import pytest

from results.rendering import (
    AmendmentDecision,
    AnnotationEntry,
    CanonicalEntry,
    IssueDecision,
    MappingEntry,
    MemberEntry,
    RejectedItem,
    ResultInput,
    SourceEntry,
    Verification,
    render_result,
    result_json,
)

SEED_RESULT = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "000_aa3f7ad8e0e621fa.txt"
MEM0_RESULT = SEED_RESULT.parents[1] / "corpus" / "AAS-2026-09-26-mem0-02" / "result.md"
COMMIT = "0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f"
MANIFEST_HASH = "5" * 64
SECTIONS = [
    "## Run identity",
    "## Boundary and evidence",
    "## Source register",
    "## Shared records",
    "## Runtime report (`runtime.md`)",
    "## Memory report (`memory.md`)",
    "## Reconciliation",
    "## Limitations",
    "## Verification and blockers",
    "### Semantic verification",
    "### Deterministic validation",
    "### Blockers",
]
RUNTIME_PROSE = (
    "Runtime account",
    "A host constructs the wrapper.\n\nRTE-3 and RTE-4 acquire raw conversation content.\n"
    "### Forcing cases\n\nOBJ-9 — looks like a declaration but is prose.\n",
)


def make_input(**overrides) -> ResultInput:
    fields = dict(
        run_id="AAS-2026-09-25-supermemory-02",
        system="Supermemory",
        title="Supermemory Vercel memory wrapper",
        run_date="2026-09-25",
        result_disposition="complete",
        target_class="host integration",
        boundary_kind="subsystem-only",
        reviewed_boundary=COMMIT,
        evidence_tier="code-grounded",
        analysis_cutoff="2026-09-25",
        memory_comparison={"scope": "Vercel wrapper — ünïcode kept", "axes": {}},
        members=[
            MemberEntry(
                name="runtime.md",
                role="runtime",
                version=1,
                sha256="1" * 64,
                boundary_text="Evidence is code-grounded at the reviewed commit.",
                prose_sections=[RUNTIME_PROSE],
            ),
            MemberEntry(
                name="memory.md",
                role="memory",
                version=2,
                sha256="2" * 64,
                prose_sections=[("Core ideas", "Memory is a cache.")],
            ),
        ],
        sources=[
            SourceEntry("SRC-2", [("Source ID", "SRC-2"), ("Kind", "Git"), ("Revision", COMMIT), ("Citation anchors", "README.md")]),
            SourceEntry("SRC-1", [("Source ID", "SRC-1"), ("Kind", "Git"), ("Revision", COMMIT), ("Citation anchors", "a|b.ts; c.ts")]),
        ],
        canonical_records=[
            CanonicalEntry("RTE-6", "RTE", "Dedup and format", "imported facts → formatted context."),
            CanonicalEntry("CMP-1", "CMP", "withSupermemory wrapper", "Proxy wrapper. SRC-1 index.ts."),
            CanonicalEntry(
                "OBJ-5",
                "OBJ",
                "Access/provenance envelope",
                "Cache key plus response IDs.",
                annotations=[
                    AnnotationEntry("epistemic.md", "OBJ-5", "Provenance is not warrant."),
                    AnnotationEntry("memory.md", "MEM-OBJ-1", "Selector, not a ranking."),
                ],
            ),
            CanonicalEntry("RTE-10", "RTE", "Later route", "Sorted after RTE-6 by number."),
        ],
        mappings=[
            MappingEntry("MEM-RTE-1", "same", "RTE-6"),
            MappingEntry("MEM-OBJ-1", "new", "OBJ-5"),
            MappingEntry("MEM-ABS-9", "no-counterpart", ""),
        ],
        integration_issues=[
            IssueDecision("memory.md", 2, "Keep opaque images on OBJ-3.", "accept", "Matches the source.", "rita"),
            IssueDecision("memory.md", 1, "Register RTE-6 for formatting.", "reject", "Already covered.", "rita"),
        ],
        amendments=[AmendmentDecision("MEM-RTE-3 is superseded by RTE-8.", "accept", "Same route.")],
        unresolved_conflicts=["Whether the LRU evicts on capacity is unobserved."],
        rejected_items=[RejectedItem("integration issue memory.md 1", "No separate formatting route is registered.")],
        verification=Verification(
            approval_note="Checked every route against the wrapper.",
            approved_by="rita",
            approved_at="2026-09-26T10:00:00+00:00",
            errors=0,
            warnings=3,
            manifest_sha256=MANIFEST_HASH,
            checks=["route fields", "ID resolution"],
        ),
        blockers=[],
    )
    fields.update(overrides)
    return ResultInput(**fields)


def body_of(text: str) -> str:
    return text.split("\n---\n", 1)[1]


def front_matter_of(text: str) -> dict:
    assert text.startswith("---\n")
    return json.loads(text[4:].split("\n---\n", 1)[0])


def shuffled(data: ResultInput, seed: int) -> ResultInput:
    rng = random.Random(seed)

    def mix(items):
        items = list(items)
        rng.shuffle(items)
        return items

    return dataclasses.replace(
        data,
        members=mix(data.members),
        sources=mix(data.sources),
        canonical_records=[
            dataclasses.replace(r, annotations=mix(r.annotations)) for r in mix(data.canonical_records)
        ],
        mappings=mix(data.mappings),
        integration_issues=mix(data.integration_issues),
        amendments=mix(data.amendments),
        unresolved_conflicts=mix(data.unresolved_conflicts),
        rejected_items=mix(data.rejected_items),
        verification=dataclasses.replace(data.verification, checks=mix(data.verification.checks)),
    )


# --- determinism ----------------------------------------------------------


def test_it_renders_the_same_bytes_twice():
    assert render_result(make_input()).encode() == render_result(make_input()).encode()


def test_it_renders_the_same_bytes_whatever_order_the_lists_arrive_in():
    data = make_input(
        unresolved_conflicts=["b conflict", "a conflict"],
        blockers=["z blocker", "a blocker"],
    )
    expected = render_result(data)
    for seed in range(5):
        assert render_result(shuffled(data, seed)) == expected
        assert result_json(shuffled(data, seed)) == result_json(data)


def test_it_ends_with_exactly_one_newline():
    text = render_result(make_input(blockers=["trailing blank lines\n\n\n"]))
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_it_never_writes_its_own_sha256_into_the_result():
    text = render_result(make_input())
    assert hashlib.sha256(text.encode()).hexdigest() not in text
    assert not re.search(r"result\S* SHA-256", text, re.IGNORECASE)


# --- shape ----------------------------------------------------------------


def test_it_writes_the_sections_in_the_order_of_design_section_7():
    text = body_of(render_result(make_input()))
    positions = [text.index("\n" + heading + "\n") for heading in SECTIONS]
    assert positions == sorted(positions)
    assert text.lstrip().startswith("# Supermemory Vercel memory wrapper\n")


def test_it_writes_the_front_matter_as_json_in_the_order_of_section_7():
    text = render_result(make_input())
    front = front_matter_of(text)
    assert list(front) == [
        "type",
        "run-id",
        "system",
        "run-date",
        "result-disposition",
        "target-class",
        "boundary-kind",
        "reviewed-boundary",
        "evidence-tier",
        "analysis-cutoff",
        "memory-comparison",
    ]
    assert front["type"] == "types/agentic-system-analysis-result.md"
    assert "ünïcode" in text  # not \u-escaped


def test_it_leaves_memory_comparison_out_when_no_member_supplied_one():
    assert "memory-comparison" not in front_matter_of(render_result(make_input(memory_comparison=None)))


def test_it_lists_each_member_report_with_role_version_and_hash_in_run_identity():
    text = render_result(make_input())
    identity = text.split("## Run identity", 1)[1].split("## Boundary and evidence", 1)[0]
    assert f"- `runtime.md`: runtime report, version 1, SHA-256 `{'1' * 64}`" in identity
    assert f"- `memory.md`: memory report, version 2, SHA-256 `{'2' * 64}`" in identity


def test_it_escapes_pipes_inside_source_register_cells():
    text = render_result(make_input())
    row = next(line for line in text.splitlines() if line.startswith("| SRC-1 |"))
    assert "a\\|b.ts; c.ts" in row
    unescaped = re.findall(r"(?<!\\)\|", row)
    header = next(line for line in text.splitlines() if line.startswith("| source ID |"))
    assert len(unescaped) == header.count("|")


def test_it_orders_sources_by_number_and_keeps_one_source_id_column():
    text = render_result(make_input())
    assert text.index("| SRC-1 |") < text.index("| SRC-2 |")
    assert "| source ID | Kind | Revision | Citation anchors |" in text


def test_it_declares_canonical_records_by_kind_then_number():
    text = render_result(make_input())
    declared = re.findall(r"^#### (\S+) — ", text, re.MULTILINE)
    assert declared == ["CMP-1", "OBJ-5", "RTE-6", "RTE-10"]


def test_it_says_none_declared_under_an_empty_kind():
    shared = render_result(make_input()).split("## Shared records", 1)[1].split("\n## ", 1)[0]
    claims = shared.split("### Claims", 1)[1].split("###", 1)[0]
    assert claims.strip() == "none declared in this result"


def test_it_puts_accepted_annotations_under_their_record_without_declaring():
    text = render_result(make_input())
    obj5 = text.split("#### OBJ-5 — ", 1)[1].split("\n#### ", 1)[0]
    assert "##### Annotation by epistemic.md on OBJ-5\n\nProvenance is not warrant." in obj5
    assert "##### Annotation by memory.md on MEM-OBJ-1\n\nSelector, not a ranking." in obj5
    assert not re.search(r"^#+ On ", text, re.MULTILINE)


def test_it_carries_member_prose_verbatim_after_shared_records():
    text = render_result(make_input())
    prose = RUNTIME_PROSE[1].strip("\n")
    nested = prose.replace("\n### Forcing cases", "\n###### Forcing cases")  # below the contents' levels
    assert "### Runtime account (as the runtime report states it)\n\n" + nested in text
    assert text.index("## Shared records") < text.index(nested) < text.index("## Reconciliation")


def test_it_carries_member_prose_under_its_author_with_version_and_sha256():
    data = make_input()
    runtime = next(m for m in data.members if m.role == "runtime")
    text = render_result(data)
    assert (f"## Runtime report (`{runtime.name}`)\n\nAs written in the runtime report, version {runtime.version}, "
            f"SHA-256 `{runtime.sha256}`: the runtime analyst's words, carried verbatim, not the reviewer's.") in text


def test_a_members_own_blockers_section_is_titled_as_its_claim_and_its_headings_nested():
    from results.rendering import nest_headings

    assert nest_headings("# A\n## B\n```\n# code\n```\n### C\ntext #1") == (
        "#### A\n##### B\n```\n# code\n```\n###### C\ntext #1")
    import dataclasses

    data = make_input()
    members = tuple(dataclasses.replace(m, prose_sections=(("Verification and blockers", "### Blockers\n\nnone\n"),))
                    if m.role == "memory" else m for m in data.members)
    text = render_result(dataclasses.replace(data, members=members))
    assert ("### Verification and blockers (the memory report's own claim)\n\n###### Blockers\n\nnone") in text
    assert text.count("\n### Blockers\n") == 1  # the run's own
    assert selfcheck.contents_headings(text).count("### Blockers") == 1


def test_it_writes_verified_hashes_and_each_mapping_once_with_its_relation():
    # Before issue 10 this was one "Mappings: A → B; …" line, which lost part-of and supersedes.
    text = render_result(make_input())
    reconciliation = text.split("## Reconciliation", 1)[1].split("## Limitations", 1)[0]
    assert f"- runtime.md SHA-256: {'1' * 64} (verified)" in reconciliation
    assert ("### Mappings\n\n"
            "| member record | relation | canonical record | mapping |\n"
            "|---|---|---|---|\n"
            "| MEM-OBJ-1 | new | OBJ-5 | MEM-OBJ-1 → OBJ-5 |\n"
            "| MEM-RTE-1 | same | RTE-6 | MEM-RTE-1 → RTE-6 |\n"
            "| MEM-ABS-9 | no-counterpart | — | MEM-ABS-9 has no counterpart in the shared set |\n") in reconciliation
    assert text.count("MEM-OBJ-1 → OBJ-5") == 1 and "Mappings:" not in text


def test_it_writes_each_integration_issue_with_its_decision_and_rationale():
    text = render_result(make_input())
    assert (
        "- memory.md issue 1, rejected by rita: Register RTE-6 for formatting.\n"
        "  Rationale: Already covered.\n"
        "- memory.md issue 2, accepted by rita: Keep opaque images on OBJ-3.\n"
        "  Rationale: Matches the source."
    ) in text
    assert "2 integration issues decided: 1 accepted, 1 rejected." in text


def test_it_writes_amendments_and_unresolved_conflicts_in_reconciliation():
    reconciliation = render_result(make_input()).split("## Reconciliation", 1)[1].split("## Limitations", 1)[0]
    assert "Amendment: MEM-RTE-3 is superseded by RTE-8.\n\nAmendment decision: accepted. Rationale: Same route." in reconciliation
    assert "Unresolved conflict: Whether the LRU evicts on capacity is unobserved." in reconciliation


def test_it_writes_a_supersedes_mapping_the_way_the_amendment_reads():
    data = make_input(mappings=[MappingEntry("MEM-RTE-3", "supersedes", "RTE-8"),
                                MappingEntry("MEM-OBJ-2", "part-of", "OBJ-5")])
    text = render_result(data)
    assert "| MEM-OBJ-2 | part-of | OBJ-5 | MEM-OBJ-2 part of OBJ-5 |" in text
    assert "| MEM-RTE-3 | supersedes | RTE-8 | MEM-RTE-3 is superseded by RTE-8 |" in text
    assert "MEM-RTE-3 supersedes RTE-8" not in text


def test_it_carries_conflicts_and_rejected_consequences_into_limitations():
    limitations = render_result(make_input()).split("## Limitations", 1)[1].split("## Verification", 1)[0]
    assert "Whether the LRU evicts on capacity is unobserved." in limitations
    assert "- Rejected integration issue memory.md 1: No separate formatting route is registered." in limitations


DECIDED = dict(
    amendments=[
        AmendmentDecision("RTE-4's summary is narrowed to inspected producers.", "accept", "Matches the code.",
                          "reconciliation.md", 26, "rita"),
        AmendmentDecision("RTE-8's selection is replaced by project selection.", "reject", "Not what the code does.",
                          "reconciliation.md", 30, "rita"),
        AmendmentDecision("EPI-OBJ-2 supersedes `Part of: RT-OBJ-2`.", "carry", "The part-of question stays open.",
                          "reconciliation.md", 12, "sam"),
    ],
    unresolved_conflicts=[
        AmendmentDecision("RT-OBJ-1 and MEM-OBJ-2 disagree\nabout RT-OBJ-1's expiry.", "carry", "Expiry unobserved.",
                          "reconciliation.md", 40, "sam"),
        "A conflict carried without a recorded decision.",
    ],
)


def test_it_states_each_amendment_and_conflict_decision_with_who_where_and_why():
    text = render_result(make_input(**DECIDED))
    reconciliation = text.split("## Reconciliation", 1)[1].split("## Limitations", 1)[0]
    assert ("Amendment: RTE-4's summary is narrowed to inspected producers.\n\n"
            "Amendment decision: accepted by rita (reconciliation.md line 26). Rationale: Matches the code.") in reconciliation
    assert "Amendment decision: carried by sam (reconciliation.md line 12)." in reconciliation
    assert ("Unresolved conflict: RT-OBJ-1 and MEM-OBJ-2 disagree\nabout RT-OBJ-1's expiry.\n\n"
            "Conflict decision: carried by sam (reconciliation.md line 40). Rationale: Expiry unobserved.") in reconciliation


def test_it_carries_rejected_and_carried_amendments_and_every_conflict_into_limitations():
    limitations = render_result(make_input(**DECIDED)).split("## Limitations", 1)[1].split("## Verification", 1)[0]
    assert ("- Rejected amendment, not applied to the shared records: RTE-8's selection is replaced by project "
            "selection.\n  Decision: rejected by rita (reconciliation.md line 30). Rationale: Not what the code does.") in limitations
    assert ("- Carried amendment, not applied to the shared records: EPI-OBJ-2 supersedes `Part of: RT-OBJ-2`.\n"
            "  Decision: carried by sam") in limitations
    assert ("- Carried unresolved: RT-OBJ-1 and MEM-OBJ-2 disagree\n  about RT-OBJ-1's expiry.\n"
            "  Decision: carried by sam (reconciliation.md line 40). Rationale: Expiry unobserved.") in limitations
    assert "- Carried unresolved: A conflict carried without a recorded decision." in limitations
    assert "RTE-4's summary" not in limitations  # accepted: stated in Reconciliation, limits nothing


def test_decided_amendments_render_the_same_bytes_in_any_order_and_read_back():
    data = make_input(**DECIDED)
    expected = render_result(data)
    for seed in range(5):
        assert render_result(shuffled(data, seed)) == expected
        assert result_json(shuffled(data, seed)) == result_json(data)
    assert result_json(data)["unresolved_conflicts"][0] == {
        "text": "A conflict carried without a recorded decision.", "decision": "carry", "rationale": "",
        "member": "", "line": 0, "decided_by": "", "amends": []}
    from records.parsing import parse_report

    again = parse_report(expected)
    assert sorted((a.kind, a.text) for a in again.amendments) == sorted(
        [("amendment", a.text) for a in data.amendments]
        + [("unresolved-conflict", c.text) for c in data.unresolved_conflicts])


def test_it_records_who_approved_when_and_the_validation_counts():
    text = render_result(make_input())
    semantic = text.split("### Semantic verification", 1)[1].split("###", 1)[0]
    assert "Checked every route against the wrapper." in semantic
    assert "Approved by rita at 2026-09-26T10:00:00+00:00." in semantic
    deterministic = text.split("### Deterministic validation", 1)[1].split("###", 1)[0]
    assert "- ID resolution\n- route fields" in deterministic
    assert "0 errors, 3 warnings" in deterministic
    one = render_result(make_input(verification=dataclasses.replace(make_input().verification, warnings=1)))
    assert "Validation findings: 0 errors, 1 warning. " in one  # the dynamic-cheatsheet result said "1 warnings"
    assert MANIFEST_HASH in deterministic


def test_it_says_none_when_there_are_no_blockers_and_lists_them_otherwise():
    assert render_result(make_input()).endswith("### Blockers\n\nnone\n")
    blocked = render_result(make_input(blockers=["Source access lost", "A route unverified"]))
    assert blocked.endswith("### Blockers\n\n- A route unverified\n- Source access lost\n")


def test_it_refuses_a_canonical_record_of_unknown_kind():
    with pytest.raises(ValueError, match="XYZ-1"):
        render_result(make_input(canonical_records=[CanonicalEntry("XYZ-1", "XYZ", "odd", "")]))


def test_it_gives_the_same_content_as_json():
    data = make_input()
    payload = result_json(data)
    assert json.loads(json.dumps(payload, ensure_ascii=False)) == payload
    assert payload["front_matter"] == front_matter_of(render_result(data))
    assert [r["canonical_id"] for r in payload["canonical_records"]] == ["CMP-1", "OBJ-5", "RTE-6", "RTE-10"]
    assert payload["mappings"][0] == {"source": "MEM-OBJ-1", "relation": "new", "target": "OBJ-5"}
    assert payload["verification"]["approved_at"] == "2026-09-26T10:00:00+00:00"


# --- round trip through the parser ----------------------------------------


def seed_result_input(parse_report) -> tuple[ResultInput, object]:
    seed = parse_report(SEED_RESULT.read_text(encoding="utf-8"))
    records = [
        CanonicalEntry(d.record_id, d.kind, d.label, d.body)
        for d in seed.declarations
    ]
    mappings = [MappingEntry(m.source, "same", m.target) for m in seed.mappings]
    sources = [SourceEntry(s.source_id, s.columns) for s in seed.sources]
    data = make_input(
        canonical_records=records,
        mappings=mappings,
        sources=sources,
        members=[
            MemberEntry(
                name="memory-report.md",
                role="memory",
                version=1,
                sha256="12db1364f74205b7fe8142a422f417265a5295fb6adb3268415f612942020c04",
                prose_sections=[RUNTIME_PROSE],
            )
        ],
    )
    return data, seed


def test_it_reads_back_the_seed_results_records_and_mappings():
    parsing = pytest.importorskip("records.parsing")
    data, seed = seed_result_input(parsing.parse_report)
    assert len(seed.declarations) == 20

    parsed = parsing.parse_report(render_result(data))

    assert sorted(d.record_id for d in parsed.declarations) == sorted(d.record_id for d in seed.declarations)
    assert [(m.source, m.target) for m in parsed.mappings] == [
        ("MEM-OBJ-1", "OBJ-5"),
        ("MEM-RTE-1", "RTE-6"),
        ("MEM-RTE-2", "RTE-7"),
        ("MEM-RTE-3", "RTE-8"),
        ("MEM-ABS-1", "ABS-1"),
    ]
    assert sorted((m.source, m.target) for m in parsed.mappings) == sorted(
        (m.source, m.target) for m in seed.mappings
    )
    assert [s.source_id for s in parsed.sources] == ["SRC-1", "SRC-2"]
    assert parsed.front_matter["run-id"] == "AAS-2026-09-25-supermemory-02"


def test_it_keeps_every_seed_records_label_and_body_through_the_round_trip():
    parsing = pytest.importorskip("records.parsing")
    data, seed = seed_result_input(parsing.parse_report)
    parsed = parsing.parse_report(render_result(data))
    assert {d.record_id: (d.label, d.body.strip()) for d in parsed.declarations} == {
        d.record_id: (d.label, d.body.strip()) for d in seed.declarations
    }


def test_it_reads_back_the_mem0_results_records_mappings_and_profile():
    parsing = pytest.importorskip("records.parsing")
    original = parsing.parse_report(MEM0_RESULT.read_text(encoding="utf-8"))
    data = make_input(
        run_id=original.front_matter["run-id"],
        reviewed_boundary=original.front_matter["reviewed-boundary"],
        memory_comparison=original.front_matter["memory-comparison"],
        canonical_records=[CanonicalEntry(d.record_id, d.kind, d.label, d.body) for d in original.declarations],
        mappings=[MappingEntry(m.source, "same", m.target) for m in original.mappings],
        sources=[SourceEntry(s.source_id, s.columns) for s in original.sources],
    )

    parsed = parsing.parse_report(render_result(data))

    assert [d.record_id for d in parsed.declarations] == [d.record_id for d in original.declarations]
    assert {d.record_id: d.body.strip() for d in parsed.declarations} == {
        d.record_id: d.body.strip() for d in original.declarations
    }
    assert [(m.source, m.target) for m in parsed.mappings] == [("MEM-RTE-1", "RTE-5"), ("MEM-RTE-2", "RTE-6")]
    assert parsed.front_matter["memory-comparison"] == original.front_matter["memory-comparison"]


def test_it_renders_the_seed_result_so_that_validation_finds_no_errors():
    parsing = pytest.importorskip("records.parsing")
    validation = pytest.importorskip("records.validation")
    data, _seed = seed_result_input(parsing.parse_report)
    data = dataclasses.replace(data, memory_comparison=None)
    findings = validation.validate_member(
        validation.MemberInput("result.md", "result", parsing.parse_report(render_result(data))),
        validation.RunFacts(data.run_id, data.reviewed_boundary),
    )
    assert [f for f in findings if f.severity == "error"] == []


def test_an_accepted_amendment_stands_under_the_record_it_amends_and_declares_nothing_more():
    from records.parsing import parse_report

    accepted = AmendmentDecision("RTE-6's format step is replaced by a budgeted one.", "accept", "Matches the code.",
                                 "reconciliation.md", 26, "rita", amends="RTE-6")
    carried = AmendmentDecision("RTE-10's order stays open.", "carry", "Unsettled.", "reconciliation.md", 28, "rita",
                                amends="RTE-10")
    text = render_result(make_input(amendments=[accepted, carried]))
    shared = text.split("## Shared records", 1)[1].split("\n## ", 1)[0]
    rte_6 = shared.split("#### RTE-6 — ", 1)[1].split("\n#### ", 1)[0]
    assert ("\n##### Accepted amendment (reconciliation.md line 26)\n\nAccepted by rita; where it differs from the "
            "text above, it replaces it: RTE-6's format step is replaced by a budgeted one.\n") in rte_6
    assert "RTE-10's order" not in shared  # carried: not applied, stated in Limitations only
    again = parse_report(text)
    assert sorted(d.record_id for d in again.declarations) == sorted(
        d.record_id for d in parse_report(render_result(make_input())).declarations)
    assert sorted(a.text for a in again.amendments if a.kind == "amendment") == sorted([accepted.text, carried.text])

"""The record contract (DESIGN §6): one test per check, tripped and not.

Small reports are built by hand from the `records.document` dataclasses so
each test states exactly what the validator sees; the corpus and seed tests
go through the real parser.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from records.document import (
    Amendment,
    Annotation,
    Declaration,
    Field,
    IntegrationIssue,
    MappingStatement,
    ParsedReport,
    Quotation,
    RangeReference,
    Reference,
    Section,
    Segment,
    SourceRow,
)
from records.parsing import parse_report
from records.validation import (
    Finding,
    MemberInput,
    RunFacts,
    validate_manifest,
    validate_member,
    validate_set,
)

COMMIT = "5cfe3c37e8e52b1d858d0f3df46e7f17c50991b9"
RUN = RunFacts(run_id="AAS-2026-10-02-example-01", reviewed_boundary=COMMIT)
SHARED = Path(__file__).resolve().parents[3] / "shared"  # the shared/ folder beside the checkout
ROUTE_FIELDS = (
    "Immediate return",
    "Later read-back",
    "Delegated visibility",
    "Selection predicate",
    "Invalidation or expiry",
    "Activation or effect",
    "Evidence limits",
)
KIND_HEADINGS = (
    "Components",
    "Operative objects",
    "Routes",
    "Claims",
    "Evidenced absences",
    "Behavioral-authority paths",
)


# --------------------------------------------------------------------------
# Builders


def sections_of(text: str) -> tuple[Section, ...]:
    lines = text.splitlines()
    heads = [(i + 1, len(l) - len(l.lstrip("#")), l.lstrip("#").strip()) for i, l in enumerate(lines) if l.startswith("#")]
    out = []
    for index, (line, level, title) in enumerate(heads):
        end = len(lines)
        for later_line, later_level, _ in heads[index + 1 :]:
            if later_level <= level:
                end = later_line - 1
                break
        out.append(Section(title=title, level=level, line_start=line, line_end=end))
    return tuple(out)


def report(text: str = "# Report\n", **fields) -> ParsedReport:
    fields.setdefault("sections", sections_of(text))
    fields.setdefault("segments", (Segment("text", text, 1),))
    return ParsedReport(text=text, **fields)


def decl(record_id: str, line: int = 1, *, end: int | None = None, fields=(), text: str = "", references=()) -> Declaration:
    from records.ids import parse_id

    prefix, kind, _ = parse_id(record_id) or ("", record_id.split("-")[-2] if "-" in record_id else "", "")
    return Declaration(
        record_id=record_id,
        kind=kind,
        prefix=prefix,
        label="Label",
        text=text or f"#### {record_id} — Label\n",
        body="",
        fields=tuple(fields),
        line_start=line,
        line_end=end if end is not None else line + max(0, len((text or "x\n").splitlines()) - 1),
        form="heading",
        references=tuple(references),
    )


def bullets(*pairs, line: int = 2) -> tuple[Field, ...]:
    return tuple(Field(label, value, line + i, bullet=True) for i, (label, value) in enumerate(pairs))


def good_route_fields(line: int = 2, status: str = "wired") -> tuple[Field, ...]:
    pairs = [(label, "stated plainly.") for label in ROUTE_FIELDS]
    pairs.append(("implementation conclusion status", status))
    return bullets(*pairs, line=line)


def member(report_: ParsedReport, role: str = "memory", name: str = "memory.md") -> MemberInput:
    return MemberInput(name=name, role=role, report=report_)


def codes(findings, severity: str | None = None) -> list[str]:
    return [f.code for f in findings if severity is None or f.severity == severity]


def errors(findings) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def slug_report(**fields) -> ParsedReport:
    """A current-form memory report with one slug declaration, so the strict rules apply."""
    fields.setdefault("declarations", (decl("MEM-OBJ-store", 1),))
    return report(fields.pop("text", "#### MEM-OBJ-store — Label\n"), **fields)


def numbered_report(**fields) -> ParsedReport:
    fields.setdefault("declarations", (decl("RT-OBJ-1", 1),))
    return report(fields.pop("text", "#### RT-OBJ-1 — Label\n"), **fields)


# --------------------------------------------------------------------------
# API shape


def test_it_returns_findings_sorted_by_member_line_code_and_record():
    findings = validate_set(
        [
            member(slug_report(references=(Reference("RT-OBJ-zeta", 9), Reference("RT-OBJ-alpha", 3))), name="b.md"),
            member(slug_report(references=(Reference("RT-OBJ-beta", 5),)), name="a.md"),
        ],
        RUN,
    )
    keys = [(f.member, f.line, f.code, f.record_id) for f in findings]
    assert keys == sorted(keys)
    assert findings == validate_set(
        [
            member(slug_report(references=(Reference("RT-OBJ-zeta", 9), Reference("RT-OBJ-alpha", 3))), name="b.md"),
            member(slug_report(references=(Reference("RT-OBJ-beta", 5),)), name="a.md"),
        ],
        RUN,
    )


# --------------------------------------------------------------------------
# Identity of the set


def test_it_reports_a_run_id_that_is_not_the_runs():
    wrong = slug_report(front_matter={"run-id": "AAS-2026-01-01-other-01"})
    right = slug_report(front_matter={"run-id": RUN.run_id})
    assert "run-id-mismatch" in codes(validate_member(member(wrong), RUN), "error")
    assert "run-id-mismatch" not in codes(validate_member(member(right), RUN))


def test_it_reports_a_reviewed_boundary_that_is_not_the_runs_commit():
    wrong = slug_report(front_matter={"reviewed-boundary": "0" * 40})
    right = slug_report(front_matter={"reviewed-boundary": COMMIT})
    assert "reviewed-boundary-mismatch" in codes(validate_member(member(wrong), RUN), "error")
    assert "reviewed-boundary-mismatch" not in codes(validate_member(member(right), RUN))


def test_it_accepts_a_member_without_front_matter_identity():
    assert not {"run-id-mismatch", "reviewed-boundary-mismatch"} & set(codes(validate_member(member(slug_report()), RUN)))


# --------------------------------------------------------------------------
# Sections


MEMORY_SECTIONS = (
    "Boundary and evidence",
    "Core ideas",
    "Shared records",
    "Write side",
    "Read-back",
    "Integration issues",
    "Limitations and checks",
)


def memory_text(order=MEMORY_SECTIONS) -> str:
    parts = ["# Memory report", ""]
    for title in order:
        parts += [f"## {title}", ""]
        if title == "Shared records":
            for heading in KIND_HEADINGS:
                parts += [f"### {heading}", "", "none declared in this member", ""]
    return "\n".join(parts) + "\n"


def memory_report_with(order=MEMORY_SECTIONS, *, slug=True) -> ParsedReport:
    text = memory_text(order)
    target = "RT-OBJ-store" if slug else "RT-OBJ-1"
    return report(text, annotations=(Annotation(target, "Label", "", "", (), 2, 2),))


def test_it_reports_a_missing_required_section_as_an_error_in_the_current_form():
    findings = validate_member(member(memory_report_with(MEMORY_SECTIONS[:-1])), RUN)
    assert [f.message for f in findings if f.code == "missing-section"]
    assert "missing-section" in codes(findings, "error")


def test_it_accepts_a_memory_report_with_every_section_in_order():
    findings = validate_member(member(memory_report_with()), RUN)
    assert not {"missing-section", "section-out-of-order", "missing-kind-heading"} & set(codes(findings))


def test_it_reports_sections_out_of_order():
    order = ("Core ideas", "Boundary and evidence") + MEMORY_SECTIONS[2:]
    assert "section-out-of-order" in codes(validate_member(member(memory_report_with(order)), RUN), "error")


def test_it_reports_older_generations_section_lists_as_warnings_only():
    findings = validate_member(member(memory_report_with(MEMORY_SECTIONS[:-1], slug=False)), RUN)
    assert "missing-section" in codes(findings, "warning")
    assert "missing-section" not in codes(findings, "error")


def test_it_reports_a_missing_kind_heading_in_shared_records():
    text = memory_text().replace("### Claims\n\nnone declared in this member\n", "")
    findings = validate_member(member(report(text, annotations=(Annotation("RT-OBJ-store", "", "", "", (), 1, 1),))), RUN)
    assert "missing-kind-heading" in codes(findings, "error")


def test_it_reports_a_kind_heading_with_neither_records_nor_none_declared():
    text = memory_text().replace("### Claims\n\nnone declared in this member\n", "### Claims\n\nnothing here\n")
    findings = validate_member(member(report(text, annotations=(Annotation("RT-OBJ-store", "", "", "", (), 1, 1),))), RUN)
    assert "empty-kind-heading" in codes(findings, "error")


def test_it_accepts_shared_records_that_say_none_declared_without_kind_headings():
    text = "## Shared records\n\nnone declared in this member\n"
    findings = validate_member(member(report(text, annotations=(Annotation("RT-OBJ-store", "", "", "", (), 1, 1),)), role="workflow"), RUN)
    assert "missing-kind-heading" not in codes(findings)


def test_it_reports_a_memory_report_still_saying_validation_pending():
    pending = slug_report(text="#### MEM-OBJ-store — Label\n\nValidation: pending\n")
    done = slug_report(text="#### MEM-OBJ-store — Label\n\nValidation: passed\n")
    assert "validation-pending" in codes(validate_member(member(pending), RUN), "error")
    assert "validation-pending" not in codes(validate_member(member(done), RUN))


def test_it_requires_exactly_one_reconciliation_section():
    two = report("# R\n\n## Reconciliation\n\ntext\n\n## Reconciliation\n\nmore\n")
    one = report("# R\n\n## Reconciliation\n\ntext\n")
    assert "reconciliation-section-count" in codes(validate_member(member(two, "reconciliation"), RUN), "error")
    assert "reconciliation-section-count" not in codes(validate_member(member(one, "reconciliation"), RUN))


# --------------------------------------------------------------------------
# IDs


def test_it_reports_a_malformed_declared_id():
    bad = slug_report(declarations=(decl("MEM-OBJ-Store", 1), decl("MEM-OBJ-store", 2)))
    assert "malformed-id" in codes(validate_member(member(bad), RUN), "error")
    assert "malformed-id" not in codes(validate_member(member(slug_report()), RUN))


def test_it_reports_a_slug_id_that_is_another_declared_id_plus_a_word():
    bad = slug_report(declarations=(decl("MEM-OBJ-store", 1), decl("MEM-OBJ-store-backed", 3)))
    good = slug_report(declarations=(decl("MEM-OBJ-store", 1), decl("MEM-OBJ-cache", 3)))
    findings = validate_member(member(bad), RUN)
    assert [f.record_id for f in findings if f.code == "slug-extends-declared-id"] == ["MEM-OBJ-store-backed"]
    assert "slug-extends-declared-id" not in codes(validate_member(member(good), RUN))


def test_it_reports_a_reference_that_is_a_declared_id_plus_a_word():
    one = slug_report(references=(Reference("MEM-OBJ-store-backed", 4),))
    findings = validate_set([member(one)], RUN)
    assert "slug-extends-declared-id" in codes(findings, "error")
    assert "unresolved-reference" not in codes(findings)


def test_it_reports_a_duplicate_declaration_within_a_member():
    bad = slug_report(declarations=(decl("MEM-OBJ-store", 1), decl("MEM-OBJ-store", 5)))
    assert "duplicate-declaration" in codes(validate_member(member(bad), RUN), "error")
    assert "duplicate-declaration" not in codes(validate_member(member(slug_report()), RUN))


def test_it_reports_a_duplicate_declaration_across_members():
    runtime = report(declarations=(decl("RT-OBJ-store", 1),))
    memory = report(declarations=(decl("RT-OBJ-store", 1), decl("MEM-OBJ-cache", 3)))
    findings = validate_set([member(runtime, "runtime", "runtime.md"), member(memory)], RUN)
    assert {f.member for f in findings if f.code == "duplicate-declaration-across-members"} == {"runtime.md", "memory.md"}


def test_it_does_not_count_a_results_restated_records_as_duplicates():
    runtime = report(declarations=(decl("RT-OBJ-store", 1),))
    result = report(declarations=(decl("RT-OBJ-store", 1),))
    findings = validate_set([member(runtime, "runtime", "runtime.md"), member(result, "result", "result.md")], RUN)
    assert "duplicate-declaration-across-members" not in codes(findings)


def test_it_reports_a_declaration_under_another_analysts_prefix():
    bad = report(declarations=(decl("RT-OBJ-store", 1),))
    findings = validate_member(member(bad), RUN)
    assert "foreign-prefix" in codes(findings, "error")
    assert "foreign-prefix" not in codes(validate_member(member(slug_report()), RUN))


def test_it_accepts_bare_ids_in_a_numbered_runtime_member_and_a_result():
    bare = report(declarations=(decl("OBJ-1", 1),))
    assert "foreign-prefix" not in codes(validate_member(member(bare, "runtime", "runtime.md"), RUN))
    assert "foreign-prefix" not in codes(validate_member(member(bare, "result", "result.md"), RUN))


def test_it_reports_a_bare_id_in_a_current_form_runtime_member():
    bare = report(declarations=(decl("OBJ-store", 1), decl("RT-OBJ-cache", 2)))
    assert "foreign-prefix" in codes(validate_member(member(bare, "runtime", "runtime.md"), RUN), "error")


def test_it_reports_an_annotation_on_a_record_the_same_member_declares():
    own = slug_report(annotations=(Annotation("MEM-OBJ-store", "", "", "", (), 5, 6),))
    other = slug_report(annotations=(Annotation("RT-OBJ-store", "", "", "", (), 5, 6),))
    assert "annotation-on-own-record" in codes(validate_member(member(own), RUN), "error")
    assert "annotation-on-own-record" not in codes(validate_member(member(other), RUN))


# --------------------------------------------------------------------------
# Part of


def part_of_report(body: str, record_id: str = "MEM-OBJ-store") -> ParsedReport:
    text = f"#### {record_id} — Label\n\n{body}\n"
    end = len(text.splitlines())
    return report(text, declarations=(decl(record_id, 1, end=end, text=text),))


def test_it_accepts_a_part_of_line_naming_one_declared_id():
    runtime = report(declarations=(decl("RT-OBJ-container", 1),))
    findings = validate_set([member(part_of_report("Part of: RT-OBJ-container")), member(runtime, "runtime", "runtime.md")], RUN)
    assert not [c for c in codes(findings) if c.startswith("part-of")]


def test_it_reports_part_of_that_is_not_on_its_own_line():
    findings = validate_member(member(part_of_report("It is Part of: RT-OBJ-container in effect.")), RUN)
    assert "part-of-misplaced" in codes(findings, "error")


def test_it_reports_part_of_naming_more_than_one_id():
    findings = validate_member(member(part_of_report("Part of: RT-OBJ-a and RT-OBJ-b")), RUN)
    assert "part-of-not-one-id" in codes(findings, "error")


def test_it_reports_part_of_naming_the_record_itself():
    findings = validate_member(member(part_of_report("Part of: MEM-OBJ-store")), RUN)
    assert "part-of-self" in codes(findings, "error")


def test_it_reports_part_of_given_twice_in_one_declaration():
    findings = validate_member(member(part_of_report("Part of: RT-OBJ-a\n\nPart of: RT-OBJ-b")), RUN)
    assert "part-of-repeated" in codes(findings, "error")


def test_it_reports_part_of_that_does_not_resolve():
    findings = validate_set([member(part_of_report("Part of: RT-OBJ-container"))], RUN)
    assert "part-of-unresolved" in codes(findings, "error")


def test_it_reports_part_of_outside_any_declaration():
    text = "#### MEM-OBJ-store — Label\n\nbody\n\n## Write side\n\nPart of: RT-OBJ-a\n"
    outside = report(text, declarations=(decl("MEM-OBJ-store", 1, end=3),))
    assert "part-of-outside-declaration" in codes(validate_member(member(outside), RUN), "error")


# --------------------------------------------------------------------------
# References


def test_it_reports_an_unresolved_reference_and_names_the_nearest_declared_id():
    runtime = report(declarations=(decl("RT-OBJ-store", 1),))
    memory = slug_report(references=(Reference("RT-OBJ-stor", 7),))
    findings = validate_set([member(memory), member(runtime, "runtime", "runtime.md")], RUN)
    unresolved = [f for f in findings if f.code == "unresolved-reference"]
    assert [(f.record_id, f.line, f.severity) for f in unresolved] == [("RT-OBJ-stor", 7, "error")]
    assert "RT-OBJ-store" in unresolved[0].message


def test_it_suggests_the_same_name_under_another_prefix():
    memory = slug_report(references=(Reference("RT-OBJ-store", 7),))
    findings = validate_set([member(memory)], RUN)
    message = next(f.message for f in findings if f.code == "unresolved-reference")
    assert "MEM-OBJ-store" in message


def test_it_resolves_references_against_all_members_and_canonical_records():
    memory = slug_report(references=(Reference("RT-OBJ-store", 7), Reference("OBJ-9", 8)))
    runtime = report(declarations=(decl("RT-OBJ-store", 1),))
    findings = validate_set([member(memory), member(runtime, "runtime", "runtime.md")], RUN, canonical_ids={"OBJ-9"})
    assert "unresolved-reference" not in codes(findings)


def test_it_reports_an_annotation_on_a_record_no_member_declares():
    memory = slug_report(annotations=(Annotation("RT-RTE-loop", "", "", "", (), 4, 5),))
    findings = validate_set([member(memory)], RUN)
    assert ("unresolved-reference", "RT-RTE-loop") in [(f.code, f.record_id) for f in findings]


def test_it_reports_ids_named_by_an_integration_issue_that_do_not_resolve():
    memory = slug_report(integration_issues=(IntegrationIssue(1, "RT-RTE-ghost overlaps", 9, ("RT-RTE-ghost",)),))
    findings = validate_set([member(memory)], RUN)
    assert ("unresolved-reference", "RT-RTE-ghost", 9) in [(f.code, f.record_id, f.line) for f in findings]


def test_it_does_not_report_the_left_side_of_an_imported_results_mappings():
    result = report(
        declarations=(decl("OBJ-5", 1),),
        mappings=(MappingStatement("MEM-OBJ-1", "OBJ-5", "mapped", 3, "list"),),
        references=(Reference("MEM-OBJ-1", 3), Reference("OBJ-5", 3)),
    )
    findings = validate_set([member(result, "result", "result.md")], RUN)
    assert "unresolved-reference" not in codes(findings)


def test_it_reports_a_reference_to_an_id_declared_twice_as_ambiguous():
    runtime = report(declarations=(decl("RT-OBJ-store", 1),))
    epistemic = report(declarations=(decl("RT-OBJ-store", 1),))
    memory = slug_report(references=(Reference("RT-OBJ-store", 7),))
    findings = validate_set(
        [member(memory), member(runtime, "runtime", "runtime.md"), member(epistemic, "epistemic", "epistemic.md")], RUN
    )
    assert ("ambiguous-reference", "memory.md") in [(f.code, f.member) for f in findings if f.severity == "error"]


def test_it_refuses_a_range_reference():
    ranged = slug_report(ranges=(RangeReference("RTE-1..3", 4),))
    assert "range-reference" in codes(validate_member(member(ranged), RUN), "error")
    assert "range-reference" not in codes(validate_member(member(slug_report()), RUN))


def test_it_reports_a_source_no_register_holds():
    memory = slug_report(references=(Reference("SRC-3", 4),))
    overview = report(sources=(source_row("SRC-1"),))
    findings = validate_set([member(memory), member(overview, "overview", "overview.md")], RUN)
    assert [(f.code, f.record_id) for f in errors(findings) if f.code == "unknown-source"] == [("unknown-source", "SRC-3")]


# --------------------------------------------------------------------------
# Status fields


def route(fields, record_id: str = "MEM-RTE-save") -> ParsedReport:
    return report(
        "#### MEM-RTE-save — Save\n" + "".join(f"- {f.label}: {f.value}\n" for f in fields),
        declarations=(decl(record_id, 1, end=1 + len(fields), fields=fields),),
    )


RECORD_RULES = {
    "missing-route-field",
    "duplicate-route-field",
    "empty-route-field",
    "route-field-needs-reason",
    "missing-conclusion-status",
    "invalid-conclusion-status",
    "duplicate-status-label",
    "invalid-guarantee-strength",
}


def test_it_accepts_a_route_with_its_seven_fields_and_a_status():
    assert not RECORD_RULES & set(codes(validate_member(member(route(good_route_fields())), RUN)))


def test_it_accepts_a_status_value_in_backticks():
    assert not RECORD_RULES & set(codes(validate_member(member(route(good_route_fields(status="`wired`"))), RUN)))


@pytest.mark.parametrize("value", ["wired; observed", "uninspected.", "wired — code inspected", "Wired"])
def test_it_refuses_a_conclusion_status_that_is_not_exactly_one_value(value):
    findings = validate_member(member(route(good_route_fields(status=value))), RUN)
    assert "invalid-conclusion-status" in codes(findings, "error")


def test_it_reports_a_duplicate_layer_label_case_insensitively():
    fields = good_route_fields() + (Field("Implementation Conclusion Status", "observed", 20, bullet=True),)
    assert "duplicate-status-label" in codes(validate_member(member(route(fields)), RUN), "error")


def test_it_reports_a_route_without_any_conclusion_status():
    fields = good_route_fields()[:-1]
    assert "missing-conclusion-status" in codes(validate_member(member(route(fields)), RUN), "error")


def test_it_does_not_require_a_status_of_an_annotation():
    memory = slug_report(annotations=(Annotation("RT-RTE-loop", "", "", "", (Field("Note", "x", 3),), 2, 3),))
    assert "missing-conclusion-status" not in codes(validate_member(member(memory), RUN))


def test_it_checks_guarantee_strength_against_its_six_values():
    bad = good_route_fields() + (Field("Guarantee strength", "strong", 20, bullet=True),)
    good = good_route_fields() + (Field("Guarantee strength", "best effort", 20, bullet=True),)
    assert "invalid-guarantee-strength" in codes(validate_member(member(route(bad)), RUN), "error")
    assert "invalid-guarantee-strength" not in codes(validate_member(member(route(good)), RUN))


def test_it_reads_an_older_prose_status_by_its_leading_value_and_only_warns():
    text = "RTE-1 — Save. Implementation conclusion status: wired for persistence; conclusion status: maybe later.\n"
    older = report(text, declarations=(decl("RTE-1", 1, text=text),))
    findings = validate_member(member(older, "result", "result.md"), RUN)
    assert [f.code for f in findings if "conclusion-status" in f.code] == ["unreadable-conclusion-status"]
    assert "unreadable-conclusion-status" in codes(findings, "warning")


# --------------------------------------------------------------------------
# Route fields


def test_it_reports_a_missing_route_field():
    fields = tuple(f for f in good_route_fields() if f.label != "Evidence limits")
    findings = validate_member(member(route(fields)), RUN)
    assert [f.message for f in findings if f.code == "missing-route-field" and "Evidence limits" in f.message]
    assert "missing-route-field" in codes(findings, "error")


def test_it_reports_a_route_field_given_twice():
    fields = good_route_fields() + (Field("Later read-back", "again", 30, bullet=True),)
    assert "duplicate-route-field" in codes(validate_member(member(route(fields)), RUN), "error")


def test_it_reports_an_empty_route_field():
    fields = tuple(Field(f.label, "" if f.label == "Selection predicate" else f.value, f.line, True) for f in good_route_fields())
    assert "empty-route-field" in codes(validate_member(member(route(fields)), RUN), "error")


@pytest.mark.parametrize("value", ["inapplicable", "uninspected.", "inapplicable —", "uninspected because nobody looked"])
def test_it_requires_a_reason_after_inapplicable_or_uninspected(value):
    fields = tuple(Field(f.label, value if f.label == "Delegated visibility" else f.value, f.line, True) for f in good_route_fields())
    assert "route-field-needs-reason" in codes(validate_member(member(route(fields)), RUN), "error")


def test_it_accepts_inapplicable_with_its_reason():
    fields = tuple(
        Field(f.label, "inapplicable — no worker is created" if f.label == "Delegated visibility" else f.value, f.line, True)
        for f in good_route_fields()
    )
    assert "route-field-needs-reason" not in codes(validate_member(member(route(fields)), RUN))


def test_it_counts_only_unindented_bullets_as_current_route_fields():
    fields = tuple(Field(f.label, f.value, f.line, bullet=f.label != "Immediate return") for f in good_route_fields())
    findings = validate_member(member(route(fields)), RUN)
    assert [f.message for f in findings if f.code == "missing-route-field" and "Immediate return" in f.message]


def test_it_reports_older_route_fields_in_prose_as_a_warning():
    text = "RTE-6 — imported facts → filtering → context. Immediate return: formatted text.\n"
    older = report(text, declarations=(decl("RTE-6", 1, text=text),))
    findings = validate_member(member(older, "result", "result.md"), RUN)
    assert "missing-route-field" in codes(findings, "warning")
    assert not errors(findings)


# --------------------------------------------------------------------------
# Source register and quotations


def source_row(source_id: str, revision: str = COMMIT, columns: int = 8, line: int = 3) -> SourceRow:
    headers = ["source ID", "kind", "identity/location", "revision or capture", "evidence layer", "inspected scope", "citation anchors", "access gaps"]
    cells = [source_id, "git", "https://example.org/repo", f"`{revision}`", "implementation", "all of `src/`", "`src/a.py`", "none"]
    return SourceRow(source_id, tuple(zip(headers[:columns], cells[:columns])), line)


def test_it_reports_a_source_row_without_eight_columns():
    bad = report(sources=(source_row("SRC-1", columns=7),))
    assert "source-row-columns" in codes(validate_member(member(bad, "overview", "overview.md"), RUN), "error")
    good = report(sources=(source_row("SRC-1"),))
    assert "source-row-columns" not in codes(validate_member(member(good, "overview", "overview.md"), RUN))


def test_it_reports_a_source_id_registered_twice():
    bad = report(sources=(source_row("SRC-1"), source_row("SRC-1", line=4)))
    assert "duplicate-source" in codes(validate_member(member(bad, "overview", "overview.md"), RUN), "error")


def test_it_requires_a_source_row_at_the_runs_commit():
    bad = report(sources=(source_row("SRC-1", revision="f" * 40),))
    assert "no-source-at-boundary" in codes(validate_member(member(bad, "overview", "overview.md"), RUN), "error")
    good = report(sources=(source_row("SRC-1"),))
    assert "no-source-at-boundary" not in codes(validate_member(member(good, "overview", "overview.md"), RUN))


def test_it_reports_a_quotation_anchored_at_another_commit():
    other = slug_report(quotations=(Quotation("x = 1", "src/a.py", "", "f" * 40, 5),))
    same = slug_report(quotations=(Quotation("x = 1", "src/a.py", "", COMMIT, 5),))
    assert "quote-commit-mismatch" in codes(validate_member(member(other), RUN), "error")
    assert "quote-commit-mismatch" not in codes(validate_member(member(same), RUN))


def test_it_refuses_an_empty_quotation_body():
    empty = slug_report(quotations=(Quotation("  ", "src/a.py", "", "", 5),))
    assert "empty-quotation" in codes(validate_member(member(empty), RUN), "error")


def test_it_warns_about_a_quoted_path_the_register_does_not_mention():
    memory = slug_report(quotations=(Quotation("x", "lib/b.py", "", "", 5), Quotation("y", "src/deep/a.py", "", "", 6)))
    overview = report(sources=(source_row("SRC-1"),))
    findings = validate_set([member(memory), member(overview, "overview", "overview.md")], RUN)
    flagged = [(f.severity, f.line) for f in findings if f.code == "quotation-path-not-registered"]
    assert flagged == [("warning", 5)]


def test_it_reports_a_prose_line_anchor_as_an_error_in_the_current_form():
    text = "#### MEM-OBJ-store — Label\n\nSee `src/store.py:12-30` for the write.\n"
    findings = validate_member(member(slug_report(text=text), role="synthesis"), RUN)
    assert [(f.code, f.line) for f in errors(findings)] == [("prose-line-anchor", 3)]


def test_it_does_not_scan_quotations_for_line_anchors():
    text = "#### MEM-OBJ-store — Label\n\n> x = 1\n> --- `src/store.py:12-30` @ `" + COMMIT + "`\n"
    quoted = slug_report(text=text, segments=(Segment("heading", "#### MEM-OBJ-store — Label\n\n", 1), Segment("quotation", "> x = 1\n> --- …\n", 3)))
    assert "prose-line-anchor" not in codes(validate_member(member(quoted), RUN))


def test_it_does_not_report_prose_line_anchors_against_older_results():
    # prose anchors with line ranges were the accepted form there (issue 12 item 4)
    text = "OBJ-4 — prompt. SRC-1 packages/tools/src/vercel/memory-prompt.ts:65-101.\n"
    older = report(text, declarations=(decl("OBJ-4", 1, text=text),))
    findings = validate_member(member(older, "result", "result.md"), RUN)
    assert "prose-line-anchor" not in codes(findings)


# --------------------------------------------------------------------------
# Amendments and the overview


def reconciliation(*texts: str, slug: bool = True) -> ParsedReport:
    body = "# R\n\n## Reconciliation\n\n" + "\n\n".join(f"Amendment: {t}" for t in texts) + "\n"
    return report(
        body,
        amendments=tuple(Amendment("amendment", t, 5 + 2 * i) for i, t in enumerate(texts)),
        references=(Reference("RT-OBJ-store" if slug else "RT-OBJ-1", 5),),
    )


def test_it_accepts_a_current_form_supersession_amendment_between_declared_records():
    runtime = report(declarations=(decl("RT-OBJ-store", 1), decl("RT-OBJ-cache", 2)))
    findings = validate_set(
        [member(reconciliation("RT-OBJ-cache is superseded by RT-OBJ-store. Same referent."), "reconciliation", "reconciliation.md"), member(runtime, "runtime", "runtime.md")],
        RUN,
    )
    assert not {"value-amendment", "amendment-id-undeclared"} & set(codes(findings))


def test_it_refuses_a_value_amendment_in_the_current_form():
    findings = validate_member(member(reconciliation("RT-OBJ-store's description is replaced by a better one."), "reconciliation", "reconciliation.md"), RUN)
    assert "value-amendment" in codes(findings, "error")


def test_it_accepts_a_value_amendment_in_an_older_reconciliation():
    findings = validate_member(member(reconciliation("RTE-4's description is replaced.", slug=False), "reconciliation", "reconciliation.md"), RUN)
    assert "value-amendment" not in codes(findings)


def test_it_reports_an_amendment_naming_an_undeclared_record():
    runtime = report(declarations=(decl("RT-OBJ-store", 1),))
    findings = validate_set(
        [member(reconciliation("RT-OBJ-ghost is superseded by RT-OBJ-store."), "reconciliation", "reconciliation.md"), member(runtime, "runtime", "runtime.md")],
        RUN,
    )
    assert ("amendment-id-undeclared", "RT-OBJ-ghost") in [(f.code, f.record_id) for f in findings]


def overview(line: str) -> ParsedReport:
    return report(f"# O\n\n## Source register\n\n{line}\n", references=(Reference("RT-OBJ-cache", 5),))


def test_it_requires_the_overviews_amended_line_to_list_exactly_the_amended_ids():
    runtime = report(declarations=(decl("RT-OBJ-store", 1), decl("RT-OBJ-cache", 2)))
    recon = member(reconciliation("RT-OBJ-cache is superseded by RT-OBJ-store."), "reconciliation", "reconciliation.md")
    rt = member(runtime, "runtime", "runtime.md")
    wrong = validate_set([recon, rt, member(overview("Amended or superseded records: RT-OBJ-store."), "overview", "overview.md")], RUN)
    right = validate_set([recon, rt, member(overview("Amended or superseded records: RT-OBJ-cache."), "overview", "overview.md")], RUN)
    assert "amended-records-mismatch" in codes(wrong, "error")
    assert "amended-records-mismatch" not in codes(right)


# --------------------------------------------------------------------------
# Boundary facts


def test_it_requires_a_boundarys_analysis_cutoff_to_be_a_real_date():
    bad = report(front_matter={"analysis-cutoff": "2026-02-30", "result-disposition": "complete"})
    good = report(front_matter={"analysis-cutoff": "2026-02-28", "result-disposition": "complete"})
    assert "invalid-analysis-cutoff" in codes(validate_member(member(bad, "boundary", "boundary.md"), RUN), "error")
    assert "invalid-analysis-cutoff" not in codes(validate_member(member(good, "boundary", "boundary.md"), RUN))


def test_it_requires_a_known_result_disposition():
    bad = report(front_matter={"analysis-cutoff": "2026-02-28", "result-disposition": "done"})
    assert "invalid-result-disposition" in codes(validate_member(member(bad, "boundary", "boundary.md"), RUN), "error")


# --------------------------------------------------------------------------
# The memory-comparison profile


def axis(assessment="known", values=("files",), basis="wired", records=("RT-OBJ-1",)):
    return {
        "assessment": assessment,
        "values": list(values),
        "evidence": {v: {"basis": basis, "records": list(records), "note": "n"} for v in values},
        "records": list(records),
        "note": "n",
    }


def profile(**overrides):
    from records.validation import PROFILE_AXES

    axes = {name: axis(values=(vocab[0],)) for name, vocab in list(PROFILE_AXES.items())[:10]}
    axes.update(overrides)
    return {"scope": "the store", "axes": axes}


def profile_member(profile_, role="memory"):
    text = "#### RT-OBJ-1 — Label\n"
    return member(report(text, front_matter={"memory-comparison": profile_}, declarations=(decl("MEM-OBJ-1", 1),)), role)


def profile_codes(profile_, role="memory"):
    runtime = member(report(declarations=(decl("RT-OBJ-1", 1),)), "runtime", "runtime.md")
    return codes(validate_set([profile_member(profile_, role), runtime], RUN), "error")


def test_it_accepts_a_well_formed_ten_axis_profile_in_an_older_memory_member():
    assert not [c for c in profile_codes(profile()) if c.startswith("profile")]


def test_it_requires_fourteen_axes_in_a_result_profile():
    assert "profile-axis-missing" in profile_codes(profile(), role="result")


def test_it_reports_a_profile_value_outside_the_axis_vocabulary():
    assert "profile-invalid-value" in profile_codes(profile(storage_substrate=axis(values=("cloud",))))


def test_it_requires_one_evidence_entry_per_value():
    body = axis(values=("files", "repo"))
    del body["evidence"]["repo"]
    assert "profile-evidence-mismatch" in profile_codes(profile(storage_substrate=body))


def test_it_requires_values_for_known_and_none_otherwise():
    assert "profile-values-mismatch" in profile_codes(profile(storage_substrate=axis(values=())))
    assert "profile-values-mismatch" in profile_codes(profile(storage_substrate=axis(assessment="uninspected")))


def test_it_requires_an_abs_record_for_an_absent_assessment():
    absent = axis(assessment="absent", values=())
    assert "profile-absent-needs-abs" in profile_codes(profile(storage_substrate=absent))


def test_it_refuses_a_partial_no_on_a_yes_no_axis():
    # YAML reads an unquoted `no` as False; the validator reads it back as "no".
    assert "profile-invalid-value" in profile_codes(profile(trace_learning=axis("partial", values=(False,))))


def test_it_requires_an_observed_basis_for_faithfulness_tested_yes():
    axes = {name: axis(values=(vocab[0],)) for name, vocab in __import__("records.validation").validation.PROFILE_AXES.items()}
    axes["faithfulness_tested"] = axis(values=("yes",), basis="wired")
    assert "profile-faithfulness-basis" in profile_codes({"scope": "s", "axes": axes}, role="result")
    axes["faithfulness_tested"] = axis(values=("yes",), basis="observed")
    assert "profile-faithfulness-basis" not in profile_codes({"scope": "s", "axes": axes}, role="result")


def test_it_reports_a_profile_record_no_member_declares():
    assert "profile-record-unresolved" in profile_codes(profile(storage_substrate=axis(records=("RT-OBJ-9",))))


# --------------------------------------------------------------------------
# Mappings


def test_it_reports_a_mapping_between_records_of_different_kinds():
    findings = validate_set([member(slug_report())], RUN, extra_mappings=[("MEM-OBJ-store", "same", "RTE-1")])
    assert "mapping-kind-mismatch" in codes(findings, "error")
    findings = validate_set([member(slug_report())], RUN, extra_mappings=[("MEM-OBJ-store", "same", "OBJ-1")])
    assert "mapping-kind-mismatch" not in codes(findings)


def test_it_reports_a_results_mapping_statement_between_kinds():
    result = report(declarations=(decl("RTE-6", 1),), mappings=(MappingStatement("MEM-OBJ-1", "RTE-6", "mapped", 3, "list"),))
    assert "mapping-kind-mismatch" in codes(validate_set([member(result, "result", "result.md")], RUN), "error")


def test_it_reports_a_canonical_id_allocated_twice():
    mappings = [("MEM-OBJ-a", "new", "OBJ-6"), ("MEM-OBJ-b", "new", "OBJ-6")]
    assert "canonical-id-allocated-twice" in codes(validate_set([member(slug_report())], RUN, extra_mappings=mappings), "error")


# --------------------------------------------------------------------------
# ARTIFACT.yaml


def manifest_for(files: dict[str, bytes]) -> str:
    lines = ["type: agentic-systems/types/agentic-system-analysis-set.md", "members:"]
    for name, data in files.items():
        lines += [f"  {name}:", f"    sha256: {hashlib.sha256(data).hexdigest()}"]
    return "\n".join(lines) + "\n"


def test_it_accepts_a_manifest_whose_pins_match():
    files = {"overview.md": b"a", "runtime.md": b"b"}
    assert validate_manifest(manifest_for(files), files) == []


def test_it_reports_a_malformed_pin():
    files = {"overview.md": b"a"}
    text = "members:\n  overview.md:\n    sha256: 87e0b110\n"
    assert codes(validate_manifest(text, files)) == ["malformed-pin"]


def test_it_reports_a_pinned_file_that_is_missing():
    text = manifest_for({"overview.md": b"a", "runtime.md": b"b"})
    assert codes(validate_manifest(text, {"overview.md": b"a"})) == ["pinned-file-missing"]


def test_it_reports_a_member_file_that_is_not_pinned():
    text = manifest_for({"overview.md": b"a"})
    findings = validate_manifest(text, {"overview.md": b"a", "memory.md": b"c", "ARTIFACT.yaml": text.encode()})
    assert [(f.code, f.record_id) for f in findings] == [("member-not-pinned", "memory.md")]


def test_it_reports_a_pin_that_does_not_match_the_bytes():
    text = manifest_for({"overview.md": b"a"})
    assert codes(validate_manifest(text, {"overview.md": b"a changed"})) == ["pin-mismatch"]


def test_it_reports_an_unreadable_manifest():
    assert codes(validate_manifest("members: [\n", {})) == ["manifest-unreadable"]


@pytest.mark.parametrize("run_dir", sorted(p.name for p in (SHARED / "corpus").iterdir() if (p / "ARTIFACT.yaml").exists()))
def test_it_accepts_the_corpus_manifests(run_dir):
    folder = SHARED / "corpus" / run_dir
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert validate_manifest((folder / "ARTIFACT.yaml").read_text(), files) == []


# --------------------------------------------------------------------------
# Real documents (through the parser)


ROLE_BY_STEM = {
    "overview": "overview",
    "runtime": "runtime",
    "memory": "memory",
    "epistemic": "epistemic",
    "reconciliation": "reconciliation",
    "boundary": "boundary",
    "memory-profile": "memory-profile",
    "synthesis": "synthesis",
    "result": "result",
    "workflow": "workflow",
}


def corpus_run(run_dir: Path):
    members = []
    run = None
    for path in sorted(run_dir.glob("*.md")):
        parsed = parse_report(path.read_text(encoding="utf-8"))
        members.append(MemberInput(name=path.name, role=ROLE_BY_STEM.get(path.stem, "verification"), report=parsed))
        front = parsed.front_matter or {}
        if run is None and front.get("run-id"):
            run = RunFacts(run_id=str(front["run-id"]), reviewed_boundary=str(front.get("reviewed-boundary", "")))
    return members, run


@pytest.mark.parametrize("run_dir", sorted(p.name for p in (SHARED / "corpus").iterdir() if p.is_dir()))
def test_it_finds_no_errors_in_the_accepted_corpus_runs(run_dir):
    members, run = corpus_run(SHARED / "corpus" / run_dir)
    assert run is not None
    found = errors(validate_set(members, run))
    assert found == []


def seed(number: str):
    path = next((SHARED / "seeds").glob(f"{number}_*.txt"))
    return parse_report(path.read_text(encoding="utf-8"))


SEED_RUN = RunFacts(run_id="AAS-2026-09-25-supermemory-02", reviewed_boundary="0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f")


def test_it_reports_seed_000s_compact_route_fields_as_warnings_not_errors():
    findings = validate_set([MemberInput("result.md", "result", seed("000"))], SEED_RUN)
    route_findings = [f for f in findings if f.code == "missing-route-field"]
    assert route_findings
    assert {f.severity for f in route_findings} == {"warning"}
    assert errors(findings) == []


def test_it_reports_seed_002s_runtime_references_unresolved_when_alone():
    findings = validate_set([MemberInput("memory.md", "memory", seed("002"))], SEED_RUN)
    unresolved = {f.record_id for f in findings if f.code == "unresolved-reference" and f.severity == "error"}
    assert "RT-RTE-vercel-call" in unresolved
    assert all(record_id.startswith("RT-") for record_id in unresolved)


def test_it_reports_rt_references_unresolved_in_seeds_001_and_002_together():
    findings = validate_set(
        [MemberInput("workflow.md", "workflow", seed("001")), MemberInput("memory.md", "memory", seed("002"))], SEED_RUN
    )
    unresolved = {(f.member, f.record_id) for f in findings if f.code == "unresolved-reference"}
    assert ("workflow.md", "RT-RTE-tool-loop") in unresolved
    assert ("memory.md", "RT-RTE-tool-loop") in unresolved
    assert all(record_id.startswith("RT-") for _, record_id in unresolved)


# --------------------------------------------------------------------------
# Current-form Markdown through the parser

CURRENT_RUNTIME = f"""---
type: agentic-system-analyses/types/agentic-system-runtime-report.md
run-id: {RUN.run_id}
reviewed-boundary: {COMMIT}
---

# Example runtime report

## Runtime account

The store keeps text; see SRC-1 at `src/store.py`.

## Shared records

### Components

none declared in this member

### Operative objects

#### RT-OBJ-store — Stored text

- Source-native identity: the store.

### Routes

#### RT-RTE-save — Save text

- Immediate return: the saved ID.
- Later read-back: a later search returns the text.
- Delegated visibility: inapplicable — no worker is created.
- Selection predicate: the caller's key.
- Invalidation or expiry: uninspected — expiry code was not read.
- Activation or effect: the text reaches the next prompt.
- Evidence limits: source only; no run observed.
- implementation conclusion status: `wired`
- operation conclusion status: uninspected

> store.save(text)
> --- `src/store.py` @ `{COMMIT}`

### Claims

none declared in this member

### Evidenced absences

none declared in this member

### Behavioral-authority paths

none declared in this member
"""

CURRENT_OVERVIEW = f"""---
type: agentic-system-analyses/types/agentic-system-analysis-overview.md
run-id: {RUN.run_id}
reviewed-boundary: {COMMIT}
analysis-cutoff: '2026-10-02'
result-disposition: complete
---

# Example overview

## Boundary and evidence

The store at RT-OBJ-store.

## Source register

| source ID | kind | identity/location | revision or capture | evidence layer | inspected scope | citation anchors | access gaps |
|---|---|---|---|---|---|---|---|
| SRC-1 | git | `https://example.org/repo` | `{COMMIT}` | implementation | all of `src/` | `src/store.py` | none |

## Bounded synthesis

RT-RTE-save saves text.

## Limitations

None beyond RT-RTE-save's evidence limits.

## Verification and blockers

none
"""


def parsed_members(**texts):
    roles = {"runtime": "runtime", "overview": "overview", "memory": "memory", "reconciliation": "reconciliation"}
    return [MemberInput(f"{name}.md", roles[name], parse_report(text)) for name, text in texts.items()]


def test_it_finds_nothing_wrong_with_a_clean_current_form_set():
    findings = validate_set(parsed_members(runtime=CURRENT_RUNTIME, overview=CURRENT_OVERVIEW), RUN)
    assert findings == []


def test_it_reports_a_current_form_route_missing_a_bullet_field():
    broken = CURRENT_RUNTIME.replace("- Selection predicate: the caller's key.\n", "")
    findings = validate_set(parsed_members(runtime=broken, overview=CURRENT_OVERVIEW), RUN)
    assert [(f.code, f.record_id) for f in errors(findings)] == [("missing-route-field", "RT-RTE-save")]


def test_it_does_not_count_a_route_field_written_inside_a_quotation():
    broken = CURRENT_RUNTIME.replace("- Selection predicate: the caller's key.\n", "").replace(
        "> store.save(text)\n", "> store.save(text)\n> - Selection predicate: quoted\n"
    )
    findings = validate_set(parsed_members(runtime=broken, overview=CURRENT_OVERVIEW), RUN)
    assert "missing-route-field" in codes(findings, "error")


def test_it_reports_a_current_form_status_with_two_values():
    broken = CURRENT_RUNTIME.replace("status: uninspected", "status: wired; observed")
    findings = validate_set(parsed_members(runtime=broken, overview=CURRENT_OVERVIEW), RUN)
    assert [(f.code, f.record_id) for f in errors(findings)] == [("invalid-conclusion-status", "RT-RTE-save")]


def test_it_reports_a_current_form_quotation_at_another_commit_and_a_wrong_run_id():
    broken = CURRENT_RUNTIME.replace(f"@ `{COMMIT}`", "@ `" + "a" * 40 + "`").replace(RUN.run_id, "AAS-2026-01-01-other-01")
    findings = validate_set(parsed_members(runtime=broken, overview=CURRENT_OVERVIEW), RUN)
    assert sorted(codes(errors(findings))) == ["quote-commit-mismatch", "run-id-mismatch"]


def test_it_reports_a_parsed_reference_to_an_undeclared_record_with_a_suggestion():
    broken = CURRENT_OVERVIEW.replace("RT-RTE-save saves text.", "RT-RTE-saves saves text.")
    findings = validate_set(parsed_members(runtime=CURRENT_RUNTIME, overview=broken), RUN)
    unresolved = [f for f in errors(findings) if f.code == "unresolved-reference"]
    assert [f.record_id for f in unresolved] == ["RT-RTE-saves"]
    assert "RT-RTE-save" in unresolved[0].message

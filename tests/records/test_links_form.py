"""The links form judged by its own rules (issue 25; DESIGN §1 "links form", §2 "Citation", §6).

Each rule has a passing case (the example set in ../shared/examples/links-form/, written from the
upstream contract) and a failing one derived from it. Pure: no database.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from reconcile.services.correction_answers import CORRECTED, DECLINED, all_declined, check_answers, dropped_ids, parse_answers
from records.parsing import parse_report
from records.validation import MemberInput, RunFacts, validate_set

EXAMPLE = Path(__file__).resolve().parents[3] / "shared" / "examples" / "links-form"
SET_DIR = EXAMPLE / "AAS-2026-12-01-tinycache-0123456789ab-01"
ROUND_2 = EXAMPLE / "round-2"
RUN = RunFacts(run_id="AAS-2026-12-01-tinycache-0123456789ab-01",
               reviewed_boundary="0123456789abcdef0123456789abcdef01234567")
ROLES = {"boundary": "boundary", "runtime": "runtime", "memory": "memory", "epistemic": "epistemic",
         "reconciliation": "reconciliation", "report-verification": "report-verification", "synthesis": "synthesis"}


def texts(**replaced: str) -> dict[str, str]:
    found = {p.name: p.read_text(encoding="utf-8") for p in sorted(SET_DIR.glob("*.md"))}
    found.update({f"{k.replace('_', '-')}.md": v for k, v in replaced.items()})
    return found


def members(files: dict[str, str]) -> list[MemberInput]:
    return [MemberInput(name, ROLES[name.removesuffix(".md")], parse_report(text)) for name, text in files.items()]


def findings(files: dict[str, str]):
    return validate_set(members(files), RUN)


def errors(files):
    return [f for f in findings(files) if f.severity == "error"]


def codes(files, severity="error"):
    return [(f.code, f.member, f.line) for f in findings(files) if f.severity == severity]


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if needle in line)


def with_change(name: str, old: str, new: str) -> dict[str, str]:
    files = texts()
    assert old in files[name], old
    files[name] = files[name].replace(old, new, 1)
    return files


# --- the example set -----------------------------------------------------------------------


def test_the_example_set_validates_with_no_error_and_no_warning():
    assert findings(texts()) == []


def test_the_correction_round_validates_with_no_error():
    files = texts(runtime=(ROUND_2 / "runtime.md").read_text(encoding="utf-8"))
    assert errors(files) == []


def test_it_counts_what_the_example_set_really_has():
    parsed = {m.name: m.report for m in members(texts())}
    assert all(parsed[n].links_form for n in ("runtime.md", "memory.md", "epistemic.md", "reconciliation.md",
                                               "report-verification.md"))
    assert {n: len(r.declarations) for n, r in parsed.items() if r.declarations} == {
        "runtime.md": 5, "memory.md": 3, "epistemic.md": 2}
    assert [a.target for a in parsed["memory.md"].annotations] == ["RT-OBJ-entry-map"]
    assert len(parsed["memory.md"].citations) == 15  # the issue: 22 references were counted before
    assert sum(len(r.citations) for r in parsed.values()) == 34
    assert [m.record_id for m in parsed["memory.md"].mentions() if not m.record_id.startswith("SRC-")] == [
        "RT-RTE-warm-start", "RT-CMP-lru-cache", "RT-OBJ-eviction-log"]
    verification = parsed["report-verification.md"]
    assert [(b.addressee, b.line) for b in verification.blockers] == [("runtime", 23)]
    assert verification.blockers[0].references[0] == "RT-RTE-warm-start"
    assert [lim.line for lim in verification.limits] == [28]
    memory_counts = parsed["memory.md"].counts()
    assert (memory_counts["references"], memory_counts["citations"], memory_counts["mentions"]) == (15, 15, 7)
    assert sum(len(r.mentions()) for r in parsed.values()) == 28


# --- declarations ---------------------------------------------------------------------------


def test_it_refuses_the_older_heading_form_on_its_line():
    """DESIGN §6: "a `#### ID — Label` heading is refused there (error naming the line and the form expected)"."""
    files = with_change("runtime.md", "#### RT-OBJ-entry-map\n", "#### RT-OBJ-entry-map — In-memory entry map\n")
    line = line_of(files["runtime.md"], "#### RT-OBJ-entry-map")
    assert codes(files) == [("declaration-heading-form", "runtime.md", line)]
    assert "`#### RT-OBJ-entry-map`" in errors(files)[0].message


def test_it_refuses_a_numbered_name_as_malformed():
    """DESIGN §6 / the contract's Identity and grammar: "names are one to three lower-case words (no numbers)"."""
    files = with_change("memory.md", "#### MEM-ABS-size-budget\n", "#### MEM-ABS-1\n")
    line = line_of(files["memory.md"], "#### MEM-ABS-1")
    assert ("malformed-id", "memory.md", line) in codes(files)


def test_it_keeps_only_the_declared_kind_headings_of_an_epistemic_report():
    """DESIGN §6: "an epistemic report lists only the kinds it declares": missing empty headings are no finding."""
    assert [c for c in codes(texts()) if c[0] == "missing-kind-heading"] == []
    files = with_change("memory.md", "### Claims\n\nnone declared in this member\n\n", "")
    assert ("missing-kind-heading", "memory.md") in [c[:2] for c in codes(files)]


# --- citations and mentions ------------------------------------------------------------------


def test_a_bare_id_in_prose_is_a_mention_not_an_unresolved_reference():
    """DESIGN §2 "Citation": "In that generation a bare ID in prose is a mention, never an unresolved reference"."""
    assert "RT-OBJ-eviction-log" in texts()["memory.md"]
    assert [c for c in codes(texts()) if c[0] == "unresolved-reference"] == []


def test_a_citation_to_the_wrong_member_is_an_error_naming_the_link():
    """DESIGN §2: a link "that names the wrong member ... is an error naming both sides"."""
    files = with_change("memory.md", "- Retained input: [MEM-OBJ-snapshot-rows](#mem-obj-snapshot-rows).",
                        "- Retained input: [MEM-OBJ-snapshot-rows](runtime.md#mem-obj-snapshot-rows).")
    line = line_of(files["memory.md"], "- Retained input:")
    assert codes(files) == [("citation-wrong-member", "memory.md", line)]
    assert "[MEM-OBJ-snapshot-rows](runtime.md#mem-obj-snapshot-rows)" in errors(files)[0].message


def test_a_citation_whose_text_and_anchor_disagree_is_an_error():
    files = with_change("memory.md", "- Retained input: [MEM-OBJ-snapshot-rows](#mem-obj-snapshot-rows).",
                        "- Retained input: [MEM-OBJ-snapshot-rows](#mem-rte-snapshot-reload).")
    assert [c[0] for c in codes(files)] == ["citation-anchor-mismatch"]


def test_a_citation_to_an_anchor_that_exists_nowhere_is_an_error():
    files = with_change("memory.md", "- Retained input: [MEM-OBJ-snapshot-rows](#mem-obj-snapshot-rows).",
                        "- Retained input: [MEM-OBJ-snapshot-lines](#mem-obj-snapshot-lines).")
    assert [c[0] for c in codes(files)] == ["citation-unresolved"]


def test_a_citation_of_a_member_outside_the_set_is_an_error():
    files = with_change("memory.md", "[RT-RTE-cache-lookup](runtime.md#rt-rte-cache-lookup)",
                        "[RT-RTE-cache-lookup](workflow.md#rt-rte-cache-lookup)")
    assert [c[0] for c in codes(files)] == ["citation-member-missing"]


# --- annotations, Part of, supersessions -----------------------------------------------------


def test_part_of_carries_exactly_one_citation():
    """DESIGN §6: "`Part of:` carries exactly one citation"; a bare ID there is refused."""
    assert [c for c in codes(texts()) if c[0].startswith("part-of")] == []
    files = with_change("memory.md", "Part of: [RT-OBJ-snapshot-file](runtime.md#rt-obj-snapshot-file)",
                        "Part of: RT-OBJ-snapshot-file")
    assert [c[0] for c in codes(files)] == ["part-of-not-one-id"]


def test_a_supersession_cites_both_sides_and_a_value_amendment_is_refused():
    """DESIGN §6: "supersessions `Amendment: [A](…) is superseded by [B](…)` ...; a value amendment is refused"."""
    assert [c for c in codes(texts()) if "amendment" in c[0]] == []
    files = with_change("reconciliation.md", "is superseded by [RT-RTE-warm-start](runtime.md#rt-rte-warm-start).",
                        "now reads its rows lazily.")
    assert [c[0] for c in codes(files)] == ["value-amendment"]


# --- verification members --------------------------------------------------------------------


def test_a_blocker_without_an_addressee_is_an_error():
    """DESIGN §6: "a report verification's `## Blockers` entries each start with the report they address
    (... error when missing or unknown)"."""
    files = with_change("report-verification.md", "- runtime: [RT-RTE-warm-start]", "- [RT-RTE-warm-start]")
    assert codes(files) == [("blocker-addressee-missing", "report-verification.md", 23)]


def test_a_blocker_addressed_to_an_unknown_report_is_an_error():
    files = with_change("report-verification.md", "- runtime: [RT-RTE-warm-start]", "- kernel: [RT-RTE-warm-start]")
    assert codes(files) == [("blocker-addressee-unknown", "report-verification.md", 23)]


SYNTHESIS = """---
type: agentic-system-analyses/types/agentic-system-synthesis.md
run-id: AAS-2026-12-01-tinycache-0123456789ab-01
reviewed-boundary: "0123456789abcdef0123456789abcdef01234567"
---

# tinycache synthesis

## Limitations

{limitations}
"""


def test_a_limit_must_reach_the_synthesis_limitations_when_there_is_one():
    """DESIGN §6: "`## Limits` entries ... must reach the synthesis's Limitations when a synthesis is present
    (warning naming the limit otherwise)"."""
    reached = texts(synthesis=SYNTHESIS.format(
        limitations="- [MEM-ABS-size-budget](memory.md#mem-abs-size-budget) covers `tinycache/` only."))
    assert codes(reached, "warning") == []
    missed = texts(synthesis=SYNTHESIS.format(limitations="- No run trace was supplied."))
    assert codes(missed, "warning") == [("limit-not-in-synthesis", "report-verification.md", 28)]


# --- corrected reports -----------------------------------------------------------------------


def test_it_reads_the_correction_rounds_answers():
    """DESIGN §2 "Answer": each line starting `- corrected: ` or `- declined: `, and no other line starting `- `."""
    answers = parse_answers((ROUND_2 / "runtime-answers.md").read_text(encoding="utf-8"))
    assert [(a.verdict, a.line) for a in answers] == [(CORRECTED, 1)]
    assert check_answers(answers, open_request_count=1) == []


def test_it_refuses_answers_that_do_not_match_the_open_requests():
    answers = parse_answers("- corrected: the status.\n- note: something else\n")
    problems = check_answers(answers, open_request_count=2)
    assert [p.code for p in problems] == ["answers_mismatch", "answers_mismatch"]
    assert problems[0].line == 2


def test_identical_bytes_answer_only_when_every_entry_is_declined():
    assert all_declined(parse_answers("- declined: the status is supported.\n"))
    assert not all_declined(parse_answers("- declined: a.\n- corrected: b.\n"))
    assert [a.verdict for a in parse_answers("- declined: a.\n  still a.\n")] == [DECLINED]


def test_a_corrected_report_keeps_every_id_its_predecessor_declared():
    """DESIGN §6: "it keeps every ID its predecessor declared"."""
    before = parse_report((SET_DIR / "runtime.md").read_text(encoding="utf-8"))
    after = parse_report((ROUND_2 / "runtime.md").read_text(encoding="utf-8"))
    assert dropped_ids(before, after) == []
    cut = parse_report(after.text.replace("#### RT-OBJ-snapshot-file", "#### RT-OBJ-snapshot-store"))
    assert dropped_ids(before, cut) == ["RT-OBJ-snapshot-file"]


@pytest.mark.parametrize("name", ["runtime.md", "memory.md", "epistemic.md"])
def test_older_generations_are_not_read_as_links_form(name):
    older = texts()[name].replace("agentic-system-analyses/", "agentic-systems/")
    assert not parse_report(older).links_form


def test_every_declaration_carries_its_member_types_record_prefix():
    """DESIGN §6: "every declaration's prefix is the member type's `record-prefix`"."""
    files = with_change("memory.md", "#### MEM-ABS-size-budget\n", "#### EPI-ABS-size-budget\n")
    assert ("foreign-prefix", "memory.md", line_of(files["memory.md"], "#### EPI-ABS-size-budget")) in codes(files)

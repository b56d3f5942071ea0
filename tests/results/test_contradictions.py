"""Carried lines that state a relation the decisions contradict are marked in place (DESIGN §7, issue 24
item 6): the reading of a line, the mark the renderer writes, and the self-check that reads the bytes."""
from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from reconcile import services
from reconcile.blockers import run_standing
from reconcile.models import CanonicalRecord, Mapping
from results import selfcheck
from results.contradictions import MARK, Decisions, Statement, mark_contradictions, overriding, statements_in
from results.services import approve_run, finalize_run
from reviews.models import Run
from tests.reconcile.factories import INSTINCTUAL, REVIEWER, WORKER, upload
from tests.reconcile.test_coherence_properties import _try, build_corpus_run, explore, play, settle, step
from tests.results.test_one_judge import approve_then_finalize

OVERVIEW_LINE = "EPI-OBJ-2 and EPI-OBJ-3 are parts of MEM-OBJ-1"
REJECTED = Decisions(rejected={"MEM-OBJ-1": "MEM-OBJ-1 was rejected: not one object"})


def test_it_reads_the_relations_a_line_states_in_each_form():
    line = ("The dispositions hold: EPI-OBJ-2 and EPI-OBJ-3 are parts of MEM-OBJ-1, which is itself a valid part "
            "of RT-OBJ-2; EPI-OBJ-4 is superseded by the matching MEM-OBJ-2 identity; Mappings: MEM-OBJ-5 → OBJ-5.")
    assert statements_in(line) == [
        Statement("EPI-OBJ-2", "part-of", "MEM-OBJ-1"), Statement("EPI-OBJ-3", "part-of", "MEM-OBJ-1"),
        Statement("MEM-OBJ-1", "part-of", "RT-OBJ-2"), Statement("EPI-OBJ-4", "supersedes", "MEM-OBJ-2"),
        Statement("MEM-OBJ-5", "maps-to", "OBJ-5")]
    assert statements_in("Part of: [RT-OBJ-store](runtime.md#rt-obj-store)", "MEM-OBJ-cache") == [
        Statement("MEM-OBJ-cache", "part-of", "RT-OBJ-store")]
    # A table row's `Part of` belongs to the row's record; the replaced value of an amendment is not stated.
    assert statements_in("| `EPI-OBJ-2` | inputs | Part of `RT-OBJ-2`; unknown source |", "") == []
    assert statements_in("EPI-OBJ-2 supersedes `Part of: RT-OBJ-2` with `Part of: MEM-OBJ-1`.") == [
        Statement("EPI-OBJ-2", "part-of", "MEM-OBJ-1")]
    assert statements_in("Part of: RT-OBJ-2") == []  # no record to be part of it


def test_it_names_the_accepted_mapping_that_overrides_another_target():
    decisions = Decisions(placements={"EPI-OBJ-4": ("new", "OBJ-8"), "MEM-OBJ-3": ("part-of", "OBJ-2")},
                          aliases={"RT-OBJ-2": "OBJ-2", "MEM-OBJ-2": "OBJ-13"})
    assert overriding(Statement("EPI-OBJ-4", "supersedes", "MEM-OBJ-2"), decisions) == (
        "the accepted mapping is EPI-OBJ-4 → OBJ-8 (new)")
    assert overriding(Statement("MEM-OBJ-3", "part-of", "RT-OBJ-2"), decisions) == ""  # RT-OBJ-2 is OBJ-2
    assert overriding(Statement("MEM-OBJ-3", "part-of", "RT-OBJ-4"), decisions) == (
        "the accepted mapping is MEM-OBJ-3 part of OBJ-2")
    # A new record keeps its own `Part of:` field: entering the shared set says nothing of its parent.
    assert overriding(Statement("EPI-OBJ-4", "part-of", "RT-OBJ-2"), decisions) == ""


def test_it_marks_after_the_block_and_leaves_the_carried_lines_verbatim():
    text = "| ID | note |\n|---|---|\n| `EPI-OBJ-2` | Part of `MEM-OBJ-1` |\n\nNothing else.\n\n```\nMEM-OBJ-2 part of MEM-OBJ-1\n```"
    marked = mark_contradictions(text, REJECTED)
    assert marked == ("| ID | note |\n|---|---|\n| `EPI-OBJ-2` | Part of `MEM-OBJ-1` |\n\n"
                      f"{MARK}EPI-OBJ-2 part of MEM-OBJ-1: MEM-OBJ-1 was rejected: not one object\n\n"
                      "Nothing else.\n\n```\nMEM-OBJ-2 part of MEM-OBJ-1\n```")
    assert mark_contradictions("Quoted:\n\n> EPI-OBJ-2 and EPI-OBJ-3 are parts of MEM-OBJ-1", REJECTED) == (
        "Quoted:\n\n> EPI-OBJ-2 and EPI-OBJ-3 are parts of MEM-OBJ-1")


@pytest.mark.django_db
def test_the_cheatsheet_result_with_mem_obj_1_rejected_marks_the_overview_line_in_place(run_factory):
    run = build_corpus_run(run_factory)
    for mapping in Mapping.objects.filter(run=run, source="MEM-OBJ-1"):
        services.decide_mapping(mapping=mapping, decision="reject", rationale="the examples are two objects",
                                actor=REVIEWER, expected_version=mapping.version)
    settle(run)
    approve_run(run=run, note="Checked.", actor=REVIEWER)
    result = finalize_run(run=run, actor=WORKER)
    run.refresh_from_db()
    assert run.status == Run.Status.FINAL, run.status_reason

    lines = result.markdown.split("\n")
    carried = next(i for i, line in enumerate(lines) if OVERVIEW_LINE in line)
    assert lines[carried + 1] == ""
    assert lines[carried + 2] == (f"{MARK}EPI-OBJ-2 part of MEM-OBJ-1: MEM-OBJ-1 was rejected: "
                                  "the examples are two objects")
    assert f"{MARK}EPI-OBJ-3 part of MEM-OBJ-1: MEM-OBJ-1 was rejected" in result.markdown
    assert selfcheck.unmarked_contradictions(result.markdown) == []

    # The self-check reads the bytes: the same result with the marks taken out fails it, naming the line.
    unmarked = re.sub(rf"\n\n{re.escape(MARK)}[^\n]*", "", result.markdown)
    problems = selfcheck.unmarked_contradictions(unmarked)
    assert any(f"line {carried + 1}: the carried statement “EPI-OBJ-2 part of MEM-OBJ-1”" in p for p in problems)


@pytest.mark.django_db
def test_a_runtime_record_part_of_a_rejected_canonical_record_is_marked_under_its_declared_id(run_factory):
    run = build_corpus_run(run_factory)
    parent = CanonicalRecord.objects.get(run=run, canonical_id="OBJ-4")  # RT-OBJ-4, parent of EPI-OBJ-5 and -6
    for mapping in Mapping.objects.filter(run=run, source__in=["EPI-OBJ-5", "EPI-OBJ-6"]):
        services.decide_mapping(mapping=mapping, decision="reject", rationale="outside", actor=REVIEWER,
                                expected_version=mapping.version)
    services.reject_canonical_record(record=parent, rationale="the sandbox is not an object", actor=REVIEWER)
    settle(run)
    approve_run(run=run, note="Checked.", actor=REVIEWER)
    result = finalize_run(run=run, actor=WORKER)
    run.refresh_from_db()
    assert run.status == Run.Status.FINAL, run.status_reason
    assert "- Rejected canonical record OBJ-4 (declared as `RT-OBJ-4`):" in result.markdown
    # The epistemic report's inventory says EPI-OBJ-5 and EPI-OBJ-6 are part of RT-OBJ-4.
    assert (f"{MARK}EPI-OBJ-5 part of RT-OBJ-4: canonical record OBJ-4 was rejected: the sandbox is not an object"
            in result.markdown)
    assert selfcheck.unmarked_contradictions(result.markdown) == []


# --- the property: decision sequences on the corpus runs (issue 24 item 6) ---------------------------

EXAMPLES = settings(max_examples=10, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# Beside the mapping, issue and amendment moves, a reviewer may reject a canonical record.
moves = st.lists(st.one_of(step, st.tuples(st.just("canonical"), st.integers(0, 50))), max_size=14)


def play_with_canonical(run: Run, sequence) -> None:
    for move in sequence:
        if move[0] != "canonical":
            play(run, [move])
            continue
        rows = list(CanonicalRecord.objects.filter(run=run, state="active").order_by("pk"))
        if rows:
            try:
                services.reject_canonical_record(record=rows[move[1] % len(rows)], rationale="not in the boundary",
                                                 actor=REVIEWER)
            except (services.StateConflict, services.ProposalError):
                pass


def build_instinctual_run(run_factory) -> Run:
    run = run_factory(run_id="AAS-2026-10-02-instinctual-memory-02",
                      reviewed_boundary=_pin(INSTINCTUAL / "runtime.md"))
    for path in sorted(INSTINCTUAL.glob("*.md")):
        upload(run, path.stem, path.read_bytes())
    run.refresh_from_db()
    return run


def _pin(path) -> str:
    return re.search(r"^reviewed-boundary: *\"?([0-9a-f]+)", path.read_text(), re.MULTILINE).group(1)


def assert_final_bytes_hold(run: Run) -> str:
    """Approve and finalize; a final result's bytes list each contents heading once and mark every
    contradicted carried line, and the decisions they state are the database's."""
    if approve_then_finalize(run) == "blocked":
        return "blocked"
    markdown = run.result.markdown
    headings = Counter(selfcheck.contents_headings(markdown))
    assert [h for h, n in headings.items() if n > 1] == []
    assert selfcheck.unmarked_contradictions(markdown) == []
    # The bytes' decisions are the database's: the reader above judged by what was decided.
    read = selfcheck.decisions_in(markdown)
    standing = run_standing(run)
    assert {r for r, why in read.rejected.items() if not why.startswith("canonical")} == {
        d.record for d in standing.dispositions if d.disposition == "rejected"}
    rejected_canonical = set(CanonicalRecord.objects.filter(run=run, state="rejected")
                             .values_list("canonical_id", flat=True))
    assert {why.split()[2] for why in read.rejected.values() if why.startswith("canonical")} == rejected_canonical
    return "final"


@pytest.mark.django_db
@pytest.mark.parametrize("build", [build_corpus_run, build_instinctual_run], ids=["cheatsheet", "instinctual"])
def test_on_the_corpus_runs_a_final_result_never_repeats_a_heading_nor_leaves_a_contradiction_unmarked(
        run_factory, build):
    run = build(run_factory)

    def body(sequence, reject_memory):
        if reject_memory:  # the case, among the random ones
            for m in Mapping.objects.filter(run=run, source__startswith="MEM-OBJ-"):
                _try(lambda: services.decide_mapping(mapping=m, decision="reject", rationale="not one object",
                                                     actor=REVIEWER, expected_version=m.version))
        play_with_canonical(run, sequence)
        settle(run)
        return assert_final_bytes_hold(run)

    assert "final" in explore(run, EXAMPLES, body, sequence=moves, reject_memory=st.booleans())


def test_the_self_check_reads_a_carried_section_as_the_renderer_marked_it():
    """A section titled by a record ID: its `Part of:` lines are that record's, for the renderer and the
    self-check alike (a disagreement would fail a sound result)."""
    from results.rendering import render_result
    from tests.results.test_rendering import make_input

    data = make_input(members=[{"name": "epistemic.md", "role": "epistemic", "version": 1, "sha256": "e" * 64,
                                   "prose_sections": [("EPI-OBJ-2 inventory", "Part of: MEM-OBJ-1\n")]}],
                         dispositions=[{"member": "memory", "record": "MEM-OBJ-1", "disposition": "rejected",
                                        "rationale": "two objects"}])
    markdown = render_result(data)
    assert f"Part of: MEM-OBJ-1\n\n{MARK}EPI-OBJ-2 part of MEM-OBJ-1: MEM-OBJ-1 was rejected: two objects" in markdown
    assert selfcheck.unmarked_contradictions(markdown) == []

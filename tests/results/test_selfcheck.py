"""The result's self-check reads rendered bytes back (DESIGN §7): pure, checked against hand-edited bytes."""
from __future__ import annotations

from results.rendering import DispositionEntry, MappingEntry, render_result
from results.selfcheck import check_result, read_result
from tests.results.test_rendering import make_input

MAPPINGS = [MappingEntry("MEM-OBJ-1", "new", "OBJ-5"), MappingEntry("MEM-RTE-1", "same", "RTE-6"),
            MappingEntry("MEM-CMP-2", "part-of", "CMP-1")]
DISPOSITIONS = [
    DispositionEntry("memory", "MEM-OBJ-1", "new", "new", "OBJ-5", "checked"),
    DispositionEntry("memory", "MEM-RTE-1", "mapped", "same", "RTE-6", "same route"),
    DispositionEntry("memory", "MEM-CMP-2", "mapped", "part-of", "CMP-1", "a part",
                     alternatives=[("new", "", "not a new component")]),
    DispositionEntry("memory", "MEM-OBJ-3", "rejected", "", "", "not in the code"),
]
RECORDS = {("memory", "MEM-OBJ-1"), ("memory", "MEM-RTE-1"), ("memory", "MEM-CMP-2"), ("memory", "MEM-OBJ-3")}
ACCEPTED = {("MEM-OBJ-1", "new", "OBJ-5"), ("MEM-RTE-1", "same", "RTE-6"), ("MEM-CMP-2", "part-of", "CMP-1")}


def rendered() -> str:
    return render_result(make_input(mappings=MAPPINGS, dispositions=DISPOSITIONS))


def test_a_coherent_result_passes_and_reads_back_what_it_says():
    text = rendered()
    assert check_result(text, member_records=RECORDS, accepted=ACCEPTED) == []
    read = read_result(text)
    assert set(read.mappings) == ACCEPTED
    assert read.no_place == {"MEM-OBJ-3"}
    assert "- MEM-CMP-2 as a new record: rejected in favour of the accepted MEM-CMP-2 part of CMP-1.\n" in text
    assert "- MEM-OBJ-3 has no place in the shared set (memory report): every mapping of it was rejected" in text


def test_it_finds_a_record_without_a_disposition_and_one_with_two():
    text = rendered().replace("| MEM-OBJ-3 | memory | rejected | — | — | not in the code |\n", "")
    assert check_result(text, member_records=RECORDS, accepted=ACCEPTED) == ["MEM-OBJ-3 (memory) has no disposition"]
    doubled = rendered().replace("| MEM-OBJ-3 | memory | rejected |",
                                 "| MEM-OBJ-3 | memory | rejected | — | — | x |\n| MEM-OBJ-3 | memory | rejected |")
    assert check_result(doubled, member_records=RECORDS, accepted=ACCEPTED) == ["MEM-OBJ-3 has 2 dispositions"]


def test_it_finds_a_mapping_whose_relation_is_lost_or_missing():
    lost = rendered().replace("| MEM-CMP-2 part of CMP-1 |", "| MEM-CMP-2 → CMP-1 |")  # the issue's `→ OBJ-2`
    problems = check_result(lost, member_records=RECORDS, accepted=ACCEPTED)
    assert problems[0].startswith("a Mappings row does not state its mapping with its relation")
    assert "the accepted mapping MEM-CMP-2 part-of CMP-1 is missing from Mappings" in problems
    assert check_result(rendered(), member_records=RECORDS,
                        accepted=ACCEPTED | {("MEM-OBJ-3", "same", "OBJ-5")}) == [
        "the accepted mapping MEM-OBJ-3 same OBJ-5 is missing from Mappings"]


def test_it_finds_a_record_both_placed_and_said_to_have_no_place():
    text = rendered().replace("## Limitations\n\n", "## Limitations\n\n- MEM-CMP-2 has no place in the shared set.\n", 1)
    assert check_result(text, member_records=RECORDS, accepted=ACCEPTED) == [
        "MEM-CMP-2 is placed in the shared set and also said to have no place"]


def test_it_finds_a_cited_canonical_id_that_shared_records_lacks():
    text = rendered().replace("#### CMP-1 — withSupermemory wrapper", "#### CMP-7 — withSupermemory wrapper")
    assert check_result(text, member_records=RECORDS, accepted=ACCEPTED) == [
        "CMP-1 is cited but is not a record of Shared records"]


def test_a_members_own_limitations_or_dispositions_section_is_not_read_as_the_results():
    """Members' prose is carried under '## <Member> report'; its '### Limitations' or '### Dispositions'
    once merged into the result's own sections by title, failing a coherent result at finalization."""
    text = rendered()
    prose = ("## Profile report (`profile.md`)\n\n### Limitations (as the profile report states it)\n\n"
             "- MEM-OBJ-1 has no place in the shared set, the analyst feared.\n\n"
             "### Dispositions (as the profile report states it)\n\n"
             "| record | member | disposition | relation | place |\n|---|---|---|---|---|\n"
             "| MEM-OBJ-1 | memory | kept | — | — |\n\n")
    text = text.replace("## Reconciliation\n", prose + "## Reconciliation\n", 1)
    assert prose in text
    assert check_result(text, member_records=RECORDS, accepted=ACCEPTED) == []


def test_it_fails_a_carried_heading_that_duplicates_one_of_the_results_own():
    """Issue 24: the contents listed "Deterministic validation" and "Blockers" twice, the member's and the app's."""
    text = rendered()
    carried = "## Memory report (`memory.md`)\n\n### Blockers\n\nnone\n\n"
    text = text.replace("## Reconciliation\n", carried + "## Reconciliation\n", 1)
    problems = check_result(text, member_records=RECORDS, accepted=ACCEPTED)
    assert "the heading '### Blockers' appears 2 times among the contents' headings" in problems


def test_a_heading_inside_fenced_code_is_not_a_contents_heading():
    text = rendered().replace("## Reconciliation\n", "```\n### Blockers\n```\n\n## Reconciliation\n", 1)
    assert check_result(text, member_records=RECORDS, accepted=ACCEPTED) == []

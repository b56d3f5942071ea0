"""The nearest-declared-ID suggestion (`Candidates.closest`) answers what difflib.get_close_matches answers:
it prunes by difflib's own upper bounds, so a pruned candidate could never have been the answer."""
import difflib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from records.parsing import parse_report
from records.validation import lookalikes
from records.validation.findings import Collector
from records.validation.references import Candidates, Suggestions

# ID-like words from few letters, so that ratios tie and lengths repeat.
WORDS = st.text(alphabet="ABCMO-12gx", min_size=0, max_size=12)


@settings(max_examples=500, deadline=None)
@given(WORDS, st.lists(WORDS, max_size=30), st.sampled_from([0.0, 0.3, 0.6, 0.8, 1.0]))
def test_the_closest_candidate_is_difflibs_answer(word, candidates, cutoff):
    expected = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=cutoff)
    assert Candidates(sorted(candidates)).closest(word, cutoff=cutoff) == (expected[0] if expected else "")


def test_it_suggests_the_nearest_declared_id():
    suggest = Suggestions(["MEM-OBJ-store", "MEM-OBJ-loader", "RT-RTE-call"])
    assert suggest("MEM-OBJ-stores") == " The nearest declared ID is MEM-OBJ-store."
    assert suggest("EPI-CLM-unrelated-thing") == ""


# Lines of prose, headings and labels with look-alike letters, controls and other non-ASCII text.
PIECES = ["CMP-1", "RT-OBJ-store", "С", "Μ", "о", "\u200b", "\u202e", "é", "—", "“", "x", " ", "-", "MP-1", "# ",
          "Label: ", "**CMP-2 — ", "SRC-1", "Ĳ", "1"]
LINES = st.lists(st.sampled_from(PIECES), max_size=10).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINES, min_size=1, max_size=6))
def test_lookalike_findings_are_those_of_reading_every_token(lines):
    report = parse_report("\n".join(["# Report", ""] + lines) + "\n")
    fast = Collector("m.md")
    lookalikes.check_lookalikes(fast, report)
    skipping = lookalikes._IMITATING_RE
    try:
        lookalikes._IMITATING_RE = re.compile("")  # matches every line: no line is skipped
        every = Collector("m.md")
        lookalikes.check_lookalikes(every, report)
    finally:
        lookalikes._IMITATING_RE = skipping
    assert fast.findings == every.findings


def references_asking_every_issue_afresh(member):
    """`_references_of` as first written: the IDs already mentioned gathered again for every issue."""
    report = member.report
    refs = {(ref.record_id, ref.line) for ref in report.references}
    for issue in report.integration_issues:
        mentioned = {record_id for record_id, _ in refs}
        for record_id in issue.references:
            if record_id not in mentioned:
                refs.add((record_id, issue.line))
    declared_at = {(d.record_id, d.line_start) for d in report.declarations}
    return sorted(refs - declared_at)


IDS = st.sampled_from(["CMP-1", "OBJ-2", "RT-OBJ-a", "MEM-RTE-b", "SRC-1"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(IDS, st.integers(1, 6)), max_size=8),
       st.lists(st.tuples(st.lists(IDS, max_size=4), st.integers(1, 6)), max_size=5))
def test_an_issues_references_are_those_asking_every_issue_afresh(references, issues):
    from records.document import IntegrationIssue, ParsedReport, Reference
    from records.validation import MemberInput
    from records.validation.references import references_of

    report = ParsedReport(text="", segments=(), references=tuple(Reference(r, line) for r, line in references),
                          integration_issues=tuple(IntegrationIssue(i, "", line, tuple(refs))
                                                   for i, (refs, line) in enumerate(issues, start=1)))
    member = MemberInput("m.md", "memory", report)
    assert references_of(member) == references_asking_every_issue_afresh(member)

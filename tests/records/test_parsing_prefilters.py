"""The parser looks for plain substrings a line pattern needs before trying the pattern at every position
of the line (`---` for an anchor, `mappings` or an analyst prefix for a mapping statement, a tab for a
tab-separated row, the colon of a field): on generated reports the parse is the one without those first looks."""
import dataclasses
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from records.parsing import grammar, leads, parse_report_strict, quotations, statements

LINES = [
    "Mappings: RT-OBJ-store → OBJ-1; MEM-CMP-loader → no record here.", "MAPPINGS:** RT-RTE-call → RTE-2",
    "mappings : EPI-CLM-a → CLM-1, and RT-CMP-b → CMP-2.", "- `MEM-OBJ-tag` → OBJ-12.", "- RT-OBJ-x -> OBJ-3",
    "Lead-in: RT-OBJ-y ⟶ OBJ-4 and MEM-OBJ-z → OBJ-5", "Also: EPI-CLM-c → CLM-4.", "The mApPings: RT-OBJ-q → OBJ-9;", "Appings: RT-OBJ-w → OBJ-8",
    "> some quoted code", "> --- `src/a.py` @ `0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f`", "def f(): pass",
    "return x --- src/b.py:1-3 @ abc123", "--- docs/readme.md", "text with -- two dashes and --- three",
    "a\tb\tc", "Component\tPath", "\t- RT-OBJ-b → OBJ-7", "  * MEM-OBJ-c → OBJ-2", "• EPI-OBJ-d → OBJ-1", "| a | b |", "| --- | --- |", "", "Shared records", "CMP-1 — Store. Reads OBJ-1.",
    "MEM-OBJ-store — Store", "Label: the store", "Amendment: RT-OBJ-store is MEM-OBJ-store.", "# Heading",
    "#### MEM-OBJ-store — Store", "Plain prose, nothing to find.", "- Status: current", "Route: RT-RTE-call.",
    "**Part of:** MEM-OBJ-store", "The store. Trigger: on save; Effect: writes", "Conclusion status: supported",
    "  • Guarantee strength:** weak", "The note. Immediate return: the note; Later read-back: none", "Store: a note", "text: with a colon", "RT-", "EPI-", "pp", "PP-1",
]


def parse_without_first_looks(text, monkeypatch_targets):
    saved = [(module, name, getattr(module, name)) for module, name in monkeypatch_targets]
    try:
        for module, name in monkeypatch_targets:
            setattr(module, name, lambda line: True)
        return parse_report_strict(text)
    finally:
        for module, name, fn in saved:
            setattr(module, name, fn)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=25))
def test_the_parse_is_the_one_without_the_first_looks(lines):
    text = "\n".join(["# Report", "", "## Shared records", ""] + lines) + "\n"  # so that leads declare records
    everything = parse_without_first_looks(
        text, [(statements, "may_label_mappings"), (statements, "may_start_statement"), (quotations, "may_anchor"),
               (leads, "may_hold_field")])
    assert dataclasses.asdict(parse_report_strict(text)) == dataclasses.asdict(everything)


# The field pattern as it was written before its value became greedy: the reference its matches are held to.
LAZY_FIELD_RE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<bullet>(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+)?"
    r"(?P<star>\*\*)?(?P<label>[A-Za-z][A-Za-z0-9 ,/()'\u2019&\-]{0,79}?)"
    r"(?:\*\*:|:\*\*|:)(?:[ \t]+(?P<value>.*?))?[ \t]*$"
)
PIECES = st.sampled_from([
    "Status", "Conclusion status", "conclusion status", "Guarantee strength", "Immediate return", "Later read-back",
    "Invalidation/expiry", "Activation or effect", "Evidence limits", "Route", "**", ":", ": ", ":\t", " ", "\t",
    ".", ";", ". ", "; ", "- ", "1. ", "http://x", "RT-OBJ-a", "words", "\u2019", "(a)", "x" * 90,
])
TEXTS = st.lists(PIECES, max_size=14).map("".join)


@settings(max_examples=1500, deadline=None)
@given(TEXTS)
def test_a_field_is_read_as_the_lazy_pattern_read_it(line):
    ours, lazy = grammar.FIELD_RE.match(line), LAZY_FIELD_RE.match(line)
    assert (ours is None) == (lazy is None)
    if ours is not None:
        assert [ours.group(g) for g in ("indent", "bullet", "star", "label")] == \
            [lazy.group(g) for g in ("indent", "bullet", "star", "label")]
        assert (ours.group("value") or "").strip() == (lazy.group("value") or "").strip()


@settings(max_examples=1500, deadline=None)
@given(TEXTS, st.integers(min_value=0, max_value=12))
def test_inline_fields_are_the_pattern_s_own_matches(text, start):
    start = min(start, len(text))
    ours = [(m.start(), m.end(), m.group("label")) for m in grammar.inline_field_matches(text, start)]
    theirs = [(m.start(), m.end(), m.group("label")) for m in grammar.INLINE_FIELD_RE.finditer(text, start)]
    assert ours == theirs


STATEMENT_PIECES = st.sampled_from(["- ", "* ", "\u2022 ", "  ", "\t", ":", ": ", "`", "RT-", "MEM-", "EPI-", "OBJ-1",
                                    "RT-OBJ-a", " → ", "x", "Mappings", "-"])


@settings(max_examples=1500, deadline=None)
@given(st.lists(STATEMENT_PIECES, max_size=12).map("".join))
def test_statement_starts_are_the_pattern_s_own_matches(line):
    assert [m.span() for m in grammar.statement_starts(line)] == \
        [m.span() for m in grammar.STATEMENT_START_RE.finditer(line)]

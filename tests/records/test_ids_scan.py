"""`ids.scan` is the three finders at once (the parser's one pass over a line, issue 14)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from records import ids

# Pieces that make IDs, ranges, malformed tokens and the prose around them.
PIECES = ["RT-", "MEM-", "EPI-", "XX-", "CMP-", "OBJ-", "RTE-", "SRC-", "Cmp-", "1", "23", "store", "backed", "Tag",
          "-", "--", "..", "\u2013", "\u2014", " ", "x", "_", "(", ")", "`", "a-b", "GPT-4o-mini", "SHA-256"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14).map("".join))
def test_scan_finds_exactly_what_the_three_finders_find(text):
    assert ids.scan(text) == (ids.find_ids(text), ids.find_ranges(text), ids.find_malformed(text))


def test_scan_reads_ids_ranges_and_malformed_tokens_of_one_line():
    found, ranges, malformed = ids.scan("See RT-OBJ-store and RTE-1..3, not MEM-OBJ-tag-to-note-map.")
    assert [m.record_id for m in found] == ["RT-OBJ-store"]
    assert [r.record_id for r in ranges] == ["RTE-1..3"]
    assert [b.record_id for b in malformed] == ["MEM-OBJ-tag-to-note-map"]


# Wider pieces: IDs glued to other tokens, ranges of every notation, slugs past three words, capitals
# that start no ID, digits next to dashes and dots (what `scan`'s first searches skip to must not skip one).
WIDE = PIECES + ["RT-RTE-1-RT-RTE-4", "CMP-1-configured", "MEM-OBJ-tag-to-note-map", "RTE-1..RTE-3", "RTE-1..3",
                 "SRC-1\u20133", "RTE-1-3", "XRT-", "foo-", "Ab-", "ABCDE-", "OBJ", "RTE", "9", "-1", ".", "..3",
                 "é", "\u2011", "a", "B", "Z9-", "EPI-CLM-a-b-c-d", "MEM-Xyz-1", "RT-SRC-2"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(WIDE), max_size=12).map("".join))
def test_scan_agrees_with_the_three_finders_on_glued_and_ranged_text(text):
    assert ids.scan(text) == (ids.find_ids(text), ids.find_ranges(text), ids.find_malformed(text))


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(WIDE), max_size=12).map("".join), st.integers(min_value=0, max_value=20))
def test_tokens_are_the_token_pattern_s_own_matches(text, pos):
    assert [m.span() for m in ids.tokens(text, pos)] == [m.span() for m in ids.TOKEN_RE.finditer(text, pos)]

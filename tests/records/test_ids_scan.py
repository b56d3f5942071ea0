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

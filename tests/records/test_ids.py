"""Record ID grammar: pure tests, no database."""
import pytest

from records import ids


@pytest.mark.parametrize(
    "record_id, expected",
    [
        ("CMP-1", ("", "CMP", "1")),
        ("OBJ-12", ("", "OBJ", "12")),
        ("RT-OBJ-3", ("RT", "OBJ", "3")),
        ("MEM-RTE-engine-dreaming", ("MEM", "RTE", "engine-dreaming")),
        ("EPI-CLM-graph-display", ("EPI", "CLM", "graph-display")),
        ("RT-BAP-a-b-c", ("RT", "BAP", "a-b-c")),
        ("ABS-v5", ("", "ABS", "v5")),
        ("SRC-2", ("", "SRC", "2")),
    ],
)
def test_it_splits_a_full_id_into_prefix_kind_and_tail(record_id, expected):
    assert ids.parse_id(record_id) == expected
    assert ids.is_valid_id(record_id)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "CMP",
        "CMP-",
        "cmp-1",
        "OBJ-Store",
        "XX-OBJ-1",
        "RT-SRC-1",
        "SRC-one",
        "OBJ-1a",
        "RT-OBJ-a-b-c-d",
        "RT-OBJ-1-store",
        "MEM-OBJ-2nd",
        "MEM-OBJ-foo--bar",
        " OBJ-1",
        "OBJ-1 ",
    ],
)
def test_it_refuses_malformed_ids(text):
    assert ids.parse_id(text) is None
    assert not ids.is_valid_id(text)


def test_it_tells_record_ids_from_source_ids():
    assert ids.is_record_id("RT-OBJ-1")
    assert not ids.is_record_id("SRC-1")
    assert ids.is_source_id("SRC-1")
    assert not ids.is_source_id("OBJ-1")


def test_it_tells_numbered_ids_from_slugs():
    assert ids.is_numbered("RTE-11") and not ids.is_slug("RTE-11")
    assert ids.is_slug("RT-RTE-tool-loop") and not ids.is_numbered("RT-RTE-tool-loop")


def _found(text):
    return [m.record_id for m in ids.find_ids(text)]


def test_it_finds_ids_in_prose_with_trailing_punctuation():
    text = "See OBJ-5. Then RTE-6; and MEM-OBJ-foo, plus (RT-CMP-2) and `EPI-RTE-1`: done."
    assert _found(text) == ["OBJ-5", "RTE-6", "MEM-OBJ-foo", "RT-CMP-2", "EPI-RTE-1"]


def test_it_does_not_find_ids_inside_longer_tokens():
    assert _found("XCMP-1 and foo-OBJ-1 and OBJ-1a and RTE-1_x and SRT-OBJ-1") == []


def test_it_reports_where_each_id_sits():
    match = ids.find_ids("Part of: RT-OBJ-2")[0]
    assert (match.record_id, match.start, match.end) == ("RT-OBJ-2", 9, 17)


def test_it_takes_the_longest_slug_of_up_to_three_words():
    assert _found("RT-OBJ-store-backed cache") == ["RT-OBJ-store-backed"]
    assert _found("MEM-RTE-engine-dreaming.") == ["MEM-RTE-engine-dreaming"]


# Malformed IDs are refused whole (DESIGN §6): never read as the valid ID they start with.


def _malformed(text):
    return [m.record_id for m in ids.find_malformed(text)]


@pytest.mark.parametrize(
    "token, reason",
    [
        ("MEM-OBJ-tag-to-note-map", "four or more words"),
        ("MEM-RTE-a-b-c-d", "four or more words"),
        ("MEM-OBJ-Draft", "upper-case"),
        ("RT-OBJ-storeX", "upper-case"),
        ("MEM-REC-store", "unknown kind"),
        ("RT-OBJS-2", "unknown kind"),
        ("MEM-OBJ-tag--map", "empty slug word"),
        ("MEM-OBJ-tag-", "empty slug word"),
        ("WF-OBJ-1", "unknown analyst prefix"),
        ("OBJ-1a", "neither a number nor"),
        ("MEM-OBJ-2nd", "neither a number nor"),
    ],
)
def test_it_refuses_a_malformed_token_whole_and_says_why(token, reason):
    text = f"See {token}, then RT-OBJ-store."
    assert _malformed(text) == [token]
    assert _found(text) == ["RT-OBJ-store"]
    assert reason in ids.malformed_reason(token)


def test_it_does_not_read_a_four_word_slug_as_the_three_word_id_it_starts_with():
    assert _found("MEM-OBJ-tag-to-note-map") == []
    assert _found("`MEM-OBJ-tag-to-note-map`.") == []


@pytest.mark.parametrize(
    "text",
    [
        "SHA-256 and UTF-8 and GPT-4o-mini",  # not a record kind, no analyst prefix
        "the `MEM-OBJ-…` records and `RT-*` records",  # a pattern, no ID written
        "MEM-OBJ records and RT-RTE items",
        "RTE-1-3",  # a range: reported as such, not as a malformed ID
        "OBJ-1–OBJ-3 and RT-RTE-1-RT-RTE-4",  # punctuation between two full IDs
        "optional CMP-1-configured model",  # a numbered ID joined to a word is the ID and a word
    ],
)
def test_it_finds_no_malformed_id_in_ordinary_prose(text):
    assert _malformed(text) == []


def test_it_reads_a_numbered_id_joined_to_a_word_as_that_id():
    assert _found("optional CMP-1-configured model") == ["CMP-1"]


def test_it_reads_a_dash_between_two_full_ids_as_punctuation():
    assert _found("OBJ-1–OBJ-3") == ["OBJ-1", "OBJ-3"]
    assert ids.find_ranges("OBJ-1–OBJ-3") == []
    assert ids.find_ranges("RT-RTE-1-RT-RTE-4") == []


@pytest.mark.parametrize("text", ["RTE-1..3", "RTE-1–3", "SRC-1–3", "RTE-1-3", "RT-OBJ-2..4", "RTE-1..RTE-3"])
def test_it_detects_range_notation_without_expanding_it(text):
    ranges = ids.find_ranges(f"see {text}, then")
    assert [r.record_id for r in ranges] == [text]
    # the range's start is not a full reference on its own
    assert _found(f"see {text}, then") == []


def test_it_reads_through_and_to_as_two_references_not_a_range():
    text = "RTE-1 through RTE-3, and OBJ-2 to OBJ-4"
    assert ids.find_ranges(text) == []
    assert _found(text) == ["RTE-1", "RTE-3", "OBJ-2", "OBJ-4"]


def test_it_lists_each_named_id_once_in_order():
    assert ids.unique_ids("OBJ-2, RTE-1, OBJ-2 and SRC-1") == ("OBJ-2", "RTE-1", "SRC-1")


@pytest.mark.parametrize(
    "shapes, generation",
    [
        (["CMP-1", "OBJ-2", "SRC-1"], "bare-numbered"),
        (["OBJ-1", "MEM-OBJ-1"], "prefixed-numbered"),
        (["RT-OBJ-2", "EPI-RTE-1"], "prefixed-numbered"),
        (["RT-OBJ-2", "MEM-OBJ-store"], "slug"),
        (["SRC-1"], "slug"),
        ([], "slug"),
    ],
)
def test_it_detects_the_generation_from_id_shapes(shapes, generation):
    assert ids.generation_of(shapes) == generation

"""records.validation.id_length: a report naming an ID longer than the columns hold is refused at parse time (pure)."""
from hypothesis import given, settings, strategies as st

from records.validation.id_length import MAX_ID_LENGTH, overlong_id
from records.parsing import parse_report

HEAD = "# Memory report\n\n## Shared records\n\n### Operative objects\n\n"


def report_with(record_id: str, *, where: str) -> str:
    if where == "declaration":
        return HEAD + f"#### {record_id} — label\n\n- Identity: x\n"
    return HEAD + "#### MEM-OBJ-a — label\n\n- Identity: see " + record_id + " for more.\n"


@settings(max_examples=40, deadline=None)
@given(length=st.integers(min_value=1, max_value=400), where=st.sampled_from(["declaration", "reference"]))
def test_an_id_is_refused_exactly_when_it_is_longer_than_the_columns(length, where):
    record_id = "MEM-OBJ-" + "x" * length
    problem = overlong_id(parse_report(report_with(record_id, where=where)))
    if len(record_id) > MAX_ID_LENGTH:
        assert problem is not None
        assert f"is {len(record_id)} characters; IDs are at most {MAX_ID_LENGTH}" in problem
        assert problem.startswith("line ")
    else:
        assert problem is None


def test_the_message_names_the_line_of_the_declaration():
    text = report_with("MEM-OBJ-" + "y" * 200, where="declaration")
    assert overlong_id(parse_report(text)).startswith("line 7: the record ID MEM-OBJ-yyy")

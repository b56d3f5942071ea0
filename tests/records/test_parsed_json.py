"""The parser output a parse keeps (`MemberVersion.parsed`) is written without dataclasses.asdict copying
every item first: the same JSON as the straightforward asdict of every item, on the seeds and on
generated reports."""
import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from records.parsing import parse_report_strict
from records.services.parse import parsed_json

SEEDS = sorted((Path(__file__).resolve().parents[3] / "shared" / "seeds").glob("*.txt"))


def asdict_of_every_item(report) -> dict:
    def plain(items) -> list:
        return [dataclasses.asdict(item) for item in items]

    return json.loads(json.dumps({
        "title": report.title, "front_matter_error": report.front_matter_error, "sections": plain(report.sections),
        "sources": [dataclasses.asdict(row) | {"revision": row.revision} for row in report.sources],
        "mappings": plain(report.mappings), "amendments": plain(report.amendments),
        "quotations": plain(report.quotations), "ranges": plain(report.ranges),
    }, default=str))


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: p.name[:3])
def test_a_seeds_parser_output_is_the_asdict_of_its_items(path):
    report = parse_report_strict(path.read_text())
    assert parsed_json(report) == asdict_of_every_item(report)


LINES = ["# Report", "## Shared records", "## Sources", "| Source | Revision | Kind |", "| --- | --- | --- |",
         "| SRC-1 | abc123 | repository |", "Mappings: RT-OBJ-a → OBJ-1; MEM-OBJ-b → no record here.",
         "Amendment: RT-OBJ-a is OBJ-1.", "Unresolved conflict: MEM-OBJ-b and OBJ-2", "> quoted line",
         "> --- `src/a.py:1-3` @ `abc123`", "See RTE-1..3 and SRC-1–2.", "#### MEM-OBJ-store — Store", "", "text"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=20))
def test_a_generated_reports_parser_output_is_the_asdict_of_its_items(lines):
    report = parse_report_strict("\n".join(lines) + "\n")
    assert parsed_json(report) == asdict_of_every_item(report)

"""Limits a parsed report must keep to be stored (pure: a ParsedReport in, problems out).

Record IDs are stored in columns of MAX_ID_LENGTH characters (records, findings,
mappings, canonical records). A report that declares, annotates or names a longer
ID is refused as a whole at parse time, naming the first such ID and its line,
rather than failing inside the database.
"""
from __future__ import annotations

from collections.abc import Iterator

from records.document import ParsedReport

MAX_ID_LENGTH = 120


def _ids(report: ParsedReport) -> Iterator[tuple[int, str]]:
    for declaration in report.declarations:
        yield declaration.line_start, declaration.record_id
        yield from ((ref.line, ref.record_id) for ref in declaration.references)
        yield from ((declaration.line_start, part) for part in declaration.part_of)
    for annotation in report.annotations:
        yield annotation.line_start, annotation.target
        yield from ((ref.line, ref.record_id) for ref in annotation.references)
    for issue in report.integration_issues:
        yield from ((issue.line, ref) for ref in issue.references)
    for statement in report.mappings:
        yield statement.line, statement.source
        yield statement.line, statement.target
    for amendment in report.amendments:
        yield from ((amendment.line, ref) for ref in amendment.references)
    yield from ((ref.line, ref.record_id) for ref in report.references)


def overlong_id(report: ParsedReport) -> str | None:
    """A message naming the first ID longer than MAX_ID_LENGTH with its line, or None."""
    for line, record_id in _ids(report):
        if len(record_id) > MAX_ID_LENGTH:
            return (f"line {line}: the record ID {record_id[:40]}… is {len(record_id)} characters; "
                    f"IDs are at most {MAX_ID_LENGTH}")
    return None

"""References: the full record IDs a region or the whole report mentions, its ranges and its malformed tokens."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

from records import ids
from records.document import MalformedId, RangeReference, Reference

from .lines import ReportLines


def region_references(doc: ReportLines, s: int, e: int, own_id: str) -> Iterator[Reference]:
    """References in lines [s, e]; the first `own_id` on line s declares and is none."""
    for k in range(s, e + 1):
        if not doc.scannable(k):
            continue
        skip_first = k == s
        for match in doc.scan(k)[0]:
            if skip_first and match.record_id == own_id:
                skip_first = False
                continue
            yield Reference(match.record_id, k + 1)


def references(doc: ReportLines, declaration_leads: Sequence[tuple[int, str]]):
    """Every reference and range of the report; malformed tokens go to `doc.malformed`.

    `declaration_leads` holds (line, record ID) of each declaration's leading line.
    """
    decl_lines = dict(declaration_leads)
    own_bad = {k: record_id for k, record_id in decl_lines.items() if not ids.is_record_id(record_id)}
    found_refs = []
    ranges = []
    for k in range(doc.body_start, doc.n):
        if not doc.scannable(k):
            continue
        own = decl_lines.get(k)
        found_ids, found_ranges, found_malformed = doc.scan(k)
        for match in found_ids:
            if own is not None and match.record_id == own:
                own = None  # the defining occurrence is no reference
                continue
            found_refs.append(Reference(match.record_id, k + 1))
        for r in found_ranges:
            ranges.append(RangeReference(r.record_id, k + 1))
        for bad in found_malformed:
            if own_bad.get(k) == bad.record_id:
                own_bad.pop(k)  # the malformed declaration itself, already kept
                continue
            doc.malformed.append(MalformedId(bad.record_id, k + 1, False))
    return found_refs, ranges

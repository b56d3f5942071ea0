"""Small readers over a `ParsedReport` shared by the checks: the ID grammar (records.ids is the one
statement of it), titles, backticks, the front matter, and the prose lines outside quotations,
fences and the front matter.
"""
from __future__ import annotations

import functools
import re
import threading
import weakref

from records import ids
from records.document import ParsedReport

# ID grammar: records.ids is the one statement of it.


def is_record_id(value: str) -> bool:
    return ids.is_record_id(value)


def is_source_id(value: str) -> bool:
    return ids.is_source_id(value)


def split_id(record_id: str) -> tuple[str, str, str]:
    """(prefix, kind, name) of a well-formed record ID; ("", "", "") otherwise."""
    parsed = ids.parse_id(record_id)
    if parsed is None or parsed[1] == ids.SOURCE_KIND:
        return "", "", ""
    return parsed


def ids_in(text: str) -> list[str]:
    return [m.record_id for m in ids.find_ids(text) if is_record_id(m.record_id)]


# A full record ID inside a sentence pattern (no source IDs).
ID_PATTERN = r"(?<![A-Za-z0-9_\-])" + ids.RECORD_ID_RE.pattern.replace("?P<prefix>", "?:").replace(
    "?P<kind>", "?:"
).replace("?P<tail>", "?:") + r"(?![A-Za-z0-9_])"


# Small readers over a ParsedReport


def norm_title(title: str) -> str:
    title = title.strip().strip("#").strip()
    title = re.sub(r"^\d+\.\s*", "", title)
    return re.sub(r"\s+", " ", title.rstrip(":. ")).lower()


def strip_ticks(value: str) -> str:
    value = value.strip()
    while len(value) >= 2 and value[0] == "`" and value[-1] == "`":
        value = value[1:-1].strip()
    return value


def per_report(size: int = 16):
    """Memoise `fn(report)` by the report's identity for the last `size` reports, holding them weakly.

    A parsed report is frozen data, so what was computed for it stays true; validation asks several times
    per report. The entry does not keep the report alive (a 2 MB report's parse is about 13 MB, and
    records.parsed bounds what is kept): once it is gone its id may be reused, and the dead reference tells
    the entry apart from the new report's.
    """
    def decorate(fn):
        memo: dict[int, tuple[weakref.ref, object]] = {}
        lock = threading.Lock()

        @functools.wraps(fn)
        def cached(report: ParsedReport):
            entry = memo.get(id(report))
            if entry is not None and entry[0]() is report:
                return entry[1]
            value = fn(report)
            with lock:
                while len(memo) >= size:
                    memo.pop(next(iter(memo)), None)
                memo[id(report)] = (weakref.ref(report), value)
            return value
        return cached
    return decorate


@per_report()
def _lines_of(report: ParsedReport) -> tuple[frozenset[int], tuple[tuple[int, str], ...]]:
    """The report's excluded lines and its prose lines (number, text)."""
    excluded = frozenset(_compute_excluded_lines(report))
    prose = tuple((number, line) for number, line in enumerate(report.text.splitlines(), start=1)
                  if number not in excluded)
    return excluded, prose


def excluded_lines(report: ParsedReport) -> frozenset[int]:
    """Lines inside quotations, fences and the front matter: never scanned for prose rules."""
    return _lines_of(report)[0]


def _compute_excluded_lines(report: ParsedReport) -> set[int]:
    # Segments merge quotations into the declaration that holds them, so the
    # extents are rebuilt here from the quotations, `>` lines and fences.
    excluded: set[int] = set()
    for segment in report.segments:
        if segment.kind in ("quotation", "fence", "front_matter"):
            count = max(1, len(segment.text.splitlines()))
            excluded.update(range(segment.line, segment.line + count))
    for quotation in report.quotations:
        count = max(1, len(quotation.text.splitlines()))
        excluded.update(range(quotation.line, quotation.line + count + 1))  # body, then its anchor line
    fence = ""
    for number, line in enumerate(report.text.splitlines(), start=1):
        match = _FENCE_RE.match(line)
        if fence:
            excluded.add(number)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and not match.group(2).strip():
                fence = ""
        elif match:
            fence = match.group(1)
            excluded.add(number)
        elif _QUOTE_LINE_RE.match(line):
            excluded.add(number)
    return excluded


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_QUOTE_LINE_RE = re.compile(r"^ {0,3}>")


def prose_lines(report: ParsedReport) -> tuple[tuple[int, str], ...]:
    return _lines_of(report)[1]


def front_of(report: ParsedReport) -> dict:
    """The front matter as a mapping ({} when absent or not a mapping)."""
    return report.front_matter if isinstance(report.front_matter, dict) else {}

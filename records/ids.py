"""Record ID grammar (DESIGN §2).

A record ID is an optional analyst prefix (`RT-`, `MEM-`, `EPI-`), a kind
(`CMP`, `OBJ`, `RTE`, `CLM`, `ABS`, `BAP`) and a tail: a number or a slug of
one to three lower-case words joined by `-`, each word starting with a
letter. Sources are `SRC-n` and stay numbered.

Finding IDs in prose is deliberately strict about what surrounds them: an ID
never starts inside a longer token (`XCMP-1`, `foo-OBJ-1`) and a slug takes
the longest run of up to three words, so `RT-OBJ-store-backed` reads as one
ID even when an analyst meant `RT-OBJ-store` plus the word "backed". The
validator reports such a slug when it extends another declared ID.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

KINDS = ("CMP", "OBJ", "RTE", "CLM", "ABS", "BAP")
PREFIXES = ("RT", "MEM", "EPI")
SOURCE_KIND = "SRC"

GENERATION_BARE = "bare-numbered"
GENERATION_PREFIXED = "prefixed-numbered"
GENERATION_SLUG = "slug"

_KIND = "|".join(KINDS)
_PREFIX = "|".join(PREFIXES)
_WORD = r"[a-z][a-z0-9]*"
_SLUG = rf"{_WORD}(?:-{_WORD}){{0,2}}"

RECORD_ID_RE = re.compile(
    rf"(?:(?P<prefix>{_PREFIX})-)?(?P<kind>{_KIND})-(?P<tail>\d+|{_SLUG})"
)
SOURCE_ID_RE = re.compile(r"SRC-(?P<tail>\d+)")

# An ID must not continue a longer token on either side. A following `-` is
# allowed (`OBJ-1–OBJ-3`, `RTE-1-3`, prose like `RT-OBJ-store-backed` beyond
# three slug words) and handled by the range scanner.
_BEFORE = r"(?<![A-Za-z0-9_\-])"
_AFTER = r"(?![A-Za-z0-9_])"

ID_IN_TEXT_RE = re.compile(
    _BEFORE
    + rf"(?:(?:(?:{_PREFIX})-)?(?:{_KIND})-(?:\d+|{_SLUG})|SRC-\d+)"
    + _AFTER
)

# Range notations: a numbered ID followed by `..`, an en/em dash or a hyphen
# and a bare number (`RTE-1..3`, `RTE-1–3`, `SRC-1–3`, `RTE-1-3`), or `..`
# and another full ID (`RTE-1..RTE-3`). A dash between two full IDs
# (`OBJ-1–OBJ-3`) is punctuation, not a range.
_NUMBERED = rf"(?:(?:(?:{_PREFIX})-)?(?:{_KIND})|SRC)-\d+"
RANGE_RE = re.compile(
    _BEFORE
    + rf"(?P<start>{_NUMBERED})"
    + rf"(?:(?:\.\.)(?P<end_id>{_NUMBERED}|\d+)|[\-\u2013\u2014](?P<end>\d+))"
    + _AFTER
)


@dataclass(frozen=True)
class IdMatch:
    record_id: str
    start: int
    end: int


def parse_id(s: str) -> tuple[str, str, str] | None:
    """Split a full ID into (prefix, kind, tail); None when `s` is not one.

    `SRC-n` parses as ("", "SRC", "n").
    """
    if not isinstance(s, str):
        return None
    m = RECORD_ID_RE.fullmatch(s)
    if m:
        return (m.group("prefix") or "", m.group("kind"), m.group("tail"))
    m = SOURCE_ID_RE.fullmatch(s)
    if m:
        return ("", SOURCE_KIND, m.group("tail"))
    return None


def is_valid_id(s: str) -> bool:
    return parse_id(s) is not None


def is_record_id(s: str) -> bool:
    """A record ID proper (not a source ID)."""
    parsed = parse_id(s)
    return parsed is not None and parsed[1] != SOURCE_KIND


def is_source_id(s: str) -> bool:
    parsed = parse_id(s)
    return parsed is not None and parsed[1] == SOURCE_KIND


def is_numbered(s: str) -> bool:
    parsed = parse_id(s)
    return parsed is not None and parsed[2].isdigit()


def is_slug(s: str) -> bool:
    parsed = parse_id(s)
    return parsed is not None and not parsed[2].isdigit()


def find_ranges(text: str) -> list[IdMatch]:
    """Every range notation in `text`, as written (never expanded)."""
    return [IdMatch(m.group(0), m.start(), m.end()) for m in RANGE_RE.finditer(text)]


def find_ids(text: str, *, skip_ranges: bool = True) -> list[IdMatch]:
    """Every full ID mentioned in `text`, in order of appearance.

    With `skip_ranges`, IDs that are part of a range notation are left out:
    a range is reported on its own and names no record in full.
    """
    matches = [IdMatch(m.group(0), m.start(), m.end()) for m in ID_IN_TEXT_RE.finditer(text)]
    if not skip_ranges or not matches:
        return matches
    ranges = find_ranges(text)
    if not ranges:
        return matches
    return [
        m for m in matches
        if not any(r.start <= m.start < r.end for r in ranges)
    ]


def unique_ids(text: str) -> tuple[str, ...]:
    """The full IDs `text` names, in order, without duplicates."""
    seen: dict[str, None] = {}
    for m in find_ids(text):
        seen.setdefault(m.record_id, None)
    return tuple(seen)


def generation_of(ids: Iterable[str]) -> str:
    """Generation from ID shapes: slug if any slug ID, prefixed-numbered if
    any prefixed numbered ID, else bare-numbered. Source IDs are ignored;
    with no record IDs at all the current (slug) form is assumed."""
    saw_any = False
    saw_prefixed = False
    for record_id in ids:
        parsed = parse_id(record_id)
        if parsed is None or parsed[1] == SOURCE_KIND:
            continue
        saw_any = True
        prefix, _kind, tail = parsed
        if not tail.isdigit():
            return GENERATION_SLUG
        if prefix:
            saw_prefixed = True
    if not saw_any:
        return GENERATION_SLUG
    return GENERATION_PREFIXED if saw_prefixed else GENERATION_BARE

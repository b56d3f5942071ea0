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

Malformed IDs are refused whole (DESIGN §6). A token shaped like a record ID
(a known kind, or a known analyst prefix before an upper-case kind) that
breaks the grammar -- a slug of four or more words, an upper-case letter,
an unknown kind or prefix, an empty slug word -- is found by
`find_malformed` as the whole token, and `find_ids` never reads the valid
ID it starts with (`MEM-OBJ-tag-to-note-map` is not `MEM-OBJ-tag-to-note`).
Three shapes stay ordinary prose: a range (`RTE-1-3`, reported as a range),
a dash between two full IDs (`RT-RTE-1-RT-RTE-4`), and a numbered ID joined
to a lower-case word (`CMP-1-configured`), which can only mean the ID and a
word since a number never continues with one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

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


# A token shaped like a record ID: an optional prefix-like word, a kind-like
# word and a tail of `-`-joined words (possibly empty), stopping before a
# `-` that starts another full ID. Classified by `classify_token`.
_ANY_WORD = r"[A-Za-z0-9_]"
TOKEN_RE = re.compile(
    _BEFORE
    + rf"(?:[A-Z]{{2,4}}-)?[A-Z][A-Za-z]{{1,7}}-{_ANY_WORD}+"
    + rf"(?:-(?!(?:(?:{_PREFIX})-)?(?:{_KIND})-){_ANY_WORD}*)*"
)
# The non-capturing form for building line patterns elsewhere (the parser's leads).
TOKEN_PATTERN = TOKEN_RE.pattern

VALID = "valid"
COMPOUND = "compound"  # a numbered ID joined to lower-case words: the ID and a word
MALFORMED = "malformed"
NOT_AN_ID = "not-an-id"

_COMPOUND_RE = re.compile(rf"(?:(?:{_PREFIX})-)?(?:{_KIND})-\d+(?:-[a-z][a-z]*)+")


def classify_token(token: str) -> str:
    """VALID, COMPOUND, MALFORMED or NOT_AN_ID for one `TOKEN_RE` match."""
    if RECORD_ID_RE.fullmatch(token) or SOURCE_ID_RE.fullmatch(token):
        return VALID
    parts = token.split("-")
    if parts[0] in KINDS:
        prefix, kind = "", parts[0]
    elif len(parts) > 2 and parts[1] in KINDS + (SOURCE_KIND,) and re.fullmatch(r"[A-Z]{2,4}", parts[0]):
        prefix, kind = parts[0], parts[1]
    elif parts[0] in PREFIXES and len(parts) > 2 and re.fullmatch(r"[A-Z][A-Za-z]{1,7}", parts[1]):
        return MALFORMED  # a known prefix before an unknown kind
    else:
        return NOT_AN_ID  # SHA-256, UTF-8, GPT-4o-mini: no record kind, no analyst prefix
    tail = parts[2:] if prefix else parts[1:]
    if (kind == SOURCE_KIND and not prefix) or not any(tail):
        return NOT_AN_ID  # `MEM-OBJ-…`: a pattern, no ID written
    if _COMPOUND_RE.fullmatch(token):
        return COMPOUND
    return MALFORMED


def malformed_reason(token: str) -> str:
    """What breaks the grammar in a malformed token, in plain words."""
    parts = token.split("-")
    if parts[0] in KINDS:
        prefix, kind, tail = "", parts[0], parts[1:]
    else:
        prefix, kind, tail = parts[0], parts[1] if len(parts) > 1 else "", parts[2:]
    if prefix and prefix not in PREFIXES:
        return f"an unknown analyst prefix {prefix}- (use RT-, MEM-, EPI- or none)"
    if kind not in KINDS:
        return f"an unknown kind {kind} (use {', '.join(KINDS)})"
    if any(word == "" for word in tail):
        return "an empty slug word (two dashes in a row, or a trailing dash)"
    if any(ch.isupper() for word in tail for ch in word):
        return "an upper-case letter in its name (slug words are lower-case)"
    if len(tail) > 3:
        return f"a slug of four or more words ({len(tail)}; at most three)"
    return "a name that is neither a number nor one to three lower-case words each starting with a letter"


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


def find_ranges(text: str, start: int = 0) -> list[IdMatch]:
    """Every range notation in `text` (from `start` on), as written (never expanded)."""
    return [IdMatch(m.group(0), m.start(), m.end()) for m in RANGE_RE.finditer(text, start)]


def find_malformed(text: str) -> list[IdMatch]:
    """Every token shaped like a record ID that breaks the grammar, whole.

    Ranges are left to `find_ranges`."""
    found = []
    ranges = None
    for m in TOKEN_RE.finditer(text):
        if classify_token(m.group(0)) != MALFORMED:
            continue
        if ranges is None:
            ranges = find_ranges(text)
        if any(r.start <= m.start() < r.end for r in ranges):
            continue
        found.append(IdMatch(m.group(0), m.start(), m.end()))
    return found


def find_ids(text: str, *, skip_ranges: bool = True) -> list[IdMatch]:
    """Every full ID mentioned in `text`, in order of appearance.

    With `skip_ranges`, IDs that are part of a range notation are left out:
    a range is reported on its own and names no record in full. An ID that
    begins a malformed token is never found: the token is not that ID.
    """
    matches = [IdMatch(m.group(0), m.start(), m.end()) for m in ID_IN_TEXT_RE.finditer(text)]
    if not matches:
        return matches
    malformed = find_malformed(text)
    if malformed:
        matches = [m for m in matches if not any(b.start <= m.start < b.end for b in malformed)]
    if not skip_ranges:
        return matches
    ranges = find_ranges(text)
    if not ranges:
        return matches
    return [
        m for m in matches
        if not any(r.start <= m.start < r.end for r in ranges)
    ]


# What `scan` looks for first, each a pattern led by a character class (which the regex engine skips to
# directly, where the three patterns' lookbehinds are tried at every position): where an ID, a range or
# an ID-shaped token can start (each begins with a word of capitals and a `-`: `RT-`, `CMP-`, `Cmp-`),
# and the digit and `..` or dash and digit that every range holds.
_CANDIDATE_RE = re.compile(r"[A-Z][A-Za-z]{1,7}-")
_RANGE_HINT_RE = re.compile(r"\d(?:\.\.|[\-\u2013\u2014]\d)")


def tokens(text: str, pos: int = 0) -> Iterator[re.Match]:
    """`TOKEN_RE.finditer(text, pos)`, the same matches, tried only where `_CANDIDATE_RE` matches: every
    token starts with a word of capitals and a `-` (its prefix's or its own), and TOKEN_RE's leading
    lookbehind made its search try every character of a line (45 of a 2 MB report's 73 ms of scans)."""
    while (candidate := _CANDIDATE_RE.search(text, pos)) is not None:
        if (m := TOKEN_RE.match(text, candidate.start())) is not None:
            yield m
            pos = m.end()
        else:
            pos = candidate.start() + 1


def scan(text: str) -> tuple[list[IdMatch], list[IdMatch], list[IdMatch]]:
    """`(find_ids(text), find_ranges(text), find_malformed(text))`, each pattern run over `text` once.

    The parser asks all three of every line; apart they scan a line up to five
    times. Every ID, range and ID-shaped token holds a `-`, so a text without
    one holds none of them.
    """
    if "-" not in text:
        return [], [], []
    first = _CANDIDATE_RE.search(text)
    if first is None:
        return [], [], []
    # No match of the three starts before `start` (their lookbehinds still see the text before it).
    start = first.start()
    ranges = find_ranges(text, start) if _RANGE_HINT_RE.search(text, start) else []
    malformed, matches = [], []
    for m in tokens(text, start):
        # An ID is token-shaped and starts where no token char precedes it, as a token does: so every ID
        # starts a token (inside one a token char precedes it), and ends within it.
        if (found := ID_IN_TEXT_RE.match(text, m.start())) is not None:
            matches.append(IdMatch(found.group(0), found.start(), found.end()))
        if classify_token(m.group(0)) == MALFORMED and not any(r.start <= m.start() < r.end for r in ranges):
            malformed.append(IdMatch(m.group(0), m.start(), m.end()))
    if matches and malformed:
        matches = [m for m in matches if not any(b.start <= m.start < b.end for b in malformed)]
    if matches and ranges:
        matches = [m for m in matches if not any(r.start <= m.start < r.end for r in ranges)]
    return matches, ranges, malformed


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

"""Look-alike IDs and invisible controls, in every generation (DESIGN §6): a token shaped like a record ID
that mixes scripts (`СMP-1` with a Cyrillic С) or carries an invisible or bidirectional control is an
error naming the character and its column; such characters elsewhere in a heading or label warn.

Scripts come from `unicodedata` names. Which letters imitate Latin ones is this module's own short table
(the Cyrillic and Greek capitals and small letters drawn like the Latin letters IDs use), written from the
Unicode code charts; it is no copy of Unicode's confusables.txt, which maps far more than IDs need.
"""
from __future__ import annotations

import re
import unicodedata

from records import ids
from records.document import ParsedReport

from .findings import ERROR, WARNING, Collector
from .reading import prose_lines

CONTROLS = frozenset(
    [chr(c) for c in range(0x200B, 0x2010)] + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
)
LATIN_LOOKALIKES = {
    # Cyrillic
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "Х": "X", "У": "Y", "Ѕ": "S", "І": "I", "Ј": "J", "Ԛ": "Q", "Ԝ": "W",
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j",
    "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w", "ь": "b",
    # Greek
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "ο": "o", "ν": "v", "ι": "i",
}
_CONTROL_CLASS = "".join(sorted(CONTROLS))
# A run of letters, digits, hyphens and controls: the widest thing that could be meant as an ID.
_CANDIDATE_RE = re.compile(rf"[\w{_CONTROL_CLASS}-]+")
_HEADING_OR_LABEL_RE = re.compile(r"^(?: {0,3}#{1,6}[ \t]|[ \t]*(?:[-*+][ \t]+)?(?:\*\*)?Label(?:\*\*)?:)")


def describe(ch: str) -> str:
    """`U+0421 CYRILLIC CAPITAL LETTER ES`."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'UNNAMED CHARACTER')}"


def imitated_id(token: str) -> str:
    """The record or source ID `token` imitates once look-alikes read as Latin and controls are removed;
    "" when it imitates none or is itself plain ASCII."""
    if token.isascii():
        return ""
    skeleton = "".join(LATIN_LOOKALIKES.get(ch, ch) for ch in token if ch not in CONTROLS)
    if not skeleton.isascii():
        return ""
    return skeleton if ids.is_record_id(skeleton) or ids.is_source_id(skeleton) else ""


# A non-ASCII letter or digit, or a control: what a candidate needs to imitate an ID (`imitated_id` reads
# a plain ASCII token as none). Prose with only dashes and quotation marks beyond ASCII has no such token.
_IMITATING_RE = re.compile(rf"[^\W\x00-\x7f]|[{_CONTROL_CLASS}]")


def check_lookalikes(out: Collector, report: ParsedReport) -> None:
    for number, line in prose_lines(report):
        if line.isascii():
            continue
        in_ids: set[int] = set()
        if _IMITATING_RE.search(line) is None:  # no token here imitates an ID
            if _HEADING_OR_LABEL_RE.match(line):
                _warn_in_text(out, line, number, in_ids)
            continue
        for m in _CANDIDATE_RE.finditer(line):
            token = m.group(0).strip("-")
            start = m.start() + m.group(0).index(token) if token else m.start()
            imitated = imitated_id(token)
            if not imitated:
                continue
            in_ids.update(range(start, start + len(token)))
            for offset, ch in enumerate(token):
                column = start + offset + 1
                if ch in CONTROLS:
                    out.add("bidi-control", ERROR,
                            f"\"{imitated}\" carries {describe(ch)} at column {column}; an invisible or bidirectional "
                            "control can hide or reorder an ID: delete it.",
                            record_id=imitated, line=number)
                elif not ch.isascii():
                    out.add("confusable-id", ERROR,
                            f"The token at column {start + 1} looks like {imitated} but its {describe(ch)} at column "
                            f"{column} is not the Latin letter {LATIN_LOOKALIKES.get(ch, '')}; write the ID in ASCII.",
                            record_id=imitated, line=number)
        if _HEADING_OR_LABEL_RE.match(line):
            _warn_in_text(out, line, number, in_ids)


def _warn_in_text(out: Collector, line: str, number: int, in_ids: set[int]) -> None:
    """Controls, and letters mixing scripts within one word, in a heading or label outside any ID."""
    for index, ch in enumerate(line):
        if index not in in_ids and ch in CONTROLS:
            out.add("suspicious-character", WARNING,
                    f"This heading or label carries {describe(ch)} at column {index + 1}; it can reorder the text "
                    "around it: delete it.", line=number)
    for m in re.finditer(r"\w+", line):
        if m.start() in in_ids:
            continue
        word = m.group(0)
        scripts = {unicodedata.name(ch, "").split(" ")[0] for ch in word if ch.isalpha()}
        if "LATIN" in scripts and len(scripts) > 1:
            odd = next(ch for ch in word if ch.isalpha() and not unicodedata.name(ch, "").startswith("LATIN"))
            out.add("suspicious-character", WARNING,
                    f"\"{word}\" mixes scripts: {describe(odd)} at column {m.start() + word.index(odd) + 1}; "
                    "write it in one script.", line=number)

"""Word-level differences between two texts, for the side-by-side page (pure: no ORM).

`diff_words(old, new)` returns `(op, text)` tokens with op one of "equal",
"delete" (only in `old`) and "insert" (only in `new`). Joining the text of
the "equal" and "delete" tokens gives back `old` exactly; joining "equal"
and "insert" gives back `new`. Whitespace travels with the words, so the
page can render the tokens in order, escaping each.
"""
from __future__ import annotations

import re
from difflib import SequenceMatcher

EQUAL, DELETE, INSERT = "equal", "delete", "insert"

# Words, runs of whitespace, and single punctuation marks are the units compared.
_TOKEN_RE = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)

# Beyond this many tokens a side, difflib's quadratic worst case is not worth it:
# the two texts are shown as one deletion and one insertion.
MAX_TOKENS = 5000


def tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text)


def _merge(ops: list[tuple[str, str]]) -> list[tuple[str, str]]:
    merged: list[tuple[str, str]] = []
    for op, text in ops:
        if not text:
            continue
        if merged and merged[-1][0] == op:
            merged[-1] = (op, merged[-1][1] + text)
        else:
            merged.append((op, text))
    return merged


def diff_words(old: str, new: str) -> list[tuple[str, str]]:
    """Tokens that turn `old` into `new`, adjacent tokens of one op merged."""
    a, b = tokens(old), tokens(new)
    if len(a) > MAX_TOKENS or len(b) > MAX_TOKENS:
        return [(EQUAL, old)] if old == new else _merge([(DELETE, old), (INSERT, new)])
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    ops: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            ops.append((EQUAL, "".join(a[i1:i2])))
        else:
            ops.append((DELETE, "".join(a[i1:i2])))
            ops.append((INSERT, "".join(b[j1:j2])))
    return _merge(ops)


def similarity(old: str, new: str) -> float:
    """Share of the two texts' tokens that are equal (0..1), for a "how different" hint."""
    a, b = tokens(old), tokens(new)
    if not a and not b:
        return 1.0
    if len(a) > MAX_TOKENS or len(b) > MAX_TOKENS:
        return 1.0 if old == new else 0.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()

"""Fenced code in Markdown: which lines of a text lie outside it (CommonMark: a fence of three or more
backticks or tildes, closed by one of the same character at least as long; the fence lines themselves
are inside). Headings, statements and marks are read only there."""
from __future__ import annotations

import re
from collections.abc import Iterator

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def outside_fences(lines: list[str]) -> Iterator[tuple[int, str]]:
    """(index, line) of each line outside fenced code, in order."""
    fence = ""
    for index, line in enumerate(lines):
        opened = FENCE.match(line)
        if fence:
            if opened and opened[1][0] == fence[0] and len(opened[1]) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened[1]
            continue
        yield index, line

"""A report's lines and what the parser has learnt about each: the state every pass reads and marks.

The passes (`headings`, `quotations`, `leads`, `references`, `tables`, `statements`) are
functions of one `ReportLines`; `report.parse` runs them in order. Line indexes are 0-based.
"""
from __future__ import annotations

from dataclasses import dataclass

from records import ids
from records.document import MalformedId


@dataclass
class Anchor:
    """A quotation anchor (`--- path @ commit`) found on one line."""

    line: int
    before: str  # the line's text before the anchor
    path: str
    commit: str


class ReportLines:
    def __init__(self, text: str) -> None:
        self.text = text
        pieces = text.split("\n")
        raw = [p + "\n" for p in pieces[:-1]]
        if pieces[-1]:
            raw.append(pieces[-1])
        self.raw: list[str] = raw
        self.lines: list[str] = [r.rstrip("\n").rstrip("\r") for r in raw]
        n = len(self.lines)
        self.n = n
        self.kind: list[str] = ["text"] * n
        self.heading_level: list[int] = [0] * n
        self.heading_title: list[str] = [""] * n
        self.in_quote = [False] * n  # Markdown `>` block or plain quotation extent
        self.has_md_headings = False
        self.anchors: dict[int, Anchor] = {}
        self.plain_quote_start: dict[int, int] = {}  # anchor line → first line of its plain quotation
        self.front_matter: dict = {}
        self.front_matter_error = ""
        self.body_start = 0
        self.malformed: list[MalformedId] = []
        self._scans: dict[int, tuple] = {}  # line index → ids.scan of that line (lines never change)

    def is_blank(self, i: int) -> bool:
        return 0 <= i < self.n and self.kind[i] == "blank"

    def isolated(self, i: int) -> bool:
        before = i == self.body_start or self.is_blank(i - 1) or (i > 0 and self.kind[i - 1] == "front_matter")
        after = i == self.n - 1 or self.is_blank(i + 1)
        return before and after

    def mark_heading(self, i: int, level: int, title: str) -> None:
        self.kind[i] = "heading"
        self.heading_level[i] = level
        self.heading_title[i] = title

    def first_content_line(self) -> int:
        for i in range(self.body_start, self.n):
            if self.kind[i] != "blank":
                return i
        return -1

    def scannable(self, k: int) -> bool:
        """Whether line k may hold references: quotations, fences and front matter never do."""
        return not self.in_quote[k] and self.kind[k] not in ("fence", "quote", "quotation", "front_matter")

    def scan(self, k: int) -> tuple:
        """The IDs, ranges and malformed tokens of line k, found once per parse."""
        found = self._scans.get(k)
        if found is None:
            found = self._scans[k] = ids.scan(self.lines[k])
        return found

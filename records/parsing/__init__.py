"""Parse one member report into plain data (`records.document`).

The parser is line based and reads both forms a report comes in (DESIGN §1):

- plain-text renderings (the seeds): headings are bare lines ("Shared
  records", "Routes"), declarations start a line with their ID
  (`CMP-1 — label…`) or hold only an ID followed by a `Label:` line,
  bullets are `• `, tables are tab-separated, quotations end with
  ` --- path @ commit` or ` --- path`;
- Markdown: front matter, `#` headings, `#### ID — Label` declarations,
  `#### On ID — Label` annotations, `- ` bullets, pipe tables, `> `
  quotation blocks ending `> --- `path` @ `commit``, fenced code.

A document may mix the two. The parser never raises and never loses text:
the segments it returns concatenate to the exact input.

The package, by concern: `grammar` (vocabulary and line patterns), `lines`
(the state each pass reads and marks), `headings` (front matter, blocks,
headings and sections), `quotations`, `leads` (declarations, annotations,
their regions and fields), `references`, `tables` (tables, the Source
register, integration issues), `statements` (mapping statements and
amendments) and `report` (the passes in order, and the segments).
"""
from __future__ import annotations

from .report import parse_report, parse_report_strict

__all__ = ["parse_report", "parse_report_strict"]

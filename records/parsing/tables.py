"""Tables (pipe or tab-separated) and what is read from them and from lists: the Source register and the integration issues."""
from __future__ import annotations

import re

from records import ids
from records.document import IntegrationIssue, Section, SourceRow

from .grammar import BULLET_RE, NONE_RE
from .headings import norm
from .lines import ReportLines


def tables(doc: ReportLines, start: int = 0, end: int | None = None):
    """Yield tables as lists of (line index, cells) within [start, end]."""
    end = doc.n - 1 if end is None else end
    k = max(start, doc.body_start)
    while k <= end:
        if doc.kind[k] != "table" or doc.in_quote[k]:
            k += 1
            continue
        rows = []
        while k <= end and doc.kind[k] == "table" and not doc.in_quote[k]:
            cells = split_row(doc.lines[k])
            if not is_separator(cells):
                rows.append((k, cells))
            k += 1
        if rows:
            yield rows


def sources(doc: ReportLines, found_sections: list[Section]) -> list[SourceRow]:
    result = []
    seen_lines = set()
    for section in found_sections:
        if norm(section.title) != "source register":
            continue
        for rows in tables(doc, section.line_start - 1, section.line_end - 1):
            header = [strip_cell(c) for c in rows[0][1]]
            for k, cells in rows[1:]:
                first = strip_cell(cells[0]) if cells else ""
                if not ids.is_source_id(first) or k in seen_lines:
                    continue
                seen_lines.add(k)
                columns = tuple(
                    (header[pos] if pos < len(header) else "", cell.strip())
                    for pos, cell in enumerate(cells)
                )
                result.append(SourceRow(first, columns, k + 1))
    return result


def integration_issues(doc: ReportLines, found_sections: list[Section]) -> list[IntegrationIssue]:
    for section in found_sections:
        if norm(section.title) == "integration issues":
            return issues_in(doc, section.line_start, section.line_end - 1)
    return []


def issues_in(doc: ReportLines, start: int, end: int) -> list[IntegrationIssue]:
    """The bullets (or, without any bullet, the paragraphs) of lines [start, end], 0-based, inclusive."""
    items: list[tuple[int, list[str]]] = []
    current: list[str] | None = None
    saw_bullet = False
    for k in range(start, end + 1):
        kind = doc.kind[k]
        line = doc.lines[k]
        if kind in ("fence", "heading") or doc.kind[k] == "quote":
            current = None
            continue
        if kind == "blank":
            current = None
            continue
        m = BULLET_RE.match(line)
        if m and not doc.in_quote[k]:
            saw_bullet = True
            current = [line[m.end():].strip()]
            items.append((k, current))
        elif current is not None and kind in ("text", "quotation"):
            current.append(line.strip())
        elif current is None and items and line[:1] in (" ", "\t") and saw_bullet:
            items[-1][1].append(line.strip())
    if not saw_bullet:
        items = []
        for k in range(start, end + 1):
            if doc.kind[k] not in ("text", "quotation") or not doc.lines[k].strip():
                continue
            stripped = doc.lines[k].strip()
            if NONE_RE.match(stripped) and len(stripped) < 60:
                continue
            items.append((k, [stripped]))
    issues = []
    for index, (k, parts) in enumerate(items, start=1):
        text = "\n".join(p for p in parts if p)
        issues.append(IntegrationIssue(index, text, k + 1, ids.unique_ids(text)))
    return issues


def split_row(line: str) -> list[str]:
    stripped = line.strip()
    if "\t" in stripped and not stripped.startswith("|"):
        return [c.strip() for c in stripped.split("\t")]
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|") and not stripped.endswith("\\|"):
        stripped = stripped[:-1]
    cells = []
    buf = []
    in_code = False
    escaped = False
    for ch in stripped:
        if escaped:
            buf.append(ch)
            escaped = False
            continue
        if ch == "\\":
            buf.append(ch)
            escaped = True
            continue
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append("".join(buf).strip())
            buf = []
            continue
        buf.append(ch)
    cells.append("".join(buf).strip())
    return cells


def is_separator(cells: list[str]) -> bool:
    return bool(cells) and all(re.fullmatch(r":?-{1,}:?", c.strip()) for c in cells if c.strip()) and any(
        c.strip() for c in cells
    )


def strip_cell(cell: str) -> str:
    return cell.strip().strip("`*_ ").strip()

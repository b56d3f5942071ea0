"""Quotations: their anchors (`--- path @ commit`), the extent of plain-text quotations, and the quoted bodies."""
from __future__ import annotations

from collections.abc import Collection

from records.document import Quotation

from .grammar import ANCHOR_LINES_RE, ANCHOR_RE, QUOTE_PREFIX_RE
from .lines import Anchor, ReportLines


def find_anchors(doc: ReportLines) -> None:
    for i in range(doc.body_start, doc.n):
        kind = doc.kind[i]
        if kind == "quote":
            content = QUOTE_PREFIX_RE.sub("", doc.lines[i], count=1)
        elif kind in ("text", "table"):
            content = doc.lines[i]
        else:
            continue
        m = ANCHOR_RE.search(content) if may_anchor(content) else None
        if not m or not looks_like_path(m.group("path")):
            continue
        doc.anchors[i] = Anchor(
            line=i,
            before=content[: m.start()].rstrip(),
            path=m.group("path"),
            commit=m.group("commit") or "",
        )


def may_anchor(content: str) -> bool:
    """Whether `content` holds the `---` every anchor has: a substring found at once, where ANCHOR_RE is
    tried at every position."""
    return "---" in content


def mark_plain_quotations(doc: ReportLines, lead_lines: Collection[int]) -> None:
    """Mark the extent of plain-text quotations (anchor outside `>` blocks).

    The body is the paragraph holding the anchor (or, for an anchor on its
    own line, the paragraph before it), extended backwards over preceding
    paragraphs that look like code: plain text keeps no quote markers, and
    quoted code is often split by blank lines. A declaration's leading line
    (`lead_lines`) is never quoted text.
    """

    def eligible(k: int) -> bool:
        return (
            0 <= k < doc.n
            and doc.kind[k] in ("text", "table")
            and not doc.in_quote[k]
            and k not in lead_lines
            and k not in doc.anchors
        )

    def paragraph_start(end: int) -> int:
        k = end
        while eligible(k - 1):
            k -= 1
        return k

    for a in sorted(doc.anchors):
        if doc.kind[a] == "quote":
            continue
        anchor = doc.anchors[a]
        if anchor.before:
            start = paragraph_start(a)
        else:
            k = a - 1
            while doc.is_blank(k):
                k -= 1
            start = paragraph_start(k) if eligible(k) else a
        while True:
            k = start - 1
            if not doc.is_blank(k):
                break  # only paragraphs separated by blank lines extend a quotation
            while doc.is_blank(k):
                k -= 1
            if not eligible(k):
                break
            p = paragraph_start(k)
            if not looks_like_code(doc.lines[p: k + 1]):
                break
            start = p
        for k in range(start, a + 1):
            doc.in_quote[k] = True
            if doc.kind[k] in ("text", "table", "blank"):
                doc.kind[k] = "quotation"
        doc.plain_quote_start[a] = start


def quotations(doc: ReportLines) -> list[Quotation]:
    result = []
    # Markdown blocks
    i = doc.body_start
    while i < doc.n:
        if doc.kind[i] != "quote":
            i += 1
            continue
        j = i
        while j + 1 < doc.n and doc.kind[j + 1] == "quote":
            j += 1
        anchor = doc.anchors.get(j)
        if anchor is not None:
            body_lines = [QUOTE_PREFIX_RE.sub("", doc.lines[k], count=1) for k in range(i, j)]
            if anchor.before:
                body_lines.append(anchor.before)
            result.append(quotation(body_lines, anchor, i))
        i = j + 1
    # Plain-text extents
    for a, start in doc.plain_quote_start.items():
        anchor = doc.anchors[a]
        body_lines = [doc.lines[k] for k in range(start, a)]
        if anchor.before:
            body_lines.append(anchor.before)
        result.append(quotation(body_lines, anchor, start))
    result.sort(key=lambda q: q.line)
    return result


def quotation(body_lines: list[str], anchor: Anchor, start: int) -> Quotation:
    body = "\n".join(body_lines).strip("\n")
    path, lines = anchor.path, ""
    m = ANCHOR_LINES_RE.match(path)
    if m:
        path, lines = m.group("path"), m.group("lines")
    return Quotation(text=body, path=path, lines=lines, commit=anchor.commit, line=start + 1)


def looks_like_path(path: str) -> bool:
    return bool(path) and ("/" in path or "." in path) and path.strip("./:") != "" and not path.startswith("-")


def looks_like_code(lines: list[str]) -> bool:
    if not lines:
        return False
    if any(line[:1] in (" ", "\t") for line in lines):
        return True
    first = lines[0].lstrip()
    return first[:1] in ("}", ")", "]") or first.startswith(("//", "/*"))

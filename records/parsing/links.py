"""The links form (DESIGN §1, §6): its citations `[ID](member.md#anchor)` and whether a report is written in
it (its mentions, the bare IDs, are `ParsedReport.mentions`)."""
from __future__ import annotations

from collections.abc import Sequence

from records.document import Declaration, RecordCitation

from .grammar import LABEL_LINE_RE, LINKS_FORM_TYPE_PREFIX, RECORD_LINK_RE
from .lines import ReportLines


def citations(doc: ReportLines) -> list[RecordCitation]:
    """Every link whose text is shaped like a record ID, outside quotations, fences and the front matter."""
    found = []
    for k in range(doc.body_start, doc.n):
        line = doc.lines[k]
        if "](" not in line or not doc.scannable(k):
            continue
        for m in RECORD_LINK_RE.finditer(line):
            found.append(RecordCitation(m.group("id"), m.group("member"), m.group("anchor") or "", k + 1,
                                        m.start() + 1, m.group(0)))
    return found


def is_links_form(doc: ReportLines, doc_type: str, declarations: Sequence[Declaration],
                  found_citations: Sequence[RecordCitation]) -> bool:
    """A report of the newest types that cites by link or declares `#### ID` with a `Label:` line."""
    if not doc_type.startswith(LINKS_FORM_TYPE_PREFIX):
        return False
    return bool(found_citations) or any(bare_heading_declaration(doc, d) for d in declarations)


def bare_heading_declaration(doc: ReportLines, declaration: Declaration) -> bool:
    """Whether a declaration is the links form's `#### ID` heading followed by a `Label:` line."""
    i = declaration.line_start - 1
    if declaration.form != "heading" or doc.heading_title[i].strip() != declaration.record_id:
        return False
    k = i + 1
    while doc.is_blank(k):
        k += 1
    return k < doc.n and bool(LABEL_LINE_RE.match(doc.lines[k]))

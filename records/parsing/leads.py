"""Declarations and annotations: their leading lines in every generation's form, their regions, bodies and fields."""
from __future__ import annotations

import re
from dataclasses import dataclass

from records import ids
from records.document import Annotation, Declaration, Field, MalformedId, Section

from .grammar import (
    ANNOTATION_RE,
    BOLD_DECL_RE,
    BOLD_ID_RE,
    DASH_BOLD_DECL_RE,
    FIELD_RE,
    ID_HEADING_RE,
    ID_ONLY_RE,
    LABEL_LINE_RE,
    LINE_DECL_RE,
    LINK_ANNOTATION_RE,
    inline_field_matches,
)
from .headings import is_md_heading, norm
from .lines import ReportLines
from .references import region_references
from .tables import is_separator, split_row, strip_cell


@dataclass
class Lead:
    """The line that opens a declaration or an annotation."""

    line: int  # 0-based
    kind: str  # "declaration" or "annotation"
    record_id: str
    label: str
    form: str
    level: int  # heading level; 0 when not a heading
    body_start: str = ""  # body text on the leading line, after the label


def shared_lines(doc: ReportLines, found_sections: list[Section]) -> list[bool]:
    shared = [False] * doc.n
    for s in found_sections:
        if norm(s.title) == "shared records":
            for k in range(s.line_start - 1, s.line_end):
                shared[k] = True
    return shared


def find_leads(doc: ReportLines, found_sections: list[Section], *, result: bool = False) -> list[Lead]:
    """Every declaration and annotation lead. Where Shared records declares by ID headings only a heading
    declares, except in a finished result (`result`): older results mixed `#### CMP-3 — Label` headings with
    paragraphs that start `CMP-1 — Label. …`, and both declare there (DESIGN §1)."""
    shared = shared_lines(doc, found_sections)
    heading_mode = not result and any(
        doc.kind[i] == "heading" and shared[i] and doc.heading_level[i] >= 2
        and lead_match(ID_HEADING_RE, doc.heading_title[i]) and is_md_heading(doc.lines[i])
        for i in range(doc.n)
    )
    leads: list[Lead] = []
    for i in range(doc.body_start, doc.n):
        kind = doc.kind[i]
        if i in doc.anchors or kind in ("fence", "quote", "front_matter", "blank"):
            continue
        line = doc.lines[i]
        if kind == "heading":
            title = doc.heading_title[i]
            m = ANNOTATION_RE.match(title) or LINK_ANNOTATION_RE.match(title)
            if m:
                label = clean_label(m.groupdict().get("label"))
                leads.append(Lead(i, "annotation", m.group("id"), label, "heading", doc.heading_level[i]))
                continue
            m = lead_match(ID_HEADING_RE, title)
            if m and shared[i] and is_md_heading(line):
                leads.append(Lead(i, "declaration", m.group("id"), clean_label(m.group("label")), "heading", doc.heading_level[i]))
            continue
        stripped = line.strip()
        m = ANNOTATION_RE.match(stripped)
        if m and kind == "text":
            leads.append(Lead(i, "annotation", m.group("id"), clean_label(m.group("label")), "line", 0))
            continue
        if heading_mode or not shared[i]:
            continue
        if kind == "table":
            lead = table_lead(doc, i)
            if lead:
                leads.append(lead)
            continue
        lead = line_lead(doc, i)
        if lead:
            leads.append(lead)
    return leads


def line_lead(doc: ReportLines, i: int) -> Lead | None:
    """A declaration led by line i of Shared records in one of the older line forms."""
    line = doc.lines[i]
    m = lead_match(BOLD_DECL_RE, line)
    if m:
        return Lead(i, "declaration", m.group("id"), clean_label(m.group("label")), "bold", 0, m.group("body"))
    m = lead_match(DASH_BOLD_DECL_RE, line)
    if m:
        return Lead(i, "declaration", m.group("id"), clean_label(m.group("label")), "bold", 0, m.group("body"))
    m = lead_match(BOLD_ID_RE, line)
    if m:
        body = m.group("body")
        label = first_sentence(body)
        return Lead(i, "declaration", m.group("id"), label, "bold", 0, body[len(label):])
    m = lead_match(ID_ONLY_RE, line)
    if m:
        k = i + 1
        while doc.is_blank(k):
            k += 1
        if k < doc.n and doc.kind[k] in ("text",) and LABEL_LINE_RE.match(doc.lines[k]):
            label = LABEL_LINE_RE.match(doc.lines[k]).group("value").strip()
            return Lead(i, "declaration", m.group("id"), label, "id-line", 0)
        return None
    m = lead_match(LINE_DECL_RE, line)
    if m:
        rest = m.group("rest")
        label = first_sentence(rest)
        return Lead(i, "declaration", m.group("id"), clean_label(label), "line", 0, rest[len(label):])
    return None


def table_lead(doc: ReportLines, i: int) -> Lead | None:
    # the first row of a table is its header; a separator row is no record
    if i == 0 or doc.kind[i - 1] != "table":
        return None
    cells = split_row(doc.lines[i])
    if not cells or is_separator(cells):
        return None
    first = strip_cell(cells[0])
    if not ids.is_record_id(first) and not (
        ids.TOKEN_RE.fullmatch(first) and ids.classify_token(first) == ids.MALFORMED
    ):
        return None
    label = strip_cell(cells[1]) if len(cells) > 1 else ""
    return Lead(i, "declaration", first, label, "table", 0, " | ".join(c.strip() for c in cells[2:]))


def regions(doc: ReportLines, leads: list[Lead]) -> list[tuple[int, int]]:
    found = []
    lead_lines = [lead.line for lead in leads]
    for pos, lead in enumerate(leads):
        s = lead.line
        if lead.form == "table":
            found.append((s, s))
            continue
        limit = lead_lines[pos + 1] - 1 if pos + 1 < len(leads) else doc.n - 1
        end = limit
        for j in range(s + 1, limit + 1):
            if doc.kind[j] == "heading":
                if lead.level == 0 or doc.heading_level[j] <= lead.level:
                    end = j - 1
                    break
        while end > s and doc.kind[end] == "blank":
            end -= 1
        found.append((s, end))
    return found


def records(doc: ReportLines, leads: list[Lead], found_regions: list[tuple[int, int]]):
    declarations = []
    annotations = []
    for lead, (s, e) in zip(leads, found_regions):
        text = "".join(doc.raw[s: e + 1])
        fields = tuple(region_fields(doc, s, e))
        refs = tuple(region_references(doc, s, e, lead.record_id))
        label = lead.label
        body = record_body(doc, lead, s, e)
        if lead.kind == "annotation":
            annotations.append(Annotation(
                target=lead.record_id, label=label, text=text, body=body,
                fields=fields, line_start=s + 1, line_end=e + 1, references=refs,
            ))
            continue
        if not label:
            for f in fields:
                if f.label.lower() == "label":
                    label = f.value
                    break
        if not ids.is_record_id(lead.record_id):
            doc.malformed.append(MalformedId(lead.record_id, s + 1, True))
            continue
        parsed = ids.parse_id(lead.record_id) or ("", "", "")
        declarations.append(Declaration(
            record_id=lead.record_id,
            kind=parsed[1],
            prefix=parsed[0],
            label=label,
            text=text,
            body=body,
            fields=fields,
            line_start=s + 1,
            line_end=e + 1,
            form=lead.form,
            references=refs,
            part_of=tuple(f.value for f in fields if f.label.strip().lower() == "part of"),
        ))
    return declarations, annotations


def record_body(doc: ReportLines, lead: Lead, s: int, e: int) -> str:
    rest_start = s + 1
    if lead.form == "id-line":
        k = s + 1
        while k <= e and doc.kind[k] == "blank":
            k += 1
        rest_start = k + 1  # skip the `Label:` line
    first = lead.body_start.lstrip(" \t.").rstrip()
    first = re.sub(r"^\*\*[ \t]*", "", first).strip()
    rest = "".join(doc.raw[rest_start: e + 1]).strip()
    if first and rest:
        return first + "\n" + rest
    return first or rest


def region_fields(doc: ReportLines, s: int, e: int):
    for k in range(s, e + 1):
        kind = doc.kind[k]
        if doc.in_quote[k] or kind in ("fence", "quote", "quotation", "heading", "blank", "table"):
            continue
        line = doc.lines[k]
        if k == s:
            # the leading line declares; only inline status/route labels count
            yield from inline_fields(line, k + 1, start=0)
            continue
        m = FIELD_RE.match(line) if may_hold_field(line) else None
        if m and plausible_label(m.group("label")):
            label = m.group("label").strip()
            value = (m.group("value") or "").strip()
            bullet = bool(m.group("bullet")) and m.group("indent") == ""
            if bullet or not has_inline_label(value):
                yield Field(label, value, k + 1, bullet)
            else:
                split = next(inline_field_matches(value, 1), None)
                head = value[: split.start()].strip() if split else value
                yield Field(label, head, k + 1, False)
                if split:
                    yield from inline_fields(value, k + 1, start=split.start())
            continue
        yield from inline_fields(line, k + 1, start=0)


def inline_fields(line: str, line_no: int, *, start: int):
    """Known route/status labels written inside prose (older generations).

    A label at the very start of a line is an ordinary field, read elsewhere.
    """
    if not may_hold_field(line):
        return
    matches = [m for m in inline_field_matches(line, start) if m.start() > 0]
    for pos, m in enumerate(matches):
        end = matches[pos + 1].start() if pos + 1 < len(matches) else len(line)
        value = line[m.end(): end].strip().rstrip(";").rstrip()
        yield Field(m.group("label").strip(), value, line_no, False)


def may_hold_field(line: str) -> bool:
    """Whether `line` has the colon every field label ends with (FIELD_RE, INLINE_FIELD_RE): found at once,
    where the patterns try label after label."""
    return ":" in line


def lead_match(pattern: re.Pattern, text: str) -> re.Match | None:
    """`pattern.match(text)` when its `id` group is a full ID or a malformed
    token (a declaration to report whole); None for a numbered ID joined to a
    word or a token that is no ID at all."""
    m = pattern.match(text)
    if m and ids.classify_token(m.group("id")) in (ids.VALID, ids.MALFORMED) and not ids.RANGE_RE.fullmatch(m.group("id")):
        return m  # a range (`RTE-1-3: …`) declares nothing and is reported as a range
    return None


def clean_label(label: str | None) -> str:
    if not label:
        return ""
    label = label.strip()
    label = re.sub(r"\*\*$", "", label).strip()
    return label.rstrip(".").strip()


def first_sentence(text: str) -> str:
    """Text up to and including the first sentence end (or all of it)."""
    m = re.search(r"[.!?](?=\s|$)", text)
    if not m:
        return text
    return text[: m.end()]


def plausible_label(label: str) -> bool:
    label = label.strip()
    if not label or len(label.split()) > 10:
        return False
    if label.lower().startswith(("http", "https", "file")):
        return False
    return not ids.ID_IN_TEXT_RE.search(label)


def has_inline_label(value: str) -> bool:
    return next(inline_field_matches(value, 1), None) is not None

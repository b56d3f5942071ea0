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

Plain text loses its heading markers, so a bare line counts as a heading
only when it is a known section title, or (in a document without any
Markdown heading, outside Shared records and Annotations) when it looks
like one: short, capitalised, no terminal punctuation, between blank lines.
A false heading would cut a declaration's region short, hence the caution.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import yaml

from records import ids
from records.document import (
    Amendment,
    Annotation,
    Declaration,
    Field,
    IntegrationIssue,
    MalformedId,
    MappingStatement,
    ParsedReport,
    Quotation,
    RangeReference,
    Reference,
    Section,
    Segment,
    SourceRow,
)

from .grammar import (
    AMENDMENT_RE,
    ANCHOR_LINES_RE,
    ANCHOR_RE,
    ANNOTATION_RE,
    BOLD_DECL_RE,
    BOLD_ID_RE,
    BULLET_RE,
    DASH_BOLD_DECL_RE,
    FENCE_OPEN_RE,
    FIELD_RE,
    ID_HEADING_RE,
    ID_ONLY_RE,
    INLINE_FIELD_RE,
    KIND_HEADINGS,
    LABEL_LINE_RE,
    LINE_DECL_RE,
    MAPPING_PAIR_RE,
    MAPPINGS_LABEL_RE,
    MD_HEADING_RE,
    NONE_RE,
    PIPE_ROW_RE,
    QUOTE_LINE_RE,
    QUOTE_PREFIX_RE,
    STATEMENT_START_RE,
    SUB_TITLES,
    TAB_ROW_RE,
    TOP_LEVEL_TITLES,
    TYPE_LINE_RE,
)


class _FrontMatterLoader(yaml.SafeLoader):
    """SafeLoader that keeps dates as strings, so front matter stays JSON-like."""


_FrontMatterLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


# --------------------------------------------------------------------------
# Public entry point


def parse_report(text: str) -> ParsedReport:
    """Parse a member report. Never raises; the result is lossless."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    try:
        return parse_report_strict(text)
    except Exception as exc:  # pragma: no cover - a parser bug must not lose the upload
        segments = (Segment("text", text, 1),) if text else ()
        return ParsedReport(
            text=text,
            segments=segments,
            front_matter_error=f"parser error: {type(exc).__name__}: {exc}",
        )


def parse_report_strict(text: str) -> ParsedReport:
    """`parse_report` without the safety net; tests use it to surface bugs."""
    return _Parser(text).parse()


# --------------------------------------------------------------------------
# Internals


@dataclass
class _Lead:
    line: int  # 0-based
    kind: str  # "declaration" or "annotation"
    record_id: str
    label: str
    form: str
    level: int  # heading level; 0 when not a heading
    body_start: str = ""  # body text on the leading line, after the label


@dataclass
class _Anchor:
    line: int
    before: str
    path: str
    commit: str


class _Parser:
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
        self.anchors: dict[int, _Anchor] = {}
        self.front_matter: dict = {}
        self.front_matter_error = ""
        self.body_start = 0
        self.malformed: list[MalformedId] = []
        self._scans: dict[int, tuple] = {}  # line index → ids.scan of that line (lines never change)

    # ------------------------------------------------------------------
    def parse(self) -> ParsedReport:
        self._front_matter()
        self._blocks()
        self._plain_headings()
        sections = self._sections()
        self._anchor_lines()
        leads = self._leads(sections)
        self._plain_quotations(leads)
        quotations = self._quotations()
        regions = self._regions(leads)
        declarations, annotations = self._records(leads, regions)
        references, ranges = self._references(leads)
        sources = self._sources(sections)
        issues = self._integration_issues(sections)
        mappings = self._mappings()
        amendments = self._amendments()
        segments = self._segments(regions, leads)
        title = self._title()
        doc_type = self._doc_type()
        shapes = [d.record_id for d in declarations] + [a.target for a in annotations]
        if not shapes:
            shapes = [r.record_id for r in references]
        return ParsedReport(
            text=self.text,
            segments=segments,
            front_matter=self.front_matter,
            front_matter_error=self.front_matter_error,
            title=title,
            doc_type=doc_type,
            generation=ids.generation_of(shapes),
            sections=tuple(sections),
            sources=tuple(sources),
            declarations=tuple(declarations),
            annotations=tuple(annotations),
            integration_issues=tuple(issues),
            mappings=tuple(mappings),
            amendments=tuple(amendments),
            quotations=tuple(quotations),
            references=tuple(references),
            ranges=tuple(ranges),
            malformed_ids=tuple(sorted(self.malformed, key=lambda m: (m.line, not m.declared))),
        )

    # ------------------------------------------------------------------
    # Front matter

    def _front_matter(self) -> None:
        if not self.lines or self.lines[0].lstrip("\ufeff").rstrip() != "---":
            return
        for j in range(1, self.n):
            if self.lines[j].rstrip() in ("---", "..."):
                break
        else:
            self.front_matter_error = "front matter opened with --- is never closed"
            return
        for i in range(0, j + 1):
            self.kind[i] = "front_matter"
        self.body_start = j + 1
        source = "\n".join(self.lines[1:j])
        data, error = _load_front_matter(source)
        self.front_matter = data
        self.front_matter_error = error

    # ------------------------------------------------------------------
    # Block structure: fences, headings, quotes, tables, blanks

    def _blocks(self) -> None:
        i = self.body_start
        lines = self.lines
        while i < self.n:
            line = lines[i]
            m = FENCE_OPEN_RE.match(line)
            if m and not (m.group(2)[0] == "`" and "`" in m.group(3)):
                marker = m.group(2)
                close = re.compile(r"^[ \t]*" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}[ \t]*$")
                j = i + 1
                while j < self.n and not close.match(lines[j]):
                    j += 1
                end = min(j, self.n - 1)
                for k in range(i, end + 1):
                    self.kind[k] = "fence"
                i = end + 1
                continue
            if not line.strip():
                self.kind[i] = "blank"
            elif QUOTE_LINE_RE.match(line):
                self.kind[i] = "quote"
                self.in_quote[i] = True
            else:
                hm = MD_HEADING_RE.match(line)
                if hm:
                    title = re.sub(r"(?:^|[ \t]+)#+$", "", hm.group(2) or "").strip()
                    self.kind[i] = "heading"
                    self.heading_level[i] = len(hm.group(1))
                    self.heading_title[i] = title
                elif PIPE_ROW_RE.match(line) or TAB_ROW_RE.search(line):
                    self.kind[i] = "table"
            i += 1
        self.has_md_headings = any(k == "heading" for k in self.kind)

    def _is_blank(self, i: int) -> bool:
        return 0 <= i < self.n and self.kind[i] == "blank"

    def _isolated(self, i: int) -> bool:
        before = i == self.body_start or self._is_blank(i - 1) or (i > 0 and self.kind[i - 1] == "front_matter")
        after = i == self.n - 1 or self._is_blank(i + 1)
        return before and after

    def _plain_headings(self) -> None:
        """Recognise bare-line headings of plain-text renderings."""
        first = self._first_content_line()
        current_top = ""
        for i in range(self.body_start, self.n):
            if self.kind[i] == "heading":
                title = _norm(self.heading_title[i])
                if self.heading_level[i] <= 2:
                    current_top = title
                continue
            if self.kind[i] != "text" or not self._isolated(i):
                continue
            stripped = self.lines[i].strip()
            title = _norm(stripped)
            if i == first and not self.has_md_headings and _looks_like_title(stripped):
                self._mark_heading(i, 1, stripped)
                continue
            if title in TOP_LEVEL_TITLES:
                self._mark_heading(i, 2, stripped)
                current_top = title
            elif title in KIND_HEADINGS or title in SUB_TITLES:
                self._mark_heading(i, 3, stripped)
            elif (
                not self.has_md_headings
                and current_top not in ("shared records", "annotations")
                and _looks_like_heading(stripped)
            ):
                self._mark_heading(i, 3, stripped)

    def _mark_heading(self, i: int, level: int, title: str) -> None:
        self.kind[i] = "heading"
        self.heading_level[i] = level
        self.heading_title[i] = title

    def _first_content_line(self) -> int:
        for i in range(self.body_start, self.n):
            if self.kind[i] != "blank":
                return i
        return -1

    def _sections(self) -> list[Section]:
        heads = [i for i in range(self.n) if self.kind[i] == "heading"]
        sections = []
        for pos, i in enumerate(heads):
            level = self.heading_level[i]
            end = self.n - 1
            for j in heads[pos + 1:]:
                if self.heading_level[j] <= level:
                    end = j - 1
                    break
            sections.append(Section(self.heading_title[i], level, i + 1, end + 1))
        return sections

    # ------------------------------------------------------------------
    # Quotation anchors

    def _anchor_lines(self) -> None:
        for i in range(self.body_start, self.n):
            kind = self.kind[i]
            if kind == "quote":
                content = QUOTE_PREFIX_RE.sub("", self.lines[i], count=1)
            elif kind in ("text", "table"):
                content = self.lines[i]
            else:
                continue
            m = ANCHOR_RE.search(content)
            if not m or not _looks_like_path(m.group("path")):
                continue
            self.anchors[i] = _Anchor(
                line=i,
                before=content[: m.start()].rstrip(),
                path=m.group("path"),
                commit=m.group("commit") or "",
            )

    def _plain_quotations(self, leads: list[_Lead]) -> None:
        """Mark the extent of plain-text quotations (anchor outside `>` blocks).

        The body is the paragraph holding the anchor (or, for an anchor on its
        own line, the paragraph before it), extended backwards over preceding
        paragraphs that look like code: plain text keeps no quote markers, and
        quoted code is often split by blank lines.
        """
        lead_lines = {lead.line for lead in leads}
        self.plain_quote_start: dict[int, int] = {}

        def eligible(k: int) -> bool:
            return (
                0 <= k < self.n
                and self.kind[k] in ("text", "table")
                and not self.in_quote[k]
                and k not in lead_lines
                and k not in self.anchors
            )

        def paragraph_start(end: int) -> int:
            k = end
            while eligible(k - 1):
                k -= 1
            return k

        for a in sorted(self.anchors):
            if self.kind[a] == "quote":
                continue
            anchor = self.anchors[a]
            if anchor.before:
                start = paragraph_start(a)
            else:
                k = a - 1
                while self._is_blank(k):
                    k -= 1
                start = paragraph_start(k) if eligible(k) else a
            while True:
                k = start - 1
                if not self._is_blank(k):
                    break  # only paragraphs separated by blank lines extend a quotation
                while self._is_blank(k):
                    k -= 1
                if not eligible(k):
                    break
                p = paragraph_start(k)
                if not _looks_like_code(self.lines[p: k + 1]):
                    break
                start = p
            for k in range(start, a + 1):
                self.in_quote[k] = True
                if self.kind[k] in ("text", "table", "blank"):
                    self.kind[k] = "quotation"
            self.plain_quote_start[a] = start

    def _quotations(self) -> list[Quotation]:
        result = []
        # Markdown blocks
        i = self.body_start
        while i < self.n:
            if self.kind[i] != "quote":
                i += 1
                continue
            j = i
            while j + 1 < self.n and self.kind[j + 1] == "quote":
                j += 1
            anchor = self.anchors.get(j)
            if anchor is not None:
                body_lines = [QUOTE_PREFIX_RE.sub("", self.lines[k], count=1) for k in range(i, j)]
                if anchor.before:
                    body_lines.append(anchor.before)
                result.append(_quotation(body_lines, anchor, i))
            i = j + 1
        # Plain-text extents
        for a, start in getattr(self, "plain_quote_start", {}).items():
            anchor = self.anchors[a]
            body_lines = [self.lines[k] for k in range(start, a)]
            if anchor.before:
                body_lines.append(anchor.before)
            result.append(_quotation(body_lines, anchor, start))
        result.sort(key=lambda q: q.line)
        return result

    # ------------------------------------------------------------------
    # Declarations and annotations

    def _shared_lines(self, sections: list[Section]) -> list[bool]:
        shared = [False] * self.n
        for s in sections:
            if _norm(s.title) == "shared records":
                for k in range(s.line_start - 1, s.line_end):
                    shared[k] = True
        return shared

    def _leads(self, sections: list[Section]) -> list[_Lead]:
        shared = self._shared_lines(sections)
        self.shared = shared
        heading_mode = any(
            self.kind[i] == "heading" and shared[i] and self.heading_level[i] >= 2
            and _lead_match(ID_HEADING_RE, self.heading_title[i]) and _is_md_heading(self.lines[i])
            for i in range(self.n)
        )
        self.heading_mode = heading_mode
        leads: list[_Lead] = []
        for i in range(self.body_start, self.n):
            kind = self.kind[i]
            if i in self.anchors or kind in ("fence", "quote", "front_matter", "blank"):
                continue
            line = self.lines[i]
            if kind == "heading":
                title = self.heading_title[i]
                m = ANNOTATION_RE.match(title)
                if m:
                    leads.append(_Lead(i, "annotation", m.group("id"), _clean_label(m.group("label")), "heading", self.heading_level[i]))
                    continue
                m = _lead_match(ID_HEADING_RE, title)
                if m and shared[i] and _is_md_heading(line):
                    leads.append(_Lead(i, "declaration", m.group("id"), _clean_label(m.group("label")), "heading", self.heading_level[i]))
                continue
            stripped = line.strip()
            m = ANNOTATION_RE.match(stripped)
            if m and kind == "text":
                leads.append(_Lead(i, "annotation", m.group("id"), _clean_label(m.group("label")), "line", 0))
                continue
            if heading_mode or not shared[i]:
                continue
            if kind == "table":
                lead = self._table_lead(i)
                if lead:
                    leads.append(lead)
                continue
            m = _lead_match(BOLD_DECL_RE, line)
            if m:
                label = _clean_label(m.group("label"))
                leads.append(_Lead(i, "declaration", m.group("id"), label, "bold", 0, m.group("body")))
                continue
            m = _lead_match(DASH_BOLD_DECL_RE, line)
            if m:
                label = _clean_label(m.group("label"))
                leads.append(_Lead(i, "declaration", m.group("id"), label, "bold", 0, m.group("body")))
                continue
            m = _lead_match(BOLD_ID_RE, line)
            if m:
                body = m.group("body")
                label = _first_sentence(body)
                leads.append(_Lead(i, "declaration", m.group("id"), label, "bold", 0, body[len(label):]))
                continue
            m = _lead_match(ID_ONLY_RE, line)
            if m:
                k = i + 1
                while self._is_blank(k):
                    k += 1
                if k < self.n and self.kind[k] in ("text",) and LABEL_LINE_RE.match(self.lines[k]):
                    label = LABEL_LINE_RE.match(self.lines[k]).group("value").strip()
                    leads.append(_Lead(i, "declaration", m.group("id"), label, "id-line", 0))
                continue
            m = _lead_match(LINE_DECL_RE, line)
            if m:
                rest = m.group("rest")
                label = _first_sentence(rest)
                leads.append(_Lead(i, "declaration", m.group("id"), _clean_label(label), "line", 0, rest[len(label):]))
        return leads

    def _table_lead(self, i: int) -> _Lead | None:
        # the first row of a table is its header; a separator row is no record
        if i == 0 or self.kind[i - 1] != "table":
            return None
        cells = _split_row(self.lines[i])
        if not cells or _is_separator(cells):
            return None
        first = _strip_cell(cells[0])
        if not ids.is_record_id(first) and not (
            ids.TOKEN_RE.fullmatch(first) and ids.classify_token(first) == ids.MALFORMED
        ):
            return None
        label = _strip_cell(cells[1]) if len(cells) > 1 else ""
        return _Lead(i, "declaration", first, label, "table", 0, " | ".join(c.strip() for c in cells[2:]))

    def _regions(self, leads: list[_Lead]) -> list[tuple[int, int]]:
        regions = []
        lead_lines = [lead.line for lead in leads]
        for pos, lead in enumerate(leads):
            s = lead.line
            if lead.form == "table":
                regions.append((s, s))
                continue
            limit = lead_lines[pos + 1] - 1 if pos + 1 < len(leads) else self.n - 1
            end = limit
            for j in range(s + 1, limit + 1):
                if self.kind[j] == "heading":
                    if lead.level == 0 or self.heading_level[j] <= lead.level:
                        end = j - 1
                        break
            while end > s and self.kind[end] == "blank":
                end -= 1
            regions.append((s, end))
        return regions

    def _records(self, leads, regions):
        declarations = []
        annotations = []
        for lead, (s, e) in zip(leads, regions):
            text = "".join(self.raw[s: e + 1])
            fields = tuple(self._fields(s, e, lead))
            refs = tuple(self._region_references(s, e, lead))
            label = lead.label
            body = self._body(lead, s, e)
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
                self.malformed.append(MalformedId(lead.record_id, s + 1, True))
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

    def _body(self, lead: _Lead, s: int, e: int) -> str:
        rest_start = s + 1
        if lead.form == "id-line":
            k = s + 1
            while k <= e and self.kind[k] == "blank":
                k += 1
            rest_start = k + 1  # skip the `Label:` line
        first = lead.body_start.lstrip(" \t.").rstrip()
        first = re.sub(r"^\*\*[ \t]*", "", first).strip()
        rest = "".join(self.raw[rest_start: e + 1]).strip()
        if first and rest:
            return first + "\n" + rest
        return first or rest

    def _fields(self, s: int, e: int, lead: _Lead):
        for k in range(s, e + 1):
            kind = self.kind[k]
            if self.in_quote[k] or kind in ("fence", "quote", "quotation", "heading", "blank", "table"):
                continue
            line = self.lines[k]
            if k == s:
                # the leading line declares; only inline status/route labels count
                yield from _inline_fields(line, k + 1, start=0)
                continue
            m = FIELD_RE.match(line)
            if m and _plausible_label(m.group("label")):
                label = m.group("label").strip()
                value = (m.group("value") or "").strip()
                bullet = bool(m.group("bullet")) and m.group("indent") == ""
                if bullet or not _has_inline_label(value):
                    yield Field(label, value, k + 1, bullet)
                else:
                    split = INLINE_FIELD_RE.search(value, 1)
                    while split and split.start() == 0:
                        split = INLINE_FIELD_RE.search(value, split.end())
                    head = value[: split.start()].strip() if split else value
                    yield Field(label, head, k + 1, False)
                    if split:
                        yield from _inline_fields(value, k + 1, start=split.start())
                continue
            yield from _inline_fields(line, k + 1, start=0)

    def _scannable(self, k: int) -> bool:
        return not self.in_quote[k] and self.kind[k] not in ("fence", "quote", "quotation", "front_matter")

    def _scan(self, k: int) -> tuple:
        """The IDs, ranges and malformed tokens of line k, found once per parse."""
        found = self._scans.get(k)
        if found is None:
            found = self._scans[k] = ids.scan(self.lines[k])
        return found

    def _region_references(self, s: int, e: int, lead: _Lead):
        for k in range(s, e + 1):
            if not self._scannable(k):
                continue
            skip_first = k == s
            for match in self._scan(k)[0]:
                if skip_first and match.record_id == lead.record_id:
                    skip_first = False
                    continue
                yield Reference(match.record_id, k + 1)

    def _references(self, leads: list[_Lead]):
        decl_lines = {lead.line: lead.record_id for lead in leads if lead.kind == "declaration"}
        own_bad = {k: record_id for k, record_id in decl_lines.items() if not ids.is_record_id(record_id)}
        references = []
        ranges = []
        for k in range(self.body_start, self.n):
            if not self._scannable(k):
                continue
            own = decl_lines.get(k)
            found_ids, found_ranges, found_malformed = self._scan(k)
            for match in found_ids:
                if own is not None and match.record_id == own:
                    own = None  # the defining occurrence is no reference
                    continue
                references.append(Reference(match.record_id, k + 1))
            for r in found_ranges:
                ranges.append(RangeReference(r.record_id, k + 1))
            for bad in found_malformed:
                if own_bad.get(k) == bad.record_id:
                    own_bad.pop(k)  # the malformed declaration itself, already kept
                    continue
                self.malformed.append(MalformedId(bad.record_id, k + 1, False))
        return references, ranges

    # ------------------------------------------------------------------
    # Source register, integration issues, mappings, amendments

    def _tables(self, start: int = 0, end: int | None = None):
        """Yield tables as lists of (line index, cells) within [start, end]."""
        end = self.n - 1 if end is None else end
        k = max(start, self.body_start)
        while k <= end:
            if self.kind[k] != "table" or self.in_quote[k]:
                k += 1
                continue
            rows = []
            while k <= end and self.kind[k] == "table" and not self.in_quote[k]:
                cells = _split_row(self.lines[k])
                if not _is_separator(cells):
                    rows.append((k, cells))
                k += 1
            if rows:
                yield rows

    def _sources(self, sections: list[Section]) -> list[SourceRow]:
        result = []
        seen_lines = set()
        for section in sections:
            if _norm(section.title) != "source register":
                continue
            for rows in self._tables(section.line_start - 1, section.line_end - 1):
                header = [_strip_cell(c) for c in rows[0][1]]
                for k, cells in rows[1:]:
                    first = _strip_cell(cells[0]) if cells else ""
                    if not ids.is_source_id(first) or k in seen_lines:
                        continue
                    seen_lines.add(k)
                    columns = tuple(
                        (header[pos] if pos < len(header) else "", cell.strip())
                        for pos, cell in enumerate(cells)
                    )
                    result.append(SourceRow(first, columns, k + 1))
        return result

    def _integration_issues(self, sections: list[Section]) -> list[IntegrationIssue]:
        for section in sections:
            if _norm(section.title) == "integration issues":
                return self._issues_in(section.line_start, section.line_end - 1)
        return []

    def _issues_in(self, start: int, end: int) -> list[IntegrationIssue]:
        # start is the 0-based line after the heading; end inclusive
        items: list[tuple[int, list[str]]] = []
        current: list[str] | None = None
        saw_bullet = False
        for k in range(start, end + 1):
            kind = self.kind[k]
            line = self.lines[k]
            if kind in ("fence", "heading") or self.kind[k] == "quote":
                current = None
                continue
            if kind == "blank":
                current = None
                continue
            m = BULLET_RE.match(line)
            if m and not self.in_quote[k]:
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
                if self.kind[k] not in ("text", "quotation") or not self.lines[k].strip():
                    continue
                stripped = self.lines[k].strip()
                if NONE_RE.match(stripped) and len(stripped) < 60:
                    continue
                items.append((k, [stripped]))
        issues = []
        for index, (k, parts) in enumerate(items, start=1):
            text = "\n".join(p for p in parts if p)
            issues.append(IntegrationIssue(index, text, k + 1, ids.unique_ids(text)))
        return issues

    def _mappings(self) -> list[MappingStatement]:
        result = []
        for k in range(self.body_start, self.n):
            if not self._scannable(k) or self.kind[k] not in ("text", "heading"):
                continue
            line = self.lines[k]
            read: set[int] = set()  # where each statement's left side starts, read once
            starts = [label.end() for label in MAPPINGS_LABEL_RE.finditer(line)]
            starts += [m.end() for m in STATEMENT_START_RE.finditer(line)]
            for pos in starts:
                while (m := MAPPING_PAIR_RE.match(line, pos)) is not None:
                    pos = m.end()
                    if m.start("source") in read:
                        continue
                    read.add(m.start("source"))
                    if m.group("target"):
                        result.append(MappingStatement(m.group("source"), m.group("target"), "mapped", k + 1, "list"))
                    else:
                        other = m.group("other").strip()
                        result.append(MappingStatement(m.group("source"), "", f"no record: {other}", k + 1, "list"))
        for rows in self._tables():
            columns = _mapping_columns([_strip_cell(c) for c in rows[0][1]])
            if columns is None:
                continue
            src_col, tgt_col, disp_col = columns
            for k, cells in rows[1:]:
                if len(cells) <= max(columns):
                    continue
                sources = ids.find_ids(cells[src_col])
                if not sources:
                    continue
                targets = ids.find_ids(cells[tgt_col])
                result.append(MappingStatement(
                    sources[0].record_id,
                    targets[0].record_id if targets else "",
                    _strip_cell(cells[disp_col]),
                    k + 1,
                    "table",
                ))
        result.sort(key=lambda m: m.line)
        return result

    def _amendments(self) -> list[Amendment]:
        result = []
        k = self.body_start
        while k < self.n:
            if not self._scannable(k) or self.kind[k] != "text":
                k += 1
                continue
            m = AMENDMENT_RE.match(self.lines[k])
            if not m:
                k += 1
                continue
            parts = [m.group("rest").strip()]
            j = k + 1
            while j < self.n and self.kind[j] == "text" and self._scannable(j) and not AMENDMENT_RE.match(self.lines[j]):
                parts.append(self.lines[j].strip())
                j += 1
            text = "\n".join(p for p in parts if p)
            label = m.group("label").lower()
            kind = "amendment" if label == "amendment" else "unresolved-conflict"
            result.append(Amendment(kind, text, k + 1, ids.unique_ids(text)))
            k = j
        return result

    # ------------------------------------------------------------------
    # Segments, title, type

    def _segments(self, regions, leads) -> tuple[Segment, ...]:
        owner = [None] * self.n
        for pos, ((s, e), lead) in enumerate(zip(regions, leads)):
            for k in range(s, e + 1):
                owner[k] = (lead.kind, pos)
        segments = []
        k = 0
        while k < self.n:
            if owner[k] is not None:
                key = owner[k]
                seg_kind = key[0]
            else:
                seg_kind = self.kind[k]
                if seg_kind == "quote":
                    seg_kind = "quotation"
                key = (seg_kind, k if seg_kind == "heading" else None)
            j = k
            while j + 1 < self.n:
                nxt = owner[j + 1]
                if nxt is None:
                    nk = self.kind[j + 1]
                    nk = "quotation" if nk == "quote" else nk
                    nkey = (nk, j + 1 if nk == "heading" else None)
                else:
                    nkey = nxt
                if nkey != key:
                    break
                j += 1
            segments.append(Segment(seg_kind, "".join(self.raw[k: j + 1]), k + 1))
            k = j + 1
        return tuple(segments)

    def _title(self) -> str:
        for i in range(self.body_start, self.n):
            if self.kind[i] == "heading" and self.heading_level[i] == 1 and _is_md_heading(self.lines[i]):
                return self.heading_title[i]
        first = self._first_content_line()
        if first < 0:
            return ""
        if self.kind[first] == "heading":
            return self.heading_title[first]
        return self.lines[first].strip()

    def _doc_type(self) -> str:
        value = self.front_matter.get("type") if isinstance(self.front_matter, dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip()
        for i in range(self.body_start, min(self.n, self.body_start + 40)):
            if self.kind[i] != "text":
                continue
            m = TYPE_LINE_RE.match(self.lines[i])
            if m:
                return m.group("value")
        return ""


# --------------------------------------------------------------------------
# Helpers


def _load_front_matter(source: str) -> tuple[dict, str]:
    try:
        data = yaml.load(source, Loader=_FrontMatterLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        try:
            data = json.loads(source)
        except ValueError:
            return {}, f"front matter is not valid YAML: {_one_line(str(exc))}"
    except Exception as exc:  # e.g. recursion on pathological input
        return {}, f"front matter could not be read: {type(exc).__name__}"
    if data is None:
        return {}, ""
    if not isinstance(data, dict):
        return {}, "front matter is not a mapping"
    return data, ""


def _one_line(s: str) -> str:
    return " ".join(s.split())


def _norm(title: str) -> str:
    title = title.strip().strip("*").strip()
    return " ".join(title.lower().split())


def _lead_match(pattern: re.Pattern, text: str) -> re.Match | None:
    """`pattern.match(text)` when its `id` group is a full ID or a malformed
    token (a declaration to report whole); None for a numbered ID joined to a
    word or a token that is no ID at all."""
    m = pattern.match(text)
    if m and ids.classify_token(m.group("id")) in (ids.VALID, ids.MALFORMED) and not ids.RANGE_RE.fullmatch(m.group("id")):
        return m  # a range (`RTE-1-3: …`) declares nothing and is reported as a range
    return None


def _is_md_heading(line: str) -> bool:
    return bool(MD_HEADING_RE.match(line))


def _looks_like_title(s: str) -> bool:
    return 0 < len(s) <= 120 and not s.endswith(".") and "\t" not in s and not ids.ID_IN_TEXT_RE.match(s)


_HEADING_FORBIDDEN = re.compile(r"[`=\{\}\[\]\"();<>|\t]|\s---\s|\u2014|https?:")


def _looks_like_heading(s: str) -> bool:
    if not s or len(s) > 60 or not s[0].isupper():
        return False
    if s[-1] in ".:;,!?" or ":" in s or _HEADING_FORBIDDEN.search(s):
        return False
    if ids.ID_IN_TEXT_RE.search(s) or ANNOTATION_RE.match(s):
        return False
    return len(s.split()) <= 8


def _looks_like_path(path: str) -> bool:
    return bool(path) and ("/" in path or "." in path) and path.strip("./:") != "" and not path.startswith("-")


def _looks_like_code(lines: list[str]) -> bool:
    if not lines:
        return False
    if any(line[:1] in (" ", "\t") for line in lines):
        return True
    first = lines[0].lstrip()
    return first[:1] in ("}", ")", "]") or first.startswith(("//", "/*"))


def _quotation(body_lines: list[str], anchor: _Anchor, start: int) -> Quotation:
    body = "\n".join(body_lines).strip("\n")
    path, lines = anchor.path, ""
    m = ANCHOR_LINES_RE.match(path)
    if m:
        path, lines = m.group("path"), m.group("lines")
    return Quotation(text=body, path=path, lines=lines, commit=anchor.commit, line=start + 1)


def _clean_label(label: str | None) -> str:
    if not label:
        return ""
    label = label.strip()
    label = re.sub(r"\*\*$", "", label).strip()
    return label.rstrip(".").strip()


def _first_sentence(text: str) -> str:
    """Text up to and including the first sentence end (or all of it)."""
    m = re.search(r"[.!?](?=\s|$)", text)
    if not m:
        return text
    return text[: m.end()]


def _plausible_label(label: str) -> bool:
    label = label.strip()
    if not label or len(label.split()) > 10:
        return False
    if label.lower().startswith(("http", "https", "file")):
        return False
    return not ids.ID_IN_TEXT_RE.search(label)


def _has_inline_label(value: str) -> bool:
    return bool(INLINE_FIELD_RE.search(value, 1))


def _inline_fields(line: str, line_no: int, *, start: int):
    """Known route/status labels written inside prose (older generations).

    A label at the very start of a line is an ordinary field, read elsewhere.
    """
    matches = [m for m in INLINE_FIELD_RE.finditer(line, start) if m.start() > 0]
    for pos, m in enumerate(matches):
        end = matches[pos + 1].start() if pos + 1 < len(matches) else len(line)
        value = line[m.end(): end].strip().rstrip(";").rstrip()
        yield Field(m.group("label").strip(), value, line_no, False)


def _split_row(line: str) -> list[str]:
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


def _is_separator(cells: list[str]) -> bool:
    return bool(cells) and all(re.fullmatch(r":?-{1,}:?", c.strip()) for c in cells if c.strip()) and any(
        c.strip() for c in cells
    )


def _strip_cell(cell: str) -> str:
    return cell.strip().strip("`*_ ").strip()


_CANONICAL_WORDS = re.compile(r"canonical|shared|result (?:record|id)|target (?:record|id)|^target$|^to$")
_DISPOSITION_WORDS = re.compile(r"disposition|decision|^status$|^outcome$|^relation$|^verdict$")
_PROPOSAL_WORDS = re.compile(r"proposal|proposed|member|^source\b|^from$|^record\b|^id$")


def _mapping_columns(header: list[str]) -> tuple[int, int, int] | None:
    """(proposal, canonical, disposition) column indexes, in any order."""
    lowered = [h.lower() for h in header]
    target = next((i for i, h in enumerate(lowered) if _CANONICAL_WORDS.search(h)), None)
    if target is None:
        return None
    disposition = next(
        (i for i, h in enumerate(lowered) if i != target and _DISPOSITION_WORDS.search(h)), None
    )
    if disposition is None:
        return None
    proposal = next(
        (i for i, h in enumerate(lowered) if i not in (target, disposition) and _PROPOSAL_WORDS.search(h)),
        None,
    )
    if proposal is None:
        return None
    return proposal, target, disposition

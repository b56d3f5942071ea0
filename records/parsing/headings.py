"""Front matter, block structure, headings and sections of a report, and its title and type.

Plain text loses its heading markers, so a bare line counts as a heading
only when it is a known section title, or (in a document without any
Markdown heading, outside Shared records and Annotations) when it looks
like one: short, capitalised, no terminal punctuation, between blank lines.
A false heading would cut a declaration's region short, hence the caution.
"""
from __future__ import annotations

import json
import re

import yaml

from records import ids
from records.document import Section

from .grammar import (
    ANNOTATION_RE,
    FENCE_OPEN_RE,
    KIND_HEADINGS,
    MD_HEADING_RE,
    PIPE_ROW_RE,
    QUOTE_LINE_RE,
    SUB_TITLES,
    TAB_ROW_RE,
    TOP_LEVEL_TITLES,
    TYPE_LINE_RE,
)
from .lines import ReportLines


class FrontMatterLoader(yaml.SafeLoader):
    """SafeLoader that keeps dates as strings, so front matter stays JSON-like."""


FrontMatterLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_front_matter(doc: ReportLines) -> None:
    if not doc.lines or doc.lines[0].lstrip("\ufeff").rstrip() != "---":
        return
    for j in range(1, doc.n):
        if doc.lines[j].rstrip() in ("---", "..."):
            break
    else:
        doc.front_matter_error = "front matter opened with --- is never closed"
        return
    for i in range(0, j + 1):
        doc.kind[i] = "front_matter"
    doc.body_start = j + 1
    source = "\n".join(doc.lines[1:j])
    data, error = load_front_matter(source)
    doc.front_matter = data
    doc.front_matter_error = error


def load_front_matter(source: str) -> tuple[dict, str]:
    try:
        data = yaml.load(source, Loader=FrontMatterLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        try:
            data = json.loads(source)
        except ValueError:
            return {}, f"front matter is not valid YAML: {one_line(str(exc))}"
    except Exception as exc:  # e.g. recursion on pathological input
        return {}, f"front matter could not be read: {type(exc).__name__}"
    if data is None:
        return {}, ""
    if not isinstance(data, dict):
        return {}, "front matter is not a mapping"
    return data, ""


def mark_blocks(doc: ReportLines) -> None:
    """Block structure: fences, headings, quotes, tables, blanks."""
    i = doc.body_start
    lines = doc.lines
    while i < doc.n:
        line = lines[i]
        m = FENCE_OPEN_RE.match(line)
        if m and not (m.group(2)[0] == "`" and "`" in m.group(3)):
            marker = m.group(2)
            close = re.compile(r"^[ \t]*" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}[ \t]*$")
            j = i + 1
            while j < doc.n and not close.match(lines[j]):
                j += 1
            end = min(j, doc.n - 1)
            for k in range(i, end + 1):
                doc.kind[k] = "fence"
            i = end + 1
            continue
        if not line.strip():
            doc.kind[i] = "blank"
        elif QUOTE_LINE_RE.match(line):
            doc.kind[i] = "quote"
            doc.in_quote[i] = True
        else:
            hm = MD_HEADING_RE.match(line)
            if hm:
                title = re.sub(r"(?:^|[ \t]+)#+$", "", hm.group(2) or "").strip()
                doc.kind[i] = "heading"
                doc.heading_level[i] = len(hm.group(1))
                doc.heading_title[i] = title
            elif PIPE_ROW_RE.match(line) or ("\t" in line and TAB_ROW_RE.search(line)):
                doc.kind[i] = "table"
        i += 1
    doc.has_md_headings = any(k == "heading" for k in doc.kind)


def mark_plain_headings(doc: ReportLines) -> None:
    """Recognise bare-line headings of plain-text renderings."""
    first = doc.first_content_line()
    current_top = ""
    for i in range(doc.body_start, doc.n):
        if doc.kind[i] == "heading":
            title = norm(doc.heading_title[i])
            if doc.heading_level[i] <= 2:
                current_top = title
            continue
        if doc.kind[i] != "text" or not doc.isolated(i):
            continue
        stripped = doc.lines[i].strip()
        title = norm(stripped)
        if i == first and not doc.has_md_headings and looks_like_title(stripped):
            doc.mark_heading(i, 1, stripped)
            continue
        if title in TOP_LEVEL_TITLES:
            doc.mark_heading(i, 2, stripped)
            current_top = title
        elif title in KIND_HEADINGS or title in SUB_TITLES:
            doc.mark_heading(i, 3, stripped)
        elif (
            not doc.has_md_headings
            and current_top not in ("shared records", "annotations")
            and looks_like_heading(stripped)
        ):
            doc.mark_heading(i, 3, stripped)


def sections(doc: ReportLines) -> list[Section]:
    heads = [i for i in range(doc.n) if doc.kind[i] == "heading"]
    found = []
    for pos, i in enumerate(heads):
        level = doc.heading_level[i]
        end = doc.n - 1
        for j in heads[pos + 1:]:
            if doc.heading_level[j] <= level:
                end = j - 1
                break
        found.append(Section(doc.heading_title[i], level, i + 1, end + 1))
    return found


def title(doc: ReportLines) -> str:
    for i in range(doc.body_start, doc.n):
        if doc.kind[i] == "heading" and doc.heading_level[i] == 1 and is_md_heading(doc.lines[i]):
            return doc.heading_title[i]
    first = doc.first_content_line()
    if first < 0:
        return ""
    if doc.kind[first] == "heading":
        return doc.heading_title[first]
    return doc.lines[first].strip()


def doc_type(doc: ReportLines) -> str:
    value = doc.front_matter.get("type") if isinstance(doc.front_matter, dict) else None
    if isinstance(value, str) and value.strip():
        return value.strip()
    for i in range(doc.body_start, min(doc.n, doc.body_start + 40)):
        if doc.kind[i] != "text":
            continue
        m = TYPE_LINE_RE.match(doc.lines[i])
        if m:
            return m.group("value")
    return ""


def one_line(s: str) -> str:
    return " ".join(s.split())


def norm(title: str) -> str:
    """A section title as compared: no emphasis, lower case, single spaces."""
    title = title.strip().strip("*").strip()
    return " ".join(title.lower().split())


def is_md_heading(line: str) -> bool:
    return bool(MD_HEADING_RE.match(line))


def looks_like_title(s: str) -> bool:
    return 0 < len(s) <= 120 and not s.endswith(".") and "\t" not in s and not ids.ID_IN_TEXT_RE.match(s)


HEADING_FORBIDDEN = re.compile(r"[`=\{\}\[\]\"();<>|\t]|\s---\s|\u2014|https?:")


def looks_like_heading(s: str) -> bool:
    if not s or len(s) > 60 or not s[0].isupper():
        return False
    if s[-1] in ".:;,!?" or ":" in s or HEADING_FORBIDDEN.search(s):
        return False
    if ids.ID_IN_TEXT_RE.search(s) or ANNOTATION_RE.match(s):
        return False
    return len(s.split()) <= 8

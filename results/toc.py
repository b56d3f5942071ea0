"""The result page's table of contents: anchors on the rendered Markdown's headings (DESIGN §5).

Pure: Markdown text in, (HTML, contents) out. Only the page changes; the
result's stored bytes and their SHA-256 are untouched. Each heading gets an
`id` ("sec-" + a slug of its text, numbered when repeated) and the contents
list the headings of levels 1-3 in order, each with its level, text and anchor, leaving out
headings nested in a quotation or a list.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import nh3
from markdown_it import MarkdownIt

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# nh3's defaults plus `id` on headings (their anchors); everything else is sanitised as before.
_ATTRIBUTES = {**{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
               **{tag: set(nh3.ALLOWED_ATTRIBUTES.get(tag, ())) | {"id"} for tag in _HEADINGS}}
TOC_LEVELS = 3


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    anchor: str


def slug(text: str) -> str:
    words = re.sub(r"[^\w]+", "-", text.lower(), flags=re.UNICODE).strip("-_")
    return words[:60].rstrip("-") or "section"


def render_with_contents(markdown: str) -> tuple[str, list[Heading]]:
    """Sanitised HTML of `markdown` with an id on every heading, and the contents (levels 1-3)."""
    tokens = _MARKDOWN.parse(markdown)
    used: dict[str, int] = {}
    contents: list[Heading] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        inline = tokens[index + 1]
        text = "".join(child.content for child in (inline.children or []) if child.type in ("text", "code_inline"))
        text = text.strip() or inline.content.strip()
        base = "sec-" + slug(text)
        used[base] = used.get(base, 0) + 1
        anchor = base if used[base] == 1 else f"{base}-{used[base]}"
        token.attrSet("id", anchor)
        level = int(token.tag[1])
        # A heading inside a quotation or a list (`> # a code comment` quoted from the source) is
        # part of what is quoted, not a section of the result: it keeps its anchor but is not listed.
        if level <= TOC_LEVELS and token.level == 0:
            contents.append(Heading(level=level, text=text, anchor=anchor))
    html = _MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {})
    return nh3.clean(html, attributes=_ATTRIBUTES), contents

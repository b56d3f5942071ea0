"""The result page's table of contents: anchors on the rendered Markdown's headings (DESIGN §5).

Pure: Markdown text in, (HTML, contents) out. Only the page changes; the
result's stored bytes and their SHA-256 are untouched. Each heading gets an
`id` ("sec-" + a slug of its text, numbered when repeated, counted in the
result's own order) and the contents list the headings of levels 1-3 in page
order, each with its level, text and anchor, leaving out headings nested in a
quotation or a list. Top-level `## ` sections named in `first` are shown
before the others, right after the title (the reviewer's own sections, which
result.md puts after the members' prose; issue 22).
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


def _heading_text(inline) -> str:
    text = "".join(child.content for child in (inline.children or []) if child.type in ("text", "code_inline"))
    return text.strip() or inline.content.strip()


def _sections_first(tokens: list, first: tuple[str, ...]) -> list:
    """`tokens` with the top-level `## ` sections titled in `first` moved, in their own order, to just
    before the first `## ` section; a section runs to the next top-level `## ` heading."""
    starts = [i for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2" and t.level == 0]
    if not starts or not first:
        return tokens
    sections = [tokens[a:b] for a, b in zip(starts, [*starts[1:], len(tokens)])]
    moving = [_heading_text(section[1]) in first for section in sections]
    ordered = [s for s, move in zip(sections, moving) if move] + [s for s, move in zip(sections, moving) if not move]
    return tokens[:starts[0]] + [token for section in ordered for token in section]


def render_with_contents(markdown: str, first: tuple[str, ...] = ()) -> tuple[str, list[Heading]]:
    """Sanitised HTML of `markdown` with an id on every heading, and the contents (levels 1-3);
    the top-level sections titled in `first` come first."""
    tokens = _MARKDOWN.parse(markdown)
    used: dict[str, int] = {}
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            base = "sec-" + slug(_heading_text(tokens[index + 1]))
            used[base] = used.get(base, 0) + 1
            token.attrSet("id", base if used[base] == 1 else f"{base}-{used[base]}")
    tokens = _sections_first(tokens, first)
    # A heading inside a quotation or a list (`> # a code comment` quoted from the source) is
    # part of what is quoted, not a section of the result: it keeps its anchor but is not listed.
    contents = [Heading(level=int(token.tag[1]), text=_heading_text(tokens[index + 1]), anchor=token.attrGet("id"))
                for index, token in enumerate(tokens)
                if token.type == "heading_open" and int(token.tag[1]) <= TOC_LEVELS and token.level == 0]
    html = _MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {})
    return nh3.clean(html, attributes=_ATTRIBUTES), contents

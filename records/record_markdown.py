"""A record's text as the reviewer reads it: Markdown rendered and sanitised with nh3 (DESIGN §5).

Pure: text in, safe HTML out; the stored text and its hashes are untouched. The same renderer as the
result page (CommonMark with tables, raw HTML off), so a record reads the same on the reconciliation
and member pages as in the result. `render_marked` renders a text whose changed words carry the
markers of `MARKS` (a word diff) and turns them into <del>/<ins> after rendering, so a diff never
shows as literal `**` or backticks and never breaks the Markdown it sits in.
"""
from __future__ import annotations

import functools

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
# Private-use characters: never in a report's text, kept as text by Markdown and by nh3.
DEL_OPEN, DEL_CLOSE, INS_OPEN, INS_CLOSE = "\ue000", "\ue001", "\ue002", "\ue003"
MARKS = {DEL_OPEN: "<del>", DEL_CLOSE: "</del>", INS_OPEN: "<ins>", INS_CLOSE: "</ins>"}
_LINK_ATTRIBUTES = {"a": {"href", "title"}}


def _html(text: str) -> str:
    return _MARKDOWN.render(text or "")


def _clean(html: str) -> SafeString:
    # rel/noopener on links: a record may link anywhere; the page must not hand it the opener.
    return mark_safe(nh3.clean(html, link_rel="noopener noreferrer nofollow"))  # noqa: S308 — nh3 sanitised


@functools.lru_cache(maxsize=4096)
def render_record_text(text: str) -> SafeString:
    """`text` as sanitised HTML."""
    return _clean(_html(text.translate({ord(c): None for c in MARKS})))


@functools.lru_cache(maxsize=4096)
def render_marked(marked: str) -> SafeString:
    """A text carrying diff markers as sanitised HTML with <del>/<ins> where the markers were.
    A marked span that crosses a block (a changed list item and the paragraph after it) is closed
    and reopened by the sanitiser's HTML parser, never left unbalanced."""
    html = _html(marked)
    for mark, tag in MARKS.items():
        html = html.replace(mark, tag)
    return _clean(html)

"""The result page's contents (results/toc.py): anchors on headings, read back from the HTML."""
import re
from html.parser import HTMLParser

import nh3
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

import pytest

from results.toc import render_with_contents
from tests.results.test_approval import ready_run  # noqa: F401 — fixture: a reconciled run in review


class Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.headings, self.ids = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.append(attrs["id"])
            if re.fullmatch(r"h[1-6]", tag):
                self.headings.append((int(tag[1]), attrs["id"]))


def parsed(html):
    reader = Ids()
    reader.feed(html)
    return reader


def test_every_heading_gets_an_anchor_and_the_contents_list_levels_one_to_three():
    markdown = "# Result\n\n## Shared records\n\ntext\n\n### Routes\n\n#### Deep\n\n## Shared records\n"
    html, contents = render_with_contents(markdown)
    reader = parsed(html)
    assert [h.anchor for h in contents] == ["sec-result", "sec-shared-records", "sec-routes", "sec-shared-records-2"]
    assert [h.level for h in contents] == [1, 2, 3, 2]
    assert [anchor for _level, anchor in reader.headings] == [
        "sec-result", "sec-shared-records", "sec-routes", "sec-deep", "sec-shared-records-2"]


def test_the_page_text_is_the_same_as_without_anchors_and_still_sanitised():
    markdown = "# Title <script>alert(1)</script>\n\n[x](javascript:alert(1)) `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    html, _ = render_with_contents(markdown)
    assert "<script" not in html and "href=\"javascript" not in html
    plain = nh3.clean(MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").render(markdown))
    assert re.sub(r' id="[^"]*"', "", html) == plain


headings = st.lists(st.tuples(st.integers(1, 6), st.text(alphabet="Ab c-_é1`*", min_size=1, max_size=12)),
                    max_size=12)


@given(headings)
def test_anchors_are_unique_and_every_contents_entry_points_at_a_heading(items):
    markdown = "\n\n".join(f"{'#' * level} {text}" for level, text in items) + "\n"
    html, contents = render_with_contents(markdown)
    reader = parsed(html)
    assert len(reader.ids) == len(set(reader.ids))
    anchors = [anchor for _level, anchor in reader.headings]
    assert [h.anchor for h in contents] == [a for level, a in reader.headings if level <= 3]
    assert set(h.anchor for h in contents) <= set(anchors)


def test_a_heading_inside_a_quotation_is_not_listed_as_a_section():
    # The dynamic-cheatsheet memory report quotes README code whose first line is a `#` comment:
    # Markdown reads `> # Pass …` as a heading inside the quotation; the contents listed it as a
    # top-level section of the result, twice.
    markdown = ("# Result\n\n## Memory report\n\nThe README shows it:\n\n"
                "> # Pass the updated cheatsheet to the next query\n> next = model.generate()\n"
                "> --- `README.md:113-117` @ `abc`\n\n- # a heading in a list item\n\n### Core ideas\n")
    html, contents = render_with_contents(markdown)
    assert [h.text for h in contents] == ["Result", "Memory report", "Core ideas"]
    assert [anchor for _level, anchor in parsed(html).headings] == [
        "sec-result", "sec-memory-report", "sec-pass-the-updated-cheatsheet-to-the-next-query",
        "sec-a-heading-in-a-list-item", "sec-core-ideas"]


@pytest.mark.django_db
def test_the_result_page_lists_the_reviewers_decisions_first(client, reviewer, ready_run,  # noqa: F811
                                                              django_capture_on_commit_callbacks):
    """They started near 31,000 px of a 34,000 px page with no entry near the top (issue 22)."""
    from reviews.audit import Actor
    from results.services import approve_run

    with django_capture_on_commit_callbacks(execute=True):
        approve_run(run=ready_run, note="Read every mapping.", actor=Actor("user:reviewer-1"))
    client.force_login(reviewer.user)
    body = client.get(f"/runs/{ready_run.run_id}/result/").content.decode()
    entries = re.findall(r'<li class="toc-[^"]*"><a href="#([^"]+)">(.*?)</a></li>', body)
    assert entries[0] == ("sec-reconciliation", "<strong>Decisions</strong> (Reconciliation)")
    assert 'id="sec-reconciliation"' in body

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


def test_the_sections_named_first_come_right_after_the_title_with_the_anchors_they_have_in_the_result():
    markdown = ("# Result\n\nintro\n\n## Run identity\n\n## Memory report\n\n### Limitations (as it states it)\n\n"
                "## Reconciliation\n\n### Dispositions\n\n| a |\n|---|\n| 1 |\n\n## Limitations\n\n"
                "## Verification and blockers\n\n> # quoted\n")
    in_order, in_order_contents = render_with_contents(markdown)
    html, contents = render_with_contents(markdown, first=("Reconciliation", "Limitations", "Verification and blockers"))
    assert [h.text for h in contents] == ["Result", "Reconciliation", "Dispositions", "Limitations",
                                          "Verification and blockers", "Run identity", "Memory report",
                                          "Limitations (as it states it)"]
    assert sorted(in_order_contents, key=lambda h: h.anchor) == sorted(contents, key=lambda h: h.anchor)
    assert [a for _level, a in parsed(html).headings] == [
        "sec-result", "sec-reconciliation", "sec-dispositions", "sec-limitations", "sec-verification-and-blockers",
        "sec-quoted", "sec-run-identity", "sec-memory-report", "sec-limitations-as-it-states-it"]
    assert html.index("intro") < html.index('id="sec-reconciliation"') < html.index("<table>") < html.index(
        'id="sec-run-identity"')
    assert len(html) == len(in_order)  # the same blocks, moved


def test_the_summary_counts_the_results_dispositions_issues_and_corrections():
    from results.summary import section_links, summarize
    from results.toc import Heading

    data = {"dispositions": [{"disposition": d} for d in ("new", "mapped", "new", "rejected", "no-counterpart")],
            "integration_issues": [{"decision": d} for d in ("accept", "reject", "accept")]}
    summary = summarize(data, ["resolved", "withdrawn", "resolved"])
    assert [(c.count, c.words) for c in summary.dispositions] == [
        (1, "mapped onto a shared record"), (2, "entered as new shared records"), (1, "with no counterpart"),
        (1, "rejected (no place)")]
    assert (summary.records, summary.issues_accepted, summary.issues_rejected) == (5, 2, 1)
    assert [(c.count, c.words) for c in summary.corrections] == [(2, "resolved"), (1, "withdrawn")]
    # A member's carried heading of the same title comes later on the page: the link goes to the result's own.
    contents = [Heading(2, "Reconciliation", "sec-reconciliation"), Heading(3, "Dispositions", "sec-dispositions-2"),
                Heading(3, "Dispositions", "sec-dispositions")]
    assert section_links(contents) == {"decisions": "sec-reconciliation", "dispositions": "sec-dispositions-2"}


@pytest.mark.django_db
def test_the_result_page_opens_with_the_summary_and_lists_the_reviewers_decisions_first(
        client, reviewer, ready_run, django_capture_on_commit_callbacks):  # noqa: F811
    """They started near 31,000 px of a 34,000 px page with no entry near the top (issue 22)."""
    from reviews.audit import Actor
    from results.services import approve_run

    with django_capture_on_commit_callbacks(execute=True):
        approve_run(run=ready_run, note="Read every mapping.", actor=Actor("user:reviewer-1"))
    client.force_login(reviewer.user)
    body = client.get(f"/runs/{ready_run.run_id}/result/").content.decode()
    entries = [anchor for anchor, _text in re.findall(r'<li class="toc-[^"]*"><a href="#([^"]+)">(.*?)</a></li>', body)]
    assert entries[:3] == ["result-summary", "sec-dynamic-cheatsheet-agentic-system-analysis", "sec-reconciliation"]
    reviewers = [entries.index(a) for a in ("sec-reconciliation", "sec-limitations", "sec-verification-and-blockers")]
    carried = [entries.index(a) for a in entries if a.startswith(("sec-run-identity", "sec-shared-records",
                                                                  "sec-overview-report", "sec-memory-report"))]
    assert reviewers == sorted(reviewers) and max(reviewers) < min(carried)
    assert body.index('id="result-summary"') < body.index('id="sec-reconciliation"') < body.index(
        'id="sec-shared-records"')
    summary = body[body.index('id="result-summary"'):body.index("</section>", body.index('id="result-summary"'))]
    assert "14 entered as new shared records" in summary and "5 accepted · 0 rejected" in summary
    assert 'href="#sec-integration-issue-decisions"' in summary and 'href="#sec-semantic-verification"' in summary
    assert "by user:reviewer-1 at" in summary and "Read every mapping." in summary

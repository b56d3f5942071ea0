"""The quotation check on plain data: small source trees of the tests' own, no database."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from records.validation import quotes
from records.parsing import parse_report
from records.validation import (
    ERROR,
    WARNING,
    Finding,
    MemberInput,
    RunFacts,
    validate_member,
)

COMMIT = "0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f"

SOURCE = {
    "src/store.py": (
        "def save(memory):\n"          # 1
        "    row = encode(memory)\n"   # 2
        "    db.insert(row)\n"         # 3
        "    return row\n"             # 4
        "\n"                           # 5
        "def load(key):\n"             # 6
        "    row = db.get(key)\n"      # 7
        "    return row\n"             # 8
    ),
    "README.md": "# Store\n\nMemories are saved as rows.\n",
}


def member(body: str, *, slug: bool = True) -> str:
    """A member report whose one declaration makes it current form (slug IDs) or older (numbered)."""
    record = "MEM-OBJ-store-row" if slug else "MEM-OBJ-1"
    return f"# Memory\n\n## Shared records\n\n#### {record} — Row\n\n{body}\n"


def quote(text: str, anchor: str) -> str:
    return "\n".join(f"> {line}" for line in text.split("\n")) + f"\n> --- {anchor}\n"


def check(text: str, files=SOURCE, *, commit: str = COMMIT) -> list[quotes.CheckResult]:
    return [r for r in quotes.check_report(parse_report(text), files, run_commit=commit)
            if r.citation.kind == quotes.QUOTATION]


def only(text: str, files=SOURCE) -> quotes.CheckResult:
    results = check(text, files)
    assert len(results) == 1, results
    return results[0]


def findings(text: str, files=SOURCE, *, current: bool = True) -> list[Finding]:
    results = quotes.check_report(parse_report(text), files, run_commit=COMMIT)
    return quotes.findings_for("memory", results, current=current)


# --- each status ------------------------------------------------------------


def test_it_verifies_a_quote_that_occurs_once_and_keeps_the_matched_lines():
    result = only(member(quote("db.insert(row)\n    return row", f"`src/store.py` @ `{COMMIT}`")))
    assert result.status == quotes.VERIFIED
    assert result.source_lines == ((3, "    db.insert(row)"), (4, "    return row"))


def test_it_verifies_a_quote_inside_its_cited_range():
    result = only(member(quote("row = db.get(key)", f"`src/store.py:6-8` @ `{COMMIT}`")))
    assert result.status == quotes.VERIFIED
    assert result.source_lines == ((7, "    row = db.get(key)"),)


def test_a_range_turns_an_ambiguous_quote_into_a_verified_one():
    unranged = only(member(quote("return row", f"`src/store.py` @ `{COMMIT}`")))
    assert unranged.status == quotes.AMBIGUOUS
    assert unranged.candidates == ("4", "8")
    ranged = only(member(quote("return row", f"`src/store.py:6-8` @ `{COMMIT}`")))
    assert ranged.status == quotes.VERIFIED
    assert ranged.source_lines == ((8, "    return row"),)


def test_it_says_not_found_for_a_misquote():
    result = only(member(quote("db.upsert(row)", f"`src/store.py` @ `{COMMIT}`")))
    assert result.status == quotes.NOT_FOUND


def test_it_names_where_a_quote_outside_its_range_does_occur():
    result = only(member(quote("db.insert(row)", f"`src/store.py:6-8` @ `{COMMIT}`")))
    assert result.status == quotes.NOT_FOUND
    assert result.candidates == ("3",)
    assert "occurs at lines 3" in result.message


def test_it_says_path_missing_for_a_file_outside_the_snapshot():
    result = only(member(quote("db.insert(row)", f"`src/other.py` @ `{COMMIT}`")))
    assert result.status == quotes.PATH_MISSING


def test_it_says_range_outside_for_lines_past_the_end_or_backwards():
    assert only(member(quote("return row", f"`src/store.py:7-9` @ `{COMMIT}`"))).status == quotes.RANGE_OUTSIDE
    assert only(member(quote("return row", f"`src/store.py:8-6` @ `{COMMIT}`"))).status == quotes.RANGE_OUTSIDE
    assert only(member(quote("return row", f"`src/store.py:7-8` @ `{COMMIT}`"))).status == quotes.VERIFIED


def test_it_says_commit_mismatch_for_another_commit_even_without_a_snapshot():
    text = member(quote("db.insert(row)", "`src/store.py` @ `1111111111111111111111111111111111111111`"))
    assert only(text).status == quotes.COMMIT_MISMATCH
    assert only(text, None).status == quotes.COMMIT_MISMATCH


def test_an_abbreviated_run_commit_is_the_run_commit():
    assert only(member(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT[:10]}`"))).status == quotes.VERIFIED


def test_it_says_unverified_without_a_snapshot():
    assert only(member(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`")), None).status == quotes.UNVERIFIED


# --- the forms ----------------------------------------------------------------


def test_it_reads_a_github_blob_link_as_the_anchor_with_its_commit_and_lines():
    link = f"https://github.com/acme/store/blob/{COMMIT}/src/store.py#L6-L8"
    result = only(member(quote("return row", link)))
    assert (result.citation.path, result.citation.lines, result.citation.commit) == ("src/store.py", "6-8", COMMIT)
    assert result.status == quotes.VERIFIED
    other = only(member(quote("return row", link.replace(COMMIT, "2" * 40))))
    assert other.status == quotes.COMMIT_MISMATCH


def test_it_reads_the_plain_text_seed_form():
    text = "Write side\n\nrow = encode(memory) db.insert(row) --- src/store.py @ " + COMMIT + "\n"
    result = only(text)
    assert result.citation.path == "src/store.py"
    assert result.status == quotes.VERIFIED
    assert [n for n, _ in result.source_lines] == [2, 3]


def test_it_finds_a_quote_under_the_archive_top_folder():
    nested = {f"store-{COMMIT[:7]}/{path}": text for path, text in SOURCE.items()}
    assert only(member(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`")), nested).status == quotes.VERIFIED


def test_prose_anchors_are_checked_for_path_and_range():
    text = member("The row is written in `src/store.py` (see src/store.py:6-8, `src/gone.py` and "
                  f"[load](https://github.com/acme/store/blob/{COMMIT}/src/store.py#L40)). Not a path: "
                  "`self.messages.append`, `/home/me/src/x.py`.")
    anchors = {(r.citation.path, r.citation.lines): r.status
               for r in quotes.check_report(parse_report(text), SOURCE, run_commit=COMMIT)
               if r.citation.kind == quotes.ANCHOR}
    assert anchors == {
        ("src/store.py", ""): quotes.VERIFIED,
        ("src/store.py", "6-8"): quotes.VERIFIED,
        ("src/gone.py", ""): quotes.PATH_MISSING,
        ("src/store.py", "40"): quotes.RANGE_OUTSIDE,
    }


def test_a_quoted_path_inside_a_quotation_is_not_a_prose_anchor():
    text = member(quote("see `src/gone.py`", f"`README.md` @ `{COMMIT}`"))
    assert [r.citation.kind for r in quotes.check_report(parse_report(text), SOURCE, run_commit=COMMIT)] == [
        quotes.QUOTATION]


# --- findings -------------------------------------------------------------------


def codes(found) -> list[tuple[str, str]]:
    return sorted((f.code, f.severity) for f in found)


def test_each_failed_status_is_an_error_that_says_what_to_do():
    text = member("\n".join([
        quote("db.upsert(row)", f"`src/store.py` @ `{COMMIT}`"),
        quote("return row", f"`src/store.py` @ `{COMMIT}`"),
        quote("return row", f"`src/other.py` @ `{COMMIT}`"),
        quote("return row", f"`src/store.py:20-30` @ `{COMMIT}`"),
        quote("return row", "`src/store.py` @ `1111111`"),
    ]))
    found = findings(text)
    # The other commit is validation's finding (test_a_citation_at_another_commit_is_one_finding_from_validation).
    assert codes(found) == sorted([("quote-not-found", ERROR), ("quote-ambiguous", ERROR),
                                   ("quote-path-missing", ERROR), ("quote-range-outside", ERROR)])
    by_code = {f.code: f.message for f in found}
    assert "quote more context or give a line range" in by_code["quote-ambiguous"]
    assert "lines 4, 8" in by_code["quote-ambiguous"]
    assert "correct the path" in by_code["quote-path-missing"]
    assert "correct" in by_code["quote-range-outside"]
    assert "quote the file's exact text" in by_code["quote-not-found"]
    assert all(f.line > 0 for f in found)


def test_verified_quotations_make_no_finding():
    assert findings(member(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`"))) == []


def test_without_a_snapshot_one_warning_per_member_with_the_count():
    text = member(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`")
                  + "\n" + quote("return row", f"`src/store.py` @ `{COMMIT}`"))
    found = findings(text, None)
    assert codes(found) == [("quote-unverified", WARNING)]
    assert found[0].message.startswith("2 quotations")


def test_a_member_without_quotations_gets_no_unverified_warning():
    assert findings(member("No quotations here."), None) == []


def test_older_generations_treat_a_second_occurrence_as_a_warning():
    text = member(quote("return row", f"`src/store.py` @ `{COMMIT}`"), slug=False)
    assert codes(findings(text, current=False)) == [("quote-ambiguous", WARNING)]
    assert codes(findings(text, current=True)) == [("quote-ambiguous", ERROR)]
    missing = member(quote("db.upsert(row)", f"`src/store.py` @ `{COMMIT}`"), slug=False)
    assert codes(findings(missing, current=False)) == [("quote-not-found", ERROR)]


def run_findings(text: str, files=SOURCE, *, commit: str = COMMIT) -> list[Finding]:
    """What a run's validation says of one member: validation's findings and the quotation check's, merged."""
    report = parse_report(text)
    found = validate_member(MemberInput("memory", "memory", report), RunFacts("AAS-2026-01-01-store-01", commit))
    results = quotes.check_report(report, files, run_commit=commit)
    return quotes.merge_findings(found, quotes.findings_for("memory", results, current=True))


def test_a_citation_at_another_commit_is_one_finding_from_validation():
    other = "1" * 40
    link = f"https://github.com/acme/store/blob/{other}/src/store.py#L3"
    text = member("\n".join([
        quote("db.insert(row)", f"`src/store.py` @ `{other}`"),
        "",
        quote("db.insert(row)", link),  # the commit in the link: validation did not read it before
        "",
        f"The [write]({link.replace('#L3', '#L2')}) encodes first.",
    ]))
    lines = [n for n, line in enumerate(text.splitlines(), start=1) if line.startswith(("> db", "The"))]
    mismatches = [(f.code, f.severity, f.line) for f in run_findings(text) if "commit" in f.code]
    assert mismatches == [("quote-commit-mismatch", ERROR, line) for line in lines]
    statuses = [r.status for r in quotes.check_report(parse_report(text), SOURCE, run_commit=COMMIT)]
    assert statuses == [quotes.COMMIT_MISMATCH] * 3
    assert not quotes.findings_for("memory", quotes.check_report(parse_report(text), SOURCE, run_commit=COMMIT),
                                   current=True)


# --- the whitespace property ---------------------------------------------------------

_WORDS = ["def", "save(memory):", "row", "=", "encode(memory)", "db.insert(row)", "return", "load(key):",
          "db.get(key)", "missing", "memory", "rows."]
_GAPS = st.lists(st.sampled_from([" ", "  ", "\n", "\n    ", "\t", " \n  "]), min_size=1, max_size=1).map("".join)


@settings(max_examples=150, deadline=None)
@given(words=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6), gaps=st.lists(_GAPS, min_size=6, max_size=6),
       ranged=st.booleans())
def test_reflowing_a_quotes_whitespace_never_changes_its_status(words, gaps, ranged):
    anchor = f"`src/store.py{':1-8' if ranged else ''}` @ `{COMMIT}`"
    plain = " ".join(words)
    reflowed = "".join(word + (gaps[i] if i < len(words) - 1 else "") for i, word in enumerate(words))
    a = quotes.check_citation(quotes.Citation(quotes.QUOTATION, 1, plain, "src/store.py", "1-8" if ranged else "",
                                              COMMIT), SOURCE, run_commit=COMMIT)
    b = only(member(quote(reflowed, anchor)))
    assert b.citation.text.split() == plain.split()
    assert (a.status, a.candidates, a.source_lines) == (b.status, b.candidates, b.source_lines)


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab \n\t"), max_size=40), needle=st.text(alphabet="ab ", max_size=5))
def test_occurrences_agree_with_a_plain_search_of_the_collapsed_text(text, needle):
    needle = quotes.collapse(needle)
    found = quotes.SourceText(text).occurrences(needle)
    expected = len(re.findall(f"(?={re.escape(needle)})", quotes.collapse(text))) if needle else 0
    assert len(found) == expected


def test_a_folder_named_in_prose_is_verified_when_the_snapshot_holds_files_under_it():
    text = member("Everything under `src/` and `docs/` was read.")
    anchors = {r.citation.path: r.status for r in quotes.check_report(parse_report(text), SOURCE, run_commit=COMMIT)}
    assert anchors == {"src/": quotes.VERIFIED, "docs/": quotes.PATH_MISSING}


def test_older_generations_prose_paths_missing_from_the_snapshot_are_warnings():
    text = member("The design note `docs/PRD.md` is absent at the pin.", slug=False)
    assert codes(findings(text, current=False)) == [("quote-path-missing", WARNING)]
    assert codes(findings(text, current=True)) == [("quote-path-missing", ERROR)]


REGISTER = """---
type: agentic-system-analyses/types/agentic-system-boundary.md
---

# lantern boundary

## Source register

| Source ID | Kind | Identity/location | Revision or capture | Evidence layer | Inspected scope | Citation anchors | Access gaps |
|---|---|---|---|---|---|---|---|
| SRC-1 | git | `https://github.com/x/lantern` | `{commit}` | implementation | `lantern/` | `lantern/`; `lantern/core.py` | none |
| SRC-2 | capture | `https://lantern.dev/about` | captured 2026-01-01 | doctrine/design | the page | `about.html` | none |
"""


def test_a_capture_rows_anchor_is_not_looked_up_in_the_snapshot_and_a_folder_may_keep_its_slash():
    """Issue 25: anchors belong to their register row; a folder written `lantern/` matches the files under it."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    report = parse_report(REGISTER.format(commit=commit))
    files = {"lantern/core.py": "x = 1\n", "lantern/util/a.py": "y = 2\n"}
    results = quotes.check_report(report, files, run_commit=commit)
    assert sorted((r.citation.path, r.status) for r in results) == [
        ("lantern/", quotes.VERIFIED), ("lantern/core.py", quotes.VERIFIED)]
    wrapped = {f"lantern-main/{path}": text for path, text in files.items()}
    assert all(r.status == quotes.VERIFIED for r in quotes.check_report(report, wrapped, run_commit=commit))

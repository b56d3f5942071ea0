"""One reading of citations (records.validation.citations): what validation judges is what the quotation
check verifies, path for path and range for range. Pure: no database."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from records.validation import quotes
from records.parsing import parse_report
from records.validation import (
    ERROR,
    MemberInput,
    RunFacts,
    current_form,
    validate_member,
    validate_set,
)
from records.validation.citations import clean_lines, same_commit
from tests.records.test_quotes import COMMIT
from tests.records.test_quotes import SOURCE as QUOTED_SOURCE

OTHER = "1" * 40
RUN = RunFacts("AAS-2026-01-01-store-01", COMMIT)

SOURCE = {"src/store.py": QUOTED_SOURCE["src/store.py"]}  # the file test_quotes checks against


def member(body: str) -> str:
    """A current-form member report (a slug ID) with `body` under its one declaration."""
    return f"# Memory\n\n## Shared records\n\n#### MEM-OBJ-store-row — Row\n\n{body}\n"


def quote(text: str, anchor: str) -> str:
    return "\n".join(f"> {line}" for line in text.split("\n")) + f"\n> --- {anchor}\n"


def anchors(text: str, files=SOURCE) -> dict[tuple[str, str], str]:
    return {(r.citation.path, r.citation.lines): r.status
            for r in quotes.check_report(parse_report(text), files, run_commit=COMMIT)
            if r.citation.kind == quotes.ANCHOR}


def quotation(text: str, files=SOURCE) -> quotes.CheckResult:
    [result] = [r for r in quotes.check_report(parse_report(text), files, run_commit=COMMIT)
                if r.citation.kind == quotes.QUOTATION]
    return result


def line_anchor_findings(text: str) -> list[tuple[int, str]]:
    """(line, the anchor as quoted) of each prose-line-anchor finding validation makes."""
    found = validate_member(MemberInput("memory.md", "memory", parse_report(text)), RUN)
    return sorted((f.line, re.match(r'^"(.*)" carries line numbers', f.message).group(1))
                  for f in found if f.code == "prose-line-anchor")


# --- ranges: every range of a list is checked ---------------------------------------------------


def test_a_prose_anchor_whose_second_range_lies_outside_the_file_is_range_outside():
    # The check used to read `src/store.py:1-2` of this anchor and call it verified.
    assert anchors(member("See src/store.py:1-2,7-12 for the write.")) == {
        ("src/store.py", "1-2,7-12"): quotes.RANGE_OUTSIDE}
    assert anchors(member("See src/store.py:1-2, 7–12.")) == {("src/store.py", "1-2,7-12"): quotes.RANGE_OUTSIDE}
    assert anchors(member("See src/store.py:1-2,0.")) == {("src/store.py", "1-2,0"): quotes.RANGE_OUTSIDE}


def test_a_prose_anchor_with_two_ranges_inside_the_file_keeps_both_ranges_lines():
    [result] = [r for r in quotes.check_report(parse_report(member("See src/store.py:1-2, 7–8.")), SOURCE,
                                               run_commit=COMMIT) if r.citation.kind == quotes.ANCHOR]
    assert result.status == quotes.VERIFIED
    assert [n for n, _ in result.source_lines] == [1, 2, 7, 8]


def test_a_quotation_whose_text_lies_in_no_cited_range_is_not_found_and_names_where_it_is():
    result = quotation(member(quote("db.insert(row)", f"`src/store.py:1-2,6-8` @ `{COMMIT}`")))
    assert result.status == quotes.NOT_FOUND
    assert result.candidates == ("3",)
    assert quotation(member(quote("row = db.get(key)", f"`src/store.py:1-2,6-8` @ `{COMMIT}`"))).status == \
        quotes.VERIFIED


def test_a_quotation_whose_second_range_lies_outside_the_file_is_range_outside():
    result = quotation(member(quote("db.insert(row)", f"`src/store.py:1-4,7-12` @ `{COMMIT}`")))
    assert result.status == quotes.RANGE_OUTSIDE


def test_overlapping_ranges_do_not_make_one_occurrence_two():
    # Searched range by range, line 3 was found twice and called ambiguous.
    assert quotation(member(quote("db.insert(row)", f"`src/store.py:1-4,3-8` @ `{COMMIT}`"))).status == \
        quotes.VERIFIED


def test_a_quotation_across_two_adjacent_ranges_is_inside_them():
    text = member(quote("db.insert(row)\n    return row", f"`src/store.py:1-3,4-8` @ `{COMMIT}`"))
    assert quotation(text).status == quotes.VERIFIED


def test_a_quotation_anchor_with_an_en_dash_or_an_open_range_reads_its_path_and_range():
    # The parser leaves these ranges on the path: the check looked for a file `src/store.py:6–8`.
    result = quotation(member(quote("row = db.get(key)", f"`src/store.py:6–8` @ `{COMMIT}`")))
    assert (result.citation.path, result.citation.lines, result.status) == ("src/store.py", "6-8", quotes.VERIFIED)
    result = quotation(member(quote("row = db.get(key)", f"`src/store.py:6-` @ `{COMMIT}`")))
    assert (result.citation.path, result.citation.lines, result.status) == ("src/store.py", "6-",
                                                                             quotes.RANGE_OUTSIDE)


# --- what is an anchor: both sides read the same ---------------------------------------------------------

ANCHOR_CASES = [
    # (prose, the anchors as written that validation flags, what the check reads: {(path, lines)})
    ("See src/store.py:1-2,7-9 here.", ["src/store.py:1-2,7-9"], {("src/store.py", "1-2,7-9")}),
    ("See pkg/unit.test.ts:3-4 here.", ["pkg/unit.test.ts:3-4"], {("pkg/unit.test.ts", "3-4")}),
    ("Source:src/store.py:3 here.", ["src/store.py:3"], {("src/store.py", "3")}),
    ("See src\\store.py:3 (Windows).", ["src\\store.py:3"], {("src/store.py", "3")}),
    ("See ./src/store.py:3 and my\\_file.py:4.", ["./src/store.py:3", "my\\_file.py:4"],
     {("src/store.py", "3"), ("my_file.py", "4")}),
    ("See .eslintrc.js:3.", [".eslintrc.js:3"], {(".eslintrc.js", "3")}),
    ("See src/store.py:12- for the rest.", ["src/store.py:12-"], {("src/store.py", "12-")}),
    ("See src/store.py:3:5 (line and column).", ["src/store.py:3"], {("src/store.py", "3")}),
    # not anchors, on either side: a range run into letters or dashes, a partial path
    ("See src/store.py:12-30abc and src/store.py:3--4.", [], set()),
    ("See a+b.py:3 and http://example.com/x.py:3.", [], set()),
]


def test_validation_flags_exactly_the_anchors_the_check_reads():
    for prose, flagged, read in ANCHOR_CASES:
        text = member(prose)
        assert [written for _, written in line_anchor_findings(text)] == sorted(flagged), prose
        assert set(anchors(text)) == read, prose


def test_a_blob_link_ending_a_sentence_names_the_file_without_the_full_stop():
    link = f"https://github.com/acme/store/blob/{COMMIT}/src/store.py"
    assert anchors(member(f"Read {link}. Then {link}#L6C5-L8C9, too.")) == {
        ("src/store.py", ""): quotes.VERIFIED, ("src/store.py", "6-8"): quotes.VERIFIED}


# --- the property: an independent reader (the generator) against both ----------------------------------

_FOLDERS = st.lists(st.sampled_from(["src", "lib", "pkg-a", "a_b", "v1.2", ".github", "über", "x"]), max_size=3)
_STEMS = st.sampled_from(["store", "unit.test", "a-b", "x1", "__init__", ".eslintrc", "my_file"])
_EXTENSIONS = st.sampled_from(["py", "ts", "md", "JSON", "mp4", "c"])
_PREFIXES = st.sampled_from(["", "(", "[", '"', "'", "*", "**", "`", "./", ":", "<"])
_SUFFIXES = st.sampled_from(["", ")", "]", ".", ",", ";", ":", '"', "'", "*", "**", "`", "!", "?", ").", ":5"])
_FILLERS = st.sampled_from(["see", "and", "the write", "—", "e.g.", "v1.2", "localhost:8080", "noon (12:30)",
                            "x.py", "`src/`", "a:b", "store.py:12-30abc", "http://example.com/a.py:3", "a+b.py:3"])


@st.composite
def _range(draw) -> tuple[str, tuple[int, int] | None]:
    """A range as written, and the lines it names (None: it names none, `12-`)."""
    first = draw(st.integers(0, 12))
    shape = draw(st.sampled_from(["single", "hyphen", "en dash", "open"]))
    if shape == "single":
        return str(first), (first, first)
    if shape == "open":
        return f"{first}{draw(st.sampled_from(['-', '–']))}", None
    last = draw(st.integers(0, 12))
    return f"{first}{'-' if shape == 'hyphen' else '–'}{last}", (first, last)


@st.composite
def _line_anchor(draw) -> tuple[str, str, frozenset | None]:
    """`path:ranges` as written, the path it names, and the set of ranges (None when one does not read)."""
    folders = draw(_FOLDERS)
    stem = draw(_STEMS)
    written_stem = stem.replace("_", "\\_") if draw(st.booleans()) else stem  # Markdown's escape
    extension = draw(_EXTENSIONS)
    # `\` separates folders where a letter or digit follows it: `\_` is Markdown's escape, `\.` no separator
    windows = draw(st.booleans()) and all(part[0].isalnum() for part in [*folders[1:], stem])
    separator = "\\" if windows else "/"
    written_path = separator.join([*folders, f"{written_stem}.{extension}"])
    ranges = draw(st.lists(_range(), min_size=1, max_size=3))
    commas = [draw(st.sampled_from([",", ", "])) for _ in ranges[1:]]
    written_ranges = ranges[0][0] + "".join(c + r for c, (r, _) in zip(commas, ranges[1:]))
    lines = None if any(r is None for _, r in ranges) else frozenset(r for _, r in ranges)
    return f"{written_path}:{written_ranges}", "/".join([*folders, f"{stem}.{extension}"]), lines


@st.composite
def _blob_link(draw) -> tuple[str, str, str, frozenset]:
    path = "/".join([*draw(_FOLDERS), f"{draw(_STEMS)}.{draw(_EXTENSIONS)}"])
    commit = draw(st.sampled_from([COMMIT, OTHER]))
    first, last = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    return (f"https://github.com/acme/store/blob/{commit}/{path}#L{first}-L{last}", path, commit,
            frozenset({(first, last)}))


@st.composite
def _prose_line(draw):
    """A prose line of fillers, line anchors and blob links, each anchor with punctuation around it."""
    items, expected_anchors, expected_links = [], [], []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["filler", "anchor", "anchor", "link"]))
        if kind == "filler":
            items.append(draw(_FILLERS))
            continue
        prefix, suffix = draw(_PREFIXES), draw(_SUFFIXES)
        if kind == "anchor":
            written, path, lines = draw(_line_anchor())
            items.append(prefix + written + suffix)
            expected_anchors.append(((prefix if prefix == "./" else "") + written, path, lines))  # `./` reads as nothing
        else:
            link, path, commit, lines = draw(_blob_link())
            items.append(prefix.replace("./", "") + link + suffix.replace(":5", ""))
            expected_links.append((path, commit, lines))
    return " ".join(items), expected_anchors, expected_links


def _read(lines: str) -> frozenset | None:
    ranges = quotes.parse_ranges(lines)
    return None if ranges is None else frozenset(ranges)


@settings(max_examples=300, deadline=None)
@given(line=_prose_line(), present=st.booleans())
def test_every_anchor_validation_recognises_is_checked_with_the_same_path_and_ranges(line, present):
    prose, expected_anchors, expected_links = line
    text = member(prose)
    number = text.splitlines().index(prose) + 1

    # Validation: one prose-line-anchor finding per anchor as written, on its line; one commit finding per link
    # at another commit (and none from the quotation check).
    # (A finding is about a line: the same anchor twice on one line is one finding.)
    assert set(line_anchor_findings(text)) == {(number, written) for written, _, _ in expected_anchors}
    found = validate_member(MemberInput("memory.md", "memory", parse_report(text)), RUN)
    others = {(f.line, f.severity, f.message.split(" names")[0]) for f in found if f.code == "quote-commit-mismatch"}
    assert others == {(number, ERROR, f"The anchor `{path}:{min(lines)[0]}-{min(lines)[1]}`")
                      for path, commit, lines in expected_links if commit == OTHER}

    # The check: every anchor validation flagged, with the same path and the same set of ranges, and no other.
    report = parse_report(text)
    checked = {(c.path, c.commit, _read(c.lines)) for c in quotes.citations_of(report)
               if c.kind == quotes.ANCHOR and c.lines}
    assert checked == ({(path, "", lines) for _, path, lines in expected_anchors}
                       | {(path, commit, lines) for path, commit, lines in expected_links})

    # And each gets the status its ranges call for, every range counted.
    files = {path: SOURCE["src/store.py"] for _, path, _ in expected_anchors} if present else {}
    results = quotes.check_report(report, files, run_commit=COMMIT)
    for result in results:
        citation = result.citation
        if citation.kind != quotes.ANCHOR or not citation.lines or citation.commit:
            continue
        ranges = _read(citation.lines)
        if not present:
            expected = quotes.PATH_MISSING
        elif ranges is None or any(not 1 <= first <= last <= 8 for first, last in ranges):
            expected = quotes.RANGE_OUTSIDE
        else:
            expected = quotes.VERIFIED
        assert result.status == expected, (citation, result.message)
    assert not [f for f in quotes.findings_for("memory.md", results, current=True) if "commit" in f.code]


# --- whitespace never changes a quotation's status, whichever ranges it cites ---------------------------------

_GAPS = st.sampled_from([" ", "  ", "\n", "\n    ", "\t", " \n  "])


@settings(max_examples=150, deadline=None)
@given(start=st.integers(1, 8), length=st.integers(1, 4), gaps=st.lists(_GAPS, min_size=12, max_size=12),
       lines=st.sampled_from(["", "1-8", "1-4,6-8", "6–8,1-4", "1-3,4-8", "1-4,3-8", "2,3-4", "7-9", "1-2,6–7"]))
def test_reflowing_a_quotation_never_changes_its_status_whatever_its_ranges(start, length, gaps, lines):
    source = SOURCE["src/store.py"].split("\n")
    words = " ".join(source[start - 1:start - 1 + length]).split() or ["def"]
    anchor = f"`src/store.py{':' + lines if lines else ''}` @ `{COMMIT}`"
    reflowed = "".join(word + (gaps[i % len(gaps)] if i < len(words) - 1 else "") for i, word in enumerate(words))
    plain = quotes.check_citation(
        quotes.Citation(quotes.QUOTATION, 1, " ".join(words), "src/store.py", clean_lines(lines), COMMIT),
        SOURCE, run_commit=COMMIT)
    written = quotation(member(quote(reflowed, anchor)))
    assert written.citation.lines == clean_lines(lines)
    assert (plain.status, plain.candidates, plain.source_lines) == \
        (written.status, written.candidates, written.source_lines)


# --- commits: one comparison ---------------------------------------------------------------------------


def test_one_commit_abbreviates_the_other_either_way():
    assert same_commit(COMMIT[:7], COMMIT) and same_commit(COMMIT, COMMIT[:7]) and same_commit(f"`{COMMIT}`", COMMIT)
    assert not same_commit(COMMIT[:6], COMMIT)  # too short to name a commit
    assert not same_commit("release", "release-2")  # only hexadecimal hashes abbreviate
    assert not same_commit(OTHER, COMMIT)


def test_an_abbreviated_run_commit_takes_the_full_hash_in_anchors_front_matter_and_register():
    run = RunFacts("AAS-2026-01-01-store-01", COMMIT[:10])
    text = ("---\nrun-id: AAS-2026-01-01-store-01\nreviewed-boundary: " + COMMIT + "\n---\n"
            + member(quote("db.insert(row)", f"`src/store.py` @ `{COMMIT}`")))
    found = validate_member(MemberInput("memory.md", "memory", parse_report(text)), run)
    assert not [f for f in found if f.code in ("quote-commit-mismatch", "reviewed-boundary-mismatch")]
    results = quotes.check_report(parse_report(text), SOURCE, run_commit=run.reviewed_boundary)
    assert [r.status for r in results if r.citation.kind == quotes.QUOTATION] == [quotes.VERIFIED]


def test_a_front_matter_boundary_at_another_commit_is_still_a_mismatch():
    text = "---\nreviewed-boundary: " + OTHER[:12] + "\n---\n" + member("Nothing quoted.")
    found = validate_member(MemberInput("memory.md", "memory", parse_report(text)), RUN)
    assert [f.code for f in found if f.code == "reviewed-boundary-mismatch"] == ["reviewed-boundary-mismatch"]


def test_a_register_row_naming_the_commit_abbreviated_is_at_the_boundary():
    def overview(revision: str) -> str:
        return ("# Overview\n\n## Source register\n\n"
                "| Source ID | Kind | Identity/location | Revision | Evidence layer | Inspected scope | Citation anchors | "
                "Access gaps |\n|---|---|---|---|---|---|---|---|\n"
                f"| SRC-1 | Git | https://github.com/acme/store | {revision} | implementation | all | src/ | none |\n")
    codes = [f.code for f in validate_member(MemberInput("overview.md", "overview",
                                                         parse_report(overview(f"`{COMMIT[:7]}` (main)"))), RUN)]
    assert "no-source-at-boundary" not in codes
    codes = [f.code for f in validate_member(MemberInput("overview.md", "overview",
                                                         parse_report(overview(f"`{OTHER[:7]}`"))), RUN)]
    assert "no-source-at-boundary" in codes


def test_a_quoted_blob_links_path_is_looked_for_in_the_register():
    # The register check split the link at its first colon and looked for `https`.
    link = f"https://github.com/acme/store/blob/{COMMIT}/lib/store.py#L3"
    memory = MemberInput("memory.md", "memory", parse_report(member(quote("db.insert(row)", link))))
    register = parse_report("# Overview\n\n## Source register\n\n"
                            "| Source ID | Kind | Identity/location | Revision | Evidence layer | Inspected scope | "
                            "Citation anchors | Access gaps |\n|---|---|---|---|---|---|---|---|\n"
                            f"| SRC-1 | Git | https://github.com/acme/store | {COMMIT} | implementation | src/ | src/ "
                            "| none |\n")
    found = validate_set([memory, MemberInput("overview.md", "overview", register)], RUN)
    assert [f.message.split(" is not")[0] for f in found if f.code == "quotation-path-not-registered"] == [
        "The quoted path lib/store.py"]


# --- generations: asked of validation -------------------------------------------------------------------------


def test_a_member_naming_no_record_takes_the_generation_of_its_set():
    slug = MemberInput("memory.md", "memory", parse_report(member("x")))
    numbered = MemberInput("runtime.md", "runtime", parse_report("# Runtime\n\n#### RT-OBJ-2 — Row\n\nx\n"))
    bare = MemberInput("notes.md", "memory", parse_report("# Notes\n\nNo record here.\n"))
    assert current_form([slug, bare]) == {"memory.md": True, "notes.md": True}
    assert current_form([numbered, numbered, bare]) == {"runtime.md": False, "notes.md": False}


def test_a_message_names_the_path_as_it_is_cited():
    # `str.capitalize` lower-cased the rest of the sentence: `src/README.md` became `src/readme.md`.
    result = quotation(member(quote("Memories are rows.", f"`docs/README.md` @ `{OTHER}`")))
    assert result.message.startswith(f"The quotation from docs/README.md names commit {OTHER}")
    result = quotation(member(quote("Memories are rows.", f"`docs/README.md` @ `{COMMIT}`")),
                       {"docs/README.md": "# Store\n"})
    assert result.message.startswith("The quotation from docs/README.md does not occur in docs/README.md")


def test_the_citation_memo_does_not_keep_a_report_alive():
    import gc
    import weakref

    from records.validation import citations

    report = parse_report(member("See `src/store.py:3` for the write.\n"))
    assert citations.prose_citations(report)
    gone = weakref.ref(report)
    del report
    gc.collect()
    assert gone() is None

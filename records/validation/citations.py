"""What a citation of the reviewed source is, read one way (DESIGN §6).

Validation's rules about citations (`sources`: the commit an anchor names,
line anchors in prose, quoted paths in the Source register) and the
quotation check against the run's snapshot (`records.validation.quotes`) both read a
report's citations here, so what one judges is exactly what the other checks.

A quotation is the parser's (`records.parsing`): its body and the anchor
that closes it, `path[:ranges] @ commit` or a GitHub blob link. A prose
anchor is cited outside quotations, `>` lines, fences and the front matter:

- a line anchor `path:ranges` (`src/store.py:12-30`, `store.py:1-2, 7–9`):
  a path ending in a file name with an extension (`unit.test.ts` and
  `.eslintrc.js` too), `/` or `\\` between its folders, starting where no
  path character (nor `+`, `@`) precedes it; ranges are `F` or `F-L` (hyphen
  or en dash), several joined by a comma and at most one space; an open range
  (`12-`) is read and then refused as a range, a range run into letters or
  dashes (`12-30abc`, `3--4`) is no anchor;
- a GitHub blob link `https://github.com/OWNER/REPO/blob/COMMIT/path#Ln-Lm`
  (columns `#L6C2-L8C4` aside, trailing sentence punctuation not part of the path);
- a backticked path of the snapshot (`src/store.py`, a folder `src/`).

A path reads without backticks, `./`, Markdown's `\\_` escape and Windows'
`\\`; ranges read without spaces, en dashes as hyphens (`1-2,7-9`).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from records.document import ParsedReport

from .reading import prose_lines, strip_ticks, per_report

QUOTATION = "quotation"
ANCHOR = "anchor"


@dataclass(frozen=True)
class Citation:
    kind: str  # QUOTATION or ANCHOR
    line: int  # 1-based line in the member report
    text: str  # the quoted body ("" for an anchor)
    path: str
    lines: str  # "12-30", "12", "1-2,7-9", or "" when no range is cited
    commit: str  # "" when the citation names none
    written: str = ""  # a prose anchor as the report writes it (`src/store.py:1-2, 7–9`, the blob link)
    link: bool = False  # cited through a GitHub blob link


# --- the grammar ------------------------------------------------------------

_RANGE = r"\d+(?:[-–]\d*)?"
# Atomic: a range list is read whole or not at all, never shortened to fit (`12-30abc` is not `12`).
_RANGES = rf"(?>{_RANGE}(?:,\s?{_RANGE})*)(?![\w–-])"
_SEGMENT = r"(?:[\w.-]|\\_)"
_FOLDER_SEPARATOR = r"(?:/|\\(?=[^\W_]))"
_FILE = rf"\.?(?:[\w-]|\\_){_SEGMENT}*\.[A-Za-z][A-Za-z0-9]*"  # `.eslintrc.js` too
# The lookahead is what a path can be followed by (no space or colon before `:N`): it turns away every
# other word of a long paragraph at once, where the path pattern would backtrack through it.
LINE_ANCHOR_RE = re.compile(
    rf"(?<![\w/.@\\+-])(?=[^\s:]*+:\d)(?P<path>(?:{_SEGMENT}+{_FOLDER_SEPARATOR})*{_FILE}):(?P<lines>{_RANGES})"
)
_PATH_LINES_RE = re.compile(rf"(?P<path>.+?):(?P<lines>{_RANGES})")
_RANGE_PART_RE = re.compile(r"^(\d+)(?:-(\d+))?$")
BLOB_RE = re.compile(
    r"https?://github\.com/(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)/blob/(?P<commit>[^/\s]+)/"
    r"(?P<path>[^\s#?)\]>`\"']*[^\s#?)\]>`\"'.,;:!])(?:\?[^\s#)\]>`]*)?"
    r"(?:#L(?P<first>\d+)(?:C\d+)?(?:-L?(?P<last>\d+)(?:C\d+)?)?)?"
)
_COLON_DIGIT_RE = re.compile(r":\d")
_TICKED_RE = re.compile(r"`(?P<token>[^`\s]+)`")
# File name endings that make a backticked word a path, not an identifier (`self.messages.append`).
SOURCE_EXTENSIONS = frozenset("""
    py pyi js mjs cjs jsx ts tsx mts cts rs go java kt kts scala rb php c h cc cpp cxx hh hpp cs swift m mm
    md mdx rst txt json jsonc json5 yaml yml toml lock cfg ini conf sh bash zsh ps1 sql html htm css scss sass
    less vue svelte ipynb xml gradle properties proto graphql gql tf dockerfile env example sample csv tsv
""".split())


def clean_path(path: str) -> str:
    """A cited path as the snapshot names it: no backticks, `\\_` escapes, Windows separators or leading `./`."""
    path = strip_ticks(path).replace("\\_", "_").replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def clean_lines(lines: str) -> str:
    """Ranges as one spelling: `1-2, 7–9` → `1-2,7-9`."""
    return "".join(lines.split()).replace("–", "-")


def parse_ranges(lines: str) -> list[tuple[int, int]] | None:
    """[(first, last)] of "12-30", "12" or "1-2,7-9"; None when a part does not read as a range (`12-`)."""
    ranges = []
    for part in clean_lines(lines).split(","):
        match = _RANGE_PART_RE.match(part)
        if not match:
            return None
        first = int(match.group(1))
        ranges.append((first, int(match.group(2) or first)))
    return ranges


def same_commit(named: str, commit: str) -> bool:
    """Whether two commit names name one commit: equal, or one abbreviates the other (seven hex digits or more)."""
    named, commit = strip_ticks(named).lower(), strip_ticks(commit).lower()
    if named == commit:
        return True
    short, long = sorted((named, commit), key=len)
    return bool(re.fullmatch(r"[0-9a-f]{7,}", short)) and long.startswith(short)


# --- reading a report's citations -----------------------------------------------


def quotation_citation(quotation) -> Citation:
    """A parsed `Quotation` as a citation: its anchor's path, ranges and commit (a blob link's when it is one)."""
    written, lines, commit = quotation.path, quotation.lines, strip_ticks(quotation.commit)
    blob = BLOB_RE.search(written)
    if blob:
        path, blob_lines, blob_commit = _from_blob(blob)
        return Citation(QUOTATION, quotation.line, quotation.text, path, clean_lines(lines) or blob_lines,
                        commit or blob_commit, written, True)
    ranged = None if lines else _PATH_LINES_RE.fullmatch(strip_ticks(written))
    if ranged:  # the ranges the parser left on the path (`store.py:6–8`, `store.py:12-`)
        written, lines = ranged.group("path"), ranged.group("lines")
    return Citation(QUOTATION, quotation.line, quotation.text, clean_path(written), clean_lines(lines), commit,
                    quotation.path)


def _from_blob(match: re.Match) -> tuple[str, str, str]:
    first, last = match.group("first"), match.group("last")
    lines = f"{first}-{last}" if first and last else (first or "")
    return clean_path(match.group("path")), lines, match.group("commit")


def _looks_like_source_path(token: str) -> bool:
    if "://" in token or token.startswith(("/", "~", "$", "-", "@")) or re.search(r"[*?\[\]{}<>()=,;|'\"]", token):
        return False
    if re.match(r"^[A-Za-z]:", token) or ".." in token.split("/"):
        return False
    last = token.rstrip("/").rsplit("/", 1)[-1]
    if token.endswith("/"):
        return "/" in token.rstrip("/") or bool(last)
    stem, dot, extension = last.rpartition(".")
    return bool(dot and stem.strip(".") and extension.lower() in SOURCE_EXTENSIONS)


def prose_citations_in(lines: Iterable[tuple[int, str]]) -> list[Citation]:
    """Every prose anchor of `(line number, text)` lines, each mention, line by line: blob links, then
    line anchors, then backticked paths (a span read as one form is not read again as another)."""
    found: list[Citation] = []
    for number, text in lines:
        taken: list[tuple[int, int]] = []
        if "/blob/" in text:
            for match in BLOB_RE.finditer(text):
                taken.append(match.span())
                path, ranges, commit = _from_blob(match)
                if path:
                    found.append(Citation(ANCHOR, number, "", path, ranges, commit, match.group(0), True))
        if _COLON_DIGIT_RE.search(text):  # a line anchor is `path:N`; the full pattern is slow on long prose
            for match in LINE_ANCHOR_RE.finditer(text):
                if any(start <= match.start() < end for start, end in taken):
                    continue
                taken.append(match.span())
                found.append(Citation(ANCHOR, number, "", clean_path(match.group("path")),
                                      clean_lines(match.group("lines")), "", match.group(0)))
        if "`" in text:
            for match in _TICKED_RE.finditer(text):
                if any(start <= match.start(1) < end for start, end in taken):
                    continue
                token = match.group("token")
                if _looks_like_source_path(token) and (path := clean_path(token)):
                    found.append(Citation(ANCHOR, number, "", path, "", "", token))
    return found


@per_report()  # validation reads them in three checks and the quotation check once more
def _read(report: ParsedReport) -> tuple[tuple[Citation, ...], tuple[Citation, ...]]:
    return (tuple(quotation_citation(q) for q in report.quotations),
            tuple(prose_citations_in(prose_lines(report))))


def quotation_citations(report: ParsedReport) -> tuple[Citation, ...]:
    """The report's quotations as citations, in order."""
    return _read(report)[0]


def prose_citations(report: ParsedReport) -> tuple[Citation, ...]:
    """Every anchor cited in the report's prose (`_prose_lines`), each mention, in order of its line."""
    return _read(report)[1]


# --- what a citation is called, and its commit ---------------------------------------


def where(citation: Citation, *, opening: bool = False) -> str:
    """"the quotation from src/store.py:6-8" or "the anchor `src/README.md`" ("The …" to open a sentence;
    never `str.capitalize`, which would lower-case the path)."""
    place = f"{citation.path}:{citation.lines}" if citation.lines else citation.path
    what = "quotation from " + place if citation.kind == QUOTATION else f"anchor `{place}`"
    return f"{'The' if opening else 'the'} {what}"


def other_commit(citation: Citation, run_commit: str) -> str | None:
    """What is wrong when `citation` names another commit than the run's (what to do included); None when it does not."""
    run_commit = run_commit.strip()
    if not citation.commit or not run_commit or same_commit(citation.commit, run_commit):
        return None
    return (f"{where(citation, opening=True)} names commit {citation.commit}, not the run's commit {run_commit}; "
            "quote the reviewed commit.")

"""Quotations and source anchors checked against the run's frozen source (DESIGN §6).

Pure: a parsed report and a mapping `{path: text}` of the snapshot's files in,
one `CheckResult` per citation and `Finding`s out; no ORM.

Citations come from the parser (`records.parsing` finds quotations: `> …`
lines closed by `> --- \\`path[:F-L]\\` @ \\`commit\\``, the plain-text seeds'
`--- path @ commit`, and either with a GitHub blob link as the anchor) and
from prose outside quotations and fences: `path`, `path:12-30` and blob
links `https://github.com/OWNER/REPO/blob/COMMIT/path#Ln-Lm`.

A quotation is `verified` when, after collapsing every run of whitespace to
one space on both sides, its text occurs exactly once in the file, or exactly
once inside the cited 1-based inclusive line range. Otherwise, checked in
this order: `commit-mismatch` (the anchor names another commit than the
run's), `unverified` (no snapshot yet), `path-missing`, `range-outside`,
`not-found`, `ambiguous` (with the candidate ranges). A prose anchor is
checked for its commit, path and range only.

Generations: older members (numbered IDs) matched quotations as plain
substrings, where a second occurrence was no error: there `ambiguous` is a
warning, as is a prose path that the snapshot lacks (older prose named paths
freely, absent ones included).
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .document import ParsedReport
from .validation import ERROR, WARNING, Finding, _prose_lines

VERIFIED = "verified"
NOT_FOUND = "not-found"
AMBIGUOUS = "ambiguous"
PATH_MISSING = "path-missing"
RANGE_OUTSIDE = "range-outside"
COMMIT_MISMATCH = "commit-mismatch"
UNVERIFIED = "unverified"
STATUSES = (VERIFIED, NOT_FOUND, AMBIGUOUS, PATH_MISSING, RANGE_OUTSIDE, COMMIT_MISMATCH, UNVERIFIED)

QUOTATION = "quotation"
ANCHOR = "anchor"

# The matched lines kept with a result: enough to read, bounded for storage.
MAX_SOURCE_LINES = 200
MAX_CANDIDATES = 20

FINDING_CODES = {
    NOT_FOUND: "quote-not-found",
    AMBIGUOUS: "quote-ambiguous",
    PATH_MISSING: "quote-path-missing",
    RANGE_OUTSIDE: "quote-range-outside",
    COMMIT_MISMATCH: "quote-commit-mismatch",
}
UNVERIFIED_CODE = "quote-unverified"
# What validation already says about a foreign commit, without the snapshot; ours replaces it.
SUPERSEDED_CODES = {"quotation-commit-mismatch"}

BLOB_RE = re.compile(
    r"https?://github\.com/(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)/blob/(?P<commit>[^/\s]+)/"
    r"(?P<path>[^\s#?)\]>`\"']+)(?:\?[^\s#)\]>`]*)?(?:#L(?P<first>\d+)(?:-L?(?P<last>\d+))?)?"
)
# `path:12-30` in prose (the shape validation calls a prose line anchor).
_PROSE_RANGE_RE = re.compile(
    r"(?<![\w/.@:-])(?P<path>(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]*):(?P<lines>\d+(?:[-–]\d+)?)(?![\d\w])"
)
_TICKED_RE = re.compile(r"`(?P<token>[^`\s]+)`")
_RANGE_RE = re.compile(r"^(\d+)(?:[-–](\d+))?$")
# File name endings that make a backticked word a path, not an identifier (`self.messages.append`).
SOURCE_EXTENSIONS = frozenset("""
    py pyi js mjs cjs jsx ts tsx mts cts rs go java kt kts scala rb php c h cc cpp cxx hh hpp cs swift m mm
    md mdx rst txt json jsonc json5 yaml yml toml lock cfg ini conf sh bash zsh ps1 sql html htm css scss sass
    less vue svelte ipynb xml gradle properties proto graphql gql tf dockerfile env example sample csv tsv
""".split())


@dataclass(frozen=True)
class Citation:
    kind: str  # QUOTATION or ANCHOR
    line: int  # 1-based line in the member report
    text: str  # the quoted body ("" for an anchor)
    path: str
    lines: str  # "12-30", "12", or "" when no range is cited
    commit: str  # "" when the citation names none


@dataclass(frozen=True)
class CheckResult:
    citation: Citation
    status: str
    message: str = ""
    source_lines: tuple[tuple[int, str], ...] = ()  # (line number, text) of the matched or cited range
    candidates: tuple[str, ...] = ()  # "F-L" ranges where the text occurs (ambiguous, or outside the range)


# --- citations ------------------------------------------------------------


def _strip_ticks(value: str) -> str:
    return value.strip().strip("`").strip()


def _clean_path(path: str) -> str:
    path = _strip_ticks(path).replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def _from_blob(match: re.Match) -> tuple[str, str, str]:
    first, last = match.group("first"), match.group("last")
    lines = f"{first}-{last}" if first and last else (first or "")
    return _clean_path(match.group("path")), lines, match.group("commit")


def _quotation_citation(quotation) -> Citation:
    path, lines, commit = _clean_path(quotation.path), quotation.lines, _strip_ticks(quotation.commit)
    blob = BLOB_RE.search(quotation.path)
    if blob:
        path, blob_lines, blob_commit = _from_blob(blob)
        lines, commit = lines or blob_lines, commit or blob_commit
    return Citation(QUOTATION, quotation.line, quotation.text, path, lines, commit)


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


def prose_anchors(report: ParsedReport) -> list[Citation]:
    """Paths, `path:F-L` and blob links cited in prose (quotations and fences excluded), first mention each.

    Prose lines are validation's (`_prose_lines`: quotations, `>` lines, fences and front matter left out).
    """
    seen: set[tuple[str, str, str]] = set()
    found: list[Citation] = []

    def add(line: int, path: str, lines: str, commit: str) -> None:
        key = (path, lines, commit)
        if path and key not in seen:
            seen.add(key)
            found.append(Citation(ANCHOR, line, "", path, lines, commit))

    for number, text in _prose_lines(report):
        taken: list[tuple[int, int]] = []
        for match in BLOB_RE.finditer(text):
            taken.append(match.span())
            add(number, *_from_blob(match))
        for match in _PROSE_RANGE_RE.finditer(text):
            if any(start <= match.start() < end for start, end in taken):
                continue
            taken.append(match.span())
            add(number, _clean_path(match.group("path")), match.group("lines").replace("–", "-"), "")
        for match in _TICKED_RE.finditer(text):
            if any(start <= match.start(1) < end for start, end in taken):
                continue
            token = match.group("token")
            if _looks_like_source_path(token):
                add(number, _clean_path(token), "", "")
    return found


def citations_of(report: ParsedReport) -> list[Citation]:
    """Every quotation of the report, then every prose anchor, each in order of its line."""
    return [_quotation_citation(q) for q in report.quotations] + prose_anchors(report)


# --- matching -------------------------------------------------------------


def collapse(text: str) -> str:
    """Whitespace runs as one space, none at either end: how quote and file are compared."""
    return " ".join(text.split())


class SourceText:
    """A file's lines with its whitespace-collapsed text and the line each collapsed offset came from."""

    def __init__(self, text: str) -> None:
        self.lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        if self.lines and self.lines[-1] == "" and len(self.lines) > 1:
            self.lines.pop()  # a final newline ends the last line; it does not start another
        self._collapsed: dict[tuple[int, int], tuple[str, list[int], list[int]]] = {}

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def occurrences(self, needle: str, first: int = 1, last: int | None = None) -> list[tuple[int, int]]:
        """(first line, last line) of each occurrence of collapsed `needle` within lines first..last."""
        last = self.line_count if last is None else last
        key = (first, last)
        if key not in self._collapsed:
            self._collapsed[key] = self._collapse_lines(first, last)
        haystack, starts, numbers = self._collapsed[key]
        found = []
        at = haystack.find(needle) if needle else -1
        while at != -1:
            begin = numbers[bisect.bisect_right(starts, at) - 1]
            end = numbers[bisect.bisect_right(starts, at + len(needle) - 1) - 1]
            found.append((begin, end))
            at = haystack.find(needle, at + 1)
        return found

    def _collapse_lines(self, first: int, last: int) -> tuple[str, list[int], list[int]]:
        starts: list[int] = []  # collapsed offset where each non-empty line starts
        numbers: list[int] = []
        pieces: list[str] = []
        offset = 0
        for number in range(first, last + 1):
            piece = collapse(self.lines[number - 1])
            if not piece:
                continue
            if pieces:
                offset += 1  # the single space that joins two lines
            starts.append(offset)
            numbers.append(number)
            pieces.append(piece)
            offset += len(piece)
        return " ".join(pieces), starts, numbers

    def excerpt(self, first: int, last: int) -> tuple[tuple[int, str], ...]:
        last = min(last, self.line_count, first + MAX_SOURCE_LINES - 1)
        return tuple((n, self.lines[n - 1]) for n in range(first, last + 1))


def same_commit(named: str, commit: str) -> bool:
    """An abbreviated hash of at least seven digits names the commit it starts."""
    named, commit = _strip_ticks(named).lower(), commit.strip().lower()
    return named == commit or (len(named) >= 7 and commit.startswith(named))


class SnapshotPaths:
    """A snapshot's file paths, indexed once: a cited path resolves, or is known for a folder, in constant time.

    An archive may wrap every file in one top-level folder (`repo-main/src/app.py`); a citation may
    name the path with or without it. Checking a run's citations against a snapshot of 20,000 files
    must not cost citations × files under the run's lock.
    """

    def __init__(self, paths) -> None:
        self.paths = frozenset(paths)
        tops = {p.split("/", 1)[0] for p in self.paths}
        self.top = next(iter(tops)) if len(tops) == 1 and all("/" in p for p in self.paths) else None
        # Every folder holding a file, named from the archive's root and from under its top folder.
        self.folders = {folder for p in self.paths for name in {p, p.split("/", 1)[-1]}
                        for folder in _folders_of(name)}

    def resolve(self, path: str) -> str | None:
        """The snapshot path a citation names: itself, or under the archive's one top-level folder."""
        if path in self.paths:
            return path
        if self.top is not None and f"{self.top}/{path}" in self.paths:
            return f"{self.top}/{path}"
        return None

    def is_folder(self, path: str) -> bool:
        """True when `path` names a folder holding files of the snapshot (directly or under its top folder)."""
        return path.rstrip("/") in self.folders


def _folders_of(path: str):
    parts = path.split("/")[:-1]
    return ("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))


class SnapshotFiles(Mapping):
    """A snapshot's files by path (text or `SourceText`), with their paths indexed (`SnapshotPaths`)."""

    def __init__(self, files: Mapping[str, str | SourceText], paths: SnapshotPaths | None = None) -> None:
        self._files = dict(files)
        self.paths = paths if paths is not None else SnapshotPaths(self._files)

    def __getitem__(self, path: str) -> str | SourceText:
        return self._files[path]

    def __iter__(self):
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


def resolve_path(path: str, paths: Sequence[str] | Mapping[str, str] | SnapshotPaths) -> str | None:
    """The snapshot path a citation names (see `SnapshotPaths.resolve`); index the paths once for many calls."""
    return (paths if isinstance(paths, SnapshotPaths) else SnapshotPaths(paths)).resolve(path)


def parse_ranges(lines: str) -> list[tuple[int, int]] | None:
    """[(first, last)] of "12-30" or "12" or "1-2,7-9"; None when a part does not read as a range."""
    ranges = []
    for part in lines.split(","):
        match = _RANGE_RE.match(part.strip())
        if not match:
            return None
        first = int(match.group(1))
        ranges.append((first, int(match.group(2) or first)))
    return ranges


def _span(first: int, last: int) -> str:
    return f"{first}-{last}" if last != first else str(first)


def _where(citation: Citation) -> str:
    place = f"{citation.path}:{citation.lines}" if citation.lines else citation.path
    return f"the quotation from {place}" if citation.kind == QUOTATION else f"the anchor `{place}`"


def check_citation(
    citation: Citation, files: Mapping[str, str | SourceText] | None, *, run_commit: str
) -> CheckResult:
    """The status of one citation against the snapshot's files (None: no snapshot uploaded).

    A file may be given as its text or as a `SourceText` (which keeps its collapsed form between calls);
    pass a `SnapshotFiles` when checking many citations, so its paths are indexed once.
    """
    what = _where(citation)
    if citation.commit and run_commit and not same_commit(citation.commit, run_commit):
        return CheckResult(citation, COMMIT_MISMATCH,
                           f"{what.capitalize()} names commit {citation.commit}, not the run's commit {run_commit}; "
                           "quote the reviewed commit.")
    if files is None:
        return CheckResult(citation, UNVERIFIED, "No source snapshot has been uploaded for this run.")
    index = files.paths if isinstance(files, SnapshotFiles) else SnapshotPaths(files)
    resolved = index.resolve(citation.path)
    if resolved is None:
        if citation.kind == ANCHOR and not citation.lines and index.is_folder(citation.path):
            return CheckResult(citation, VERIFIED, f"{citation.path} is a folder of the snapshot.")
        return CheckResult(citation, PATH_MISSING,
                           f"{citation.path} is not a file of the source snapshot; {what} needs a path of the "
                           "snapshot: correct the path, or upload a snapshot that holds the file.")
    text = files[resolved]
    source = text if isinstance(text, SourceText) else SourceText(text)
    ranges = parse_ranges(citation.lines) if citation.lines else []
    if ranges is None or any(first < 1 or last < first or last > source.line_count for first, last in ranges):
        return CheckResult(citation, RANGE_OUTSIDE,
                           f"Lines {citation.lines} of {citation.path} are not a range inside the file, which has "
                           f"{source.line_count} lines; correct {what}'s line range.")
    if citation.kind == ANCHOR:
        excerpt = tuple(line for first, last in ranges for line in source.excerpt(first, last))
        return CheckResult(citation, VERIFIED, "", excerpt)
    needle = collapse(citation.text)
    if not needle:
        return CheckResult(citation, NOT_FOUND, f"{what.capitalize()} has no body; quote the passage or drop the anchor.")
    if ranges:
        found = [hit for first, last in ranges for hit in source.occurrences(needle, first, last)]
    else:
        found = source.occurrences(needle)
    if len(found) == 1:
        first, last = found[0]
        return CheckResult(citation, VERIFIED, "", source.excerpt(first, last))
    if len(found) > 1:
        candidates = tuple(_span(first, last) for first, last in found[:MAX_CANDIDATES])
        scope = f"lines {citation.lines} of {citation.path}" if ranges else citation.path
        return CheckResult(citation, AMBIGUOUS,
                           f"{what.capitalize()} occurs {len(found)} times in {scope} (lines "
                           f"{', '.join(candidates)}); quote more context or give a line range "
                           f"(`{citation.path}:{candidates[0]}`).", (), candidates)
    if ranges:
        elsewhere = tuple(_span(first, last) for first, last in source.occurrences(needle)[:MAX_CANDIDATES])
        if elsewhere:
            return CheckResult(citation, NOT_FOUND,
                               f"{what.capitalize()} does not occur in lines {citation.lines} of {citation.path}; it "
                               f"occurs at lines {', '.join(elsewhere)}: correct the range.", (), elsewhere)
    return CheckResult(citation, NOT_FOUND,
                       f"{what.capitalize()} does not occur in {citation.path} at the snapshot (whitespace aside); "
                       "quote the file's exact text, or correct the path or range.")


def check_report(
    report: ParsedReport, files: Mapping[str, str | SourceText] | None, *, run_commit: str
) -> list[CheckResult]:
    """Every citation of the report checked (quotations first, then prose anchors)."""
    if files is not None:
        files = SnapshotFiles({path: text if isinstance(text, SourceText) else SourceText(text)
                               for path, text in files.items()})
    return [check_citation(c, files, run_commit=run_commit) for c in citations_of(report)]


# --- findings -------------------------------------------------------------


def findings_for(member: str, results: Sequence[CheckResult], *, current: bool) -> list[Finding]:
    """Validation findings about one member's citations; `current` is the member's generation."""
    findings = []
    unverified = [r for r in results if r.status == UNVERIFIED and r.citation.kind == QUOTATION]
    if unverified:
        count = len(unverified)
        findings.append(Finding(
            UNVERIFIED_CODE, WARNING, member, "", 0,
            f"{count} quotation{'s' if count != 1 else ''} of this member {'are' if count != 1 else 'is'} not checked: "
            "the run has no source snapshot; upload the reviewed commit's source (POST /api/runs/<run>/source/)."))
    for result in results:
        code = FINDING_CODES.get(result.status)
        if code is None:
            continue
        if result.status == NOT_FOUND and not collapse(result.citation.text) and result.citation.kind == QUOTATION:
            continue  # an empty body is validation's `empty-quotation`
        severity = ERROR
        if not current and (result.status == AMBIGUOUS
                            or (result.citation.kind == ANCHOR and result.status == PATH_MISSING)):
            severity = WARNING
        findings.append(Finding(code, severity, member, "", result.citation.line, result.message))
    return findings


def merge_findings(found: Sequence[Finding], quote_findings: Sequence[Finding]) -> list[Finding]:
    """Validation's findings with the quotation check's, ours replacing what validation said of the same line."""
    ours = {(f.member, f.line) for f in quote_findings if f.code == FINDING_CODES[COMMIT_MISMATCH]}
    kept = [f for f in found if not (f.code in SUPERSEDED_CODES and (f.member, f.line) in ours)]
    return sorted(set(kept) | set(quote_findings), key=Finding.sort_key)


def totals(statuses: Sequence[str]) -> dict[str, int]:
    """Count per status, every status present (zeros included), in STATUSES order."""
    return {status: sum(1 for s in statuses if s == status) for status in STATUSES}


def is_current_form(members: Sequence, generation_of) -> dict[str, bool]:
    """Per member name, whether it is current form; a member naming no record takes its set's generation.

    `generation_of(report)` reads one member's generation ("" when it cannot tell), as validation does.
    """
    from collections import Counter

    from . import ids

    generations = {m.name: generation_of(m.report) for m in members}
    known = [g for g in generations.values() if g]
    set_generation = Counter(known).most_common(1)[0][0] if known else ""
    return {m.name: (generations[m.name] or set_generation or m.report.generation) == ids.GENERATION_SLUG
            for m in members}

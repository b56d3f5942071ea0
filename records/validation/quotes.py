"""Quotations and source anchors checked against the run's frozen source (DESIGN §6).

Pure: a parsed report and a mapping `{path: text}` of the snapshot's files in,
one `CheckResult` per citation and `Finding`s out; no ORM.

What a citation is, and how its path, ranges and commit read, is
`records.validation.citations`: validation judges the same citations this
module checks. Citations are the report's quotations (`> …` lines closed by
`> --- \\`path[:ranges]\\` @ \\`commit\\``, the plain-text seeds'
`--- path @ commit`, either with a GitHub blob link as the anchor) and the
anchors in its prose (`path`, `path:12-30`, `path:1-2,7-9`, blob links), each
prose anchor checked once.

A quotation is `verified` when, after collapsing every run of whitespace to
one space on both sides, its text occurs exactly once in the file, or exactly
once inside the cited 1-based inclusive line ranges (adjacent or overlapping
ranges read as one). Otherwise, checked in this order: `commit-mismatch` (the
anchor names another commit than the run's), `unverified` (no snapshot yet),
`path-missing`, `range-outside` (any cited range, or one that does not read
as a range), `not-found`, `ambiguous` (with the candidate ranges). A prose
anchor is checked for its commit, path and every range only.

Each failed status is a `quote-…` finding, except `commit-mismatch`: a citation
at another commit needs no snapshot to tell, so validation reports it, once
(`quote-commit-mismatch`, records.validation.sources), and this check keeps
only the status.

Generations (validation's rule, `records.validation.current_form`): older
members (numbered IDs) matched quotations as plain substrings, where a second
occurrence was no error: there `ambiguous` is a warning, as is a prose path
that the snapshot lacks (older prose named paths freely, absent ones included).
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from records.document import ParsedReport

from .citations import (
    ANCHOR,
    QUOTATION,
    Citation,
    other_commit,
    parse_ranges,
    prose_citations,
    quotation_citations,
    same_commit,  # noqa: F401 — the upload's commit is compared as citations are (records.services.snapshots)
    where,
)
from .findings import ERROR, WARNING, Finding

VERIFIED = "verified"
NOT_FOUND = "not-found"
AMBIGUOUS = "ambiguous"
PATH_MISSING = "path-missing"
RANGE_OUTSIDE = "range-outside"
COMMIT_MISMATCH = "commit-mismatch"
UNVERIFIED = "unverified"
STATUSES = (VERIFIED, NOT_FOUND, AMBIGUOUS, PATH_MISSING, RANGE_OUTSIDE, COMMIT_MISMATCH, UNVERIFIED)

# The matched lines kept with a result: enough to read, bounded for storage.
MAX_SOURCE_LINES = 200
MAX_CANDIDATES = 20

# No code for COMMIT_MISMATCH: validation reports a citation at another commit (records.validation.sources).
FINDING_CODES = {
    NOT_FOUND: "quote-not-found",
    AMBIGUOUS: "quote-ambiguous",
    PATH_MISSING: "quote-path-missing",
    RANGE_OUTSIDE: "quote-range-outside",
}
UNVERIFIED_CODE = "quote-unverified"


@dataclass(frozen=True)
class CheckResult:
    citation: Citation
    status: str
    message: str = ""
    source_lines: tuple[tuple[int, str], ...] = ()  # (line number, text) of the matched or cited range
    candidates: tuple[str, ...] = ()  # "F-L" ranges where the text occurs (ambiguous, or outside the range)


# --- citations ------------------------------------------------------------


def prose_anchors(report: ParsedReport) -> list[Citation]:
    """The anchors cited in prose (records.validation.citations), each path, ranges and commit checked once:
    at its first mention."""
    seen: set[tuple[str, str, str]] = set()
    found = []
    for citation in prose_citations(report):
        key = (citation.path, citation.lines, citation.commit)
        if key not in seen:
            seen.add(key)
            found.append(citation)
    return found


def citations_of(report: ParsedReport, *, run_commit: str = "") -> list[Citation]:
    """Every quotation of the report, then every prose anchor, each in order of its line.

    An anchor in a Source register row belongs to that row: it names a file of the snapshot only when
    the row is the repository at the run's commit (a `capture` row's `about.html` is a captured page), so
    the anchors of every other row are left out (issue 25).
    """
    foreign = {row.line for row in report.sources if not _is_snapshot_row(row, run_commit)}
    return [*quotation_citations(report), *(c for c in prose_anchors(report) if c.line not in foreign)]


_REVISION_HEADER = re.compile(r"revision|commit|capture", re.IGNORECASE)
_KIND_HEADER = re.compile(r"^kind$|type", re.IGNORECASE)
_REPOSITORY_KINDS = frozenset({"git", "repository", "repo", "source", "code", "source code"})


def _is_snapshot_row(row, run_commit: str) -> bool:
    """Whether a Source register row is the repository at the run's commit: its revision names the commit,
    or (a register without a revision column) its kind is a repository."""
    revisions = [cell for header, cell in row.columns if _REVISION_HEADER.search(header)]
    if revisions and run_commit:
        return any(same_commit(token, run_commit) for cell in revisions for token in re.findall(r"[0-9a-fA-F]{7,40}", cell))
    kinds = [cell.strip("` ").lower() for header, cell in row.columns if _KIND_HEADER.search(header)]
    return not kinds or any(kind in _REPOSITORY_KINDS for kind in kinds)


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
        """True when `path` names a folder holding files of the snapshot (directly or under its top folder);
        a folder may be written with its slash (`lantern/`)."""
        folder = path.strip("/")
        # `folders` already names each folder both ways: looking it up again under the top folder would
        # strip that folder twice (`src` a folder of `app/app/src/src`, which it is not).
        return bool(folder) and folder in self.folders


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


def _span(first: int, last: int) -> str:
    return f"{first}-{last}" if last != first else str(first)


def check_citation(
    citation: Citation, files: Mapping[str, str | SourceText] | None, *, run_commit: str
) -> CheckResult:
    """The status of one citation against the snapshot's files (None: no snapshot uploaded).

    A file may be given as its text or as a `SourceText` (which keeps its collapsed form between calls);
    pass a `SnapshotFiles` when checking many citations, so its paths are indexed once.
    """
    what, opening = where(citation), where(citation, opening=True)
    problem = other_commit(citation, run_commit)
    if problem:
        return CheckResult(citation, COMMIT_MISMATCH, problem)
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
    blocks = _blocks(ranges)
    if citation.kind == ANCHOR:
        return CheckResult(citation, VERIFIED, "", _excerpt(source, blocks))
    needle = collapse(citation.text)
    if not needle:
        return CheckResult(citation, NOT_FOUND, f"{opening} has no body; quote the passage or drop the anchor.")
    if blocks:
        found = [hit for first, last in blocks for hit in source.occurrences(needle, first, last)]
    else:
        found = source.occurrences(needle)
    if len(found) == 1:
        first, last = found[0]
        return CheckResult(citation, VERIFIED, "", source.excerpt(first, last))
    if len(found) > 1:
        candidates = tuple(_span(first, last) for first, last in found[:MAX_CANDIDATES])
        scope = f"lines {citation.lines} of {citation.path}" if blocks else citation.path
        return CheckResult(citation, AMBIGUOUS,
                           f"{opening} occurs {len(found)} times in {scope} (lines "
                           f"{', '.join(candidates)}); quote more context or give a line range "
                           f"(`{citation.path}:{candidates[0]}`).", (), candidates)
    if blocks:
        elsewhere = tuple(_span(first, last) for first, last in source.occurrences(needle)[:MAX_CANDIDATES])
        if elsewhere:
            return CheckResult(citation, NOT_FOUND,
                               f"{opening} does not occur in lines {citation.lines} of {citation.path}; it "
                               f"occurs at lines {', '.join(elsewhere)}: correct the range.", (), elsewhere)
    return CheckResult(citation, NOT_FOUND,
                       f"{opening} does not occur in {citation.path} at the snapshot (whitespace aside); "
                       "quote the file's exact text, or correct the path or range.")


def _blocks(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The cited lines as runs of consecutive lines: `1-2,3-4` is `1-4`, `1-4,3-8` is `1-8`, `1-2,7-9` stays two."""
    blocks: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if blocks and first <= blocks[-1][1] + 1:
            blocks[-1] = (blocks[-1][0], max(blocks[-1][1], last))
        else:
            blocks.append((first, last))
    return blocks


def _excerpt(source: SourceText, blocks: Sequence[tuple[int, int]]) -> tuple[tuple[int, str], ...]:
    """The cited lines, at most MAX_SOURCE_LINES of them in all."""
    lines: list[tuple[int, str]] = []
    for first, last in blocks:
        lines += source.excerpt(first, min(last, first + MAX_SOURCE_LINES - len(lines) - 1))
        if len(lines) >= MAX_SOURCE_LINES:
            break
    return tuple(lines)


def check_report(
    report: ParsedReport, files: Mapping[str, str | SourceText] | None, *, run_commit: str
) -> list[CheckResult]:
    """Every citation of the report checked (quotations first, then prose anchors)."""
    if files is not None:
        files = SnapshotFiles({path: text if isinstance(text, SourceText) else SourceText(text)
                               for path, text in files.items()})
    return [check_citation(c, files, run_commit=run_commit) for c in citations_of(report, run_commit=run_commit)]


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
    """Validation's findings and the quotation check's, in the one order of findings. They never say the same
    thing twice: a citation at another commit is validation's finding alone."""
    return sorted(set(found) | set(quote_findings), key=Finding.sort_key)


def totals(statuses: Sequence[str]) -> dict[str, int]:
    """Count per status, every status present (zeros included), in STATUSES order."""
    return {status: sum(1 for s in statuses if s == status) for status in STATUSES}

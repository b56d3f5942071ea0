"""The result's self-check: read the rendered bytes back and check they cannot contradict themselves (DESIGN §7).

An independent reader: it knows the result's layout (section headings, the Mappings list, the
Dispositions table, the Limitations list) but nothing of the renderer's data. Finalization stores
a result only when `check_result` finds nothing:

1. each member record has exactly one disposition (one row of `### Dispositions`);
2. every accepted mapping appears once in `### Mappings`, with its relation, and nothing else does;
3. no record is both placed (mapped or new) and said to have no place (in Limitations);
4. every canonical ID the Mappings list or the Dispositions table cites is a record of Shared records;
5. no heading the table of contents lists (levels 1-3, outside fenced code) appears twice, so a carried
   heading never duplicates one of the result's own (DESIGN §7);
6. every carried line (a member's prose, its boundary text, a record's or annotation's text in Shared
   records) that states a relation the decisions contradict is followed by its mark, the decisions read
   from these bytes: the Dispositions table, the Mappings table, the `Declared as` lines of Shared
   records and the rejected canonical records of Limitations (the statements are read from a line by
   `results.contradictions`, the one reading the renderer uses too).

Pure: text in, a list of problems (one sentence each) out.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from . import contradictions
from .fences import outside_fences

_ID = r"(?:(?:[A-Z]+)-)?(?:CMP|OBJ|RTE|CLM|ABS|BAP)-(?:\d+|[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*)"
_HEADING = re.compile(r"^(#{2,6}) (.*)$")
_DECLARATION = re.compile(rf"^#### (?P<id>{_ID})(?: — .*)?$")
# The words of the Mappings table's last column, per relation: they must agree with the relation column.
_STATEMENTS = {
    "same": re.compile(rf"^(?P<source>{_ID}) → (?P<target>{_ID})$"),
    "new": re.compile(rf"^(?P<source>{_ID}) → (?P<target>{_ID})$"),
    "part-of": re.compile(rf"^(?P<source>{_ID}) part of (?P<target>{_ID})$"),
    "supersedes": re.compile(rf"^(?P<source>{_ID}) is superseded by (?P<target>{_ID})$"),
    "no-counterpart": re.compile(rf"^(?P<source>{_ID}) has no counterpart in the shared set$"),
}
_NO_PLACE = re.compile(rf"(?P<id>{_ID}) has no place in the shared set")
DISPOSITIONS = {"mapped", "new", "no-counterpart", "rejected"}
PLACED = {"mapped", "new"}


@dataclass(frozen=True)
class ReadResult:
    """What the reader found in the bytes."""

    shared: frozenset[str]
    mappings: tuple[tuple[str, str, str], ...]  # (source, relation, target) per line of ### Mappings
    unreadable_mappings: tuple[str, ...]
    dispositions: tuple[tuple[str, str, str, str, str], ...]  # (record, member, disposition, relation, target)
    no_place: frozenset[str]


def _sections(lines: list[str]) -> dict[tuple[str, ...], list[str]]:
    """The path of '## Title' / '### Title' headings, e.g. ("Reconciliation", "Mappings") → its lines (up to
    the next heading of the same or a higher level). Keyed by path, not title: the members' prose is
    carried under '## <Member> report' and may have its own "Limitations" or "Dispositions"."""
    found: dict[tuple[str, ...], list[str]] = {}
    open_: list[tuple[int, str]] = []
    for line in lines:
        match = _HEADING.match(line)
        if match and len(match.group(1)) <= 3:
            level = len(match.group(1))
            open_ = [(lvl, title) for lvl, title in open_ if lvl < level] + [(level, match.group(2).strip())]
            found.setdefault(tuple(title for _lvl, title in open_), [])
            continue
        for depth in range(1, len(open_) + 1):
            found[tuple(title for _lvl, title in open_[:depth])].append(line)
    return found


def _cells(row: str) -> list[str]:
    body = row.strip()[1:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def read_result(markdown: str) -> ReadResult:
    lines = markdown.split("\n")
    sections = _sections(lines)
    shared = frozenset(m.group("id") for line in sections.get(("Shared records",), [])
                       if (m := _DECLARATION.match(line)))
    mappings, unreadable = [], []
    for row in [line for line in sections.get(("Reconciliation", "Mappings"), []) if line.startswith("|")][2:]:
        cells = _cells(row)
        if len(cells) != 4:
            unreadable.append(row)
            continue
        source, relation, target, words = cells
        target = "" if target == "—" else target
        pattern = _STATEMENTS.get(relation)
        match = pattern.match(words) if pattern else None
        if match is None or match.group("source") != source or (match.groupdict().get("target") or "") != target:
            unreadable.append(row)  # the words do not say what the relation and target columns say
            continue
        mappings.append((source, relation, target))
    rows = []
    table = [line for line in sections.get(("Reconciliation", "Dispositions"), []) if line.startswith("|")]
    for row in table[2:]:
        cells = _cells(row)
        if len(cells) >= 5:
            record, member, disposition, relation, target = cells[:5]
            rows.append((record, member, disposition, "" if relation == "—" else relation,
                         "" if target == "—" else target))
    no_place = frozenset(m.group("id") for line in sections.get(("Limitations",), []) for m in _NO_PLACE.finditer(line))
    return ReadResult(shared=shared, mappings=tuple(mappings), unreadable_mappings=tuple(unreadable),
                      dispositions=tuple(rows), no_place=no_place)


_TOC_HEADING = re.compile(r"^ {0,3}(#{1,3})[ \t]+(.*?)[ \t#]*$")


def contents_headings(markdown: str) -> list[str]:
    """The level 1-3 ATX headings outside fenced code, as `## text`."""
    return [f"{heading[1]} {heading[2]}" for _index, line in outside_fences(markdown.split("\n"))
            if (heading := _TOC_HEADING.match(line))]


def check_result(markdown: str, *, member_records: set[tuple[str, str]],
                 accepted: set[tuple[str, str, str]]) -> list[str]:
    """Problems with the rendered result ([] when it passes). `member_records` are (member role, record
    ID) of every non-seeding member declaration; `accepted` the (source, relation, target) of every
    accepted mapping, as the decisions hold them."""
    read = read_result(markdown)
    problems = []

    # 1. one disposition per member record
    counts = Counter(row[0] for row in read.dispositions)
    for record, n in sorted(counts.items()):
        if n > 1:
            problems.append(f"{record} has {n} dispositions")
    for member, record in sorted(member_records):
        if counts[record] == 0:
            problems.append(f"{record} ({member}) has no disposition")
    for record, _member, disposition, _relation, _target in read.dispositions:
        if disposition not in DISPOSITIONS:
            problems.append(f"{record} has the disposition {disposition!r}, which a final result cannot have")

    # 2. every accepted mapping once, with its relation
    listed = Counter(read.mappings)
    for line in read.unreadable_mappings:
        problems.append(f"a Mappings row does not state its mapping with its relation: {line!r}")
    for mapping, n in sorted(listed.items()):
        if n > 1:
            problems.append(f"{_words(mapping)} is listed {n} times")
        if mapping not in accepted:
            problems.append(f"{_words(mapping)} is listed but no accepted mapping says so")
    for mapping in sorted(accepted):
        if mapping not in listed:
            problems.append(f"the accepted mapping {_words(mapping)} is missing from Mappings")
    for record, _member, disposition, relation, target in read.dispositions:
        if disposition in PLACED | {"no-counterpart"} and (record, relation, target) not in listed:
            problems.append(f"{record} is {disposition} ({relation} {target or '∅'}) but Mappings does not say so")

    # 3. placed and without a place
    placed = {row[0] for row in read.dispositions if row[2] in PLACED} | {
        source for source, relation, _t in read.mappings if relation != "no-counterpart"}
    for record in sorted(placed & read.no_place):
        problems.append(f"{record} is placed in the shared set and also said to have no place")

    # 4. canonical IDs cited exist
    cited = {target for _s, _r, target in read.mappings if target} | {row[4] for row in read.dispositions if row[4]}
    for target in sorted(cited - read.shared):
        problems.append(f"{target} is cited but is not a record of Shared records")

    # 5. the table of contents lists each heading once
    for heading, n in sorted(Counter(contents_headings(markdown)).items()):
        if n > 1:
            problems.append(f"the heading {heading!r} appears {n} times among the contents' headings")

    # 6. a carried line the decisions contradict is marked in place
    problems += unmarked_contradictions(markdown)
    return problems


def _words(mapping: tuple[str, str, str]) -> str:
    source, relation, target = mapping
    return f"{source} {relation} {target or '∅'}"


# --- 6. contradicted carried lines ------------------------------------------------------------------

OWN_SECTIONS = ("Run identity", "Boundary and evidence", "Source register", "Shared records", "Reconciliation",
                "Limitations", "Verification and blockers")
_DECLARED_AS = re.compile(rf"^Declared as `(?P<id>{_ID})`")
_ANNOTATION = re.compile(r"^##### Annotation by .* on (?P<id>\S+)$")  # the target as its member wrote it
_REJECTED_CANONICAL = re.compile(rf"^- Rejected canonical record (?P<id>{_ID})(?: \(declared as `(?P<alias>{_ID})`\))?:")


def decisions_in(markdown: str) -> contradictions.Decisions:
    """The decisions as the result's own sections state them."""
    lines = markdown.split("\n")
    read, sections = read_result(markdown), _sections(lines)
    rejected, placements = {}, {}
    for record, _member, disposition, relation, target in read.dispositions:
        if disposition == "rejected":
            rejected[record] = f"{record} was rejected"
        else:
            placements[record] = (relation, target)
    for line in sections.get(("Limitations",), []):
        if found := _REJECTED_CANONICAL.match(line):
            for record_id in (found["id"], found["alias"]):
                if record_id:
                    rejected[record_id] = f"canonical record {found['id']} was rejected"
    aliases, heading = {}, ""
    for line in sections.get(("Shared records",), []):
        if declaration := _DECLARATION.match(line):
            heading = declaration["id"]
        elif (declared := _DECLARED_AS.match(line)) and heading:
            aliases[declared["id"]] = heading
    for source, relation, target in read.mappings:
        if relation in ("same", "new") and target:
            aliases.setdefault(source, target)
    return contradictions.Decisions(rejected=rejected, placements=placements, aliases=aliases)


def carried_regions(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, end, subject) of each stretch of carried text: a member's section (any `## ` heading
    that is none of the result's own), a `### From the …` boundary subsection, a record's or
    annotation's text in Shared records (subject: the record, as declared; an accepted amendment's
    block is the reviewer's, not carried)."""
    regions, start, subject, section = [], None, "", ""

    def close(end: int) -> None:
        nonlocal start
        if start is not None:
            regions.append((start, end, subject))
        start = None

    for index, line in enumerate(lines):
        match = _HEADING.match(line) or (re.match(r"^(#) (.*)$", line) if line.startswith("# ") else None)
        level = len(match.group(1)) if match else 0
        if level == 2 or level == 1:
            close(index)
            section = match.group(2).strip() if level == 2 else ""
            if level == 2 and section not in OWN_SECTIONS:
                start, subject = index + 1, ""
        elif section == "Boundary and evidence" and level == 3:
            close(index)
            if match.group(2).startswith("From the "):
                start, subject = index + 1, ""
        elif section == "Shared records" and level in (3, 4, 5):
            declared = _DECLARATION.match(line) if level == 4 else None
            annotated = _ANNOTATION.match(line) if level == 5 else None
            if declared or annotated or level == 3:
                close(index)
            if declared:
                alias = _DECLARED_AS.match(lines[index + 2]) if index + 2 < len(lines) else None
                start, subject = index + 1, alias["id"] if alias else declared["id"]
            elif annotated:
                start, subject = index + 1, annotated["id"]
            elif level == 5 and line.startswith("##### Accepted amendment"):
                close(index)
    close(len(lines))
    return regions


def unmarked_contradictions(markdown: str) -> list[str]:
    """A problem for each carried statement the decisions in these bytes contradict and no mark follows."""
    lines, decisions, problems = markdown.split("\n"), decisions_in(markdown), []
    for start, end, subject in carried_regions(lines):
        region = lines[start:end]
        for last, contradicted in contradictions.contradicted_blocks(region, decisions, subject):
            following, index = [], last + 1
            while index < len(region) and (not region[index].strip() or region[index].startswith(contradictions.MARK)):
                following.append(region[index])
                index += 1
            for statement, why in contradicted:
                wanted = contradictions.mark_prefix(statement)
                if not any(line.startswith(wanted) and line[len(wanted):].strip() for line in following):
                    problems.append(f"line {start + last + 1}: the carried statement “{statement.words}” is "
                                    f"contradicted by the decisions ({why}) and is not marked")
    return problems

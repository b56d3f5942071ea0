"""Carried lines that state a relation the decisions contradict, and the mark that overrides each (DESIGN §7).

A member's prose is carried into the result verbatim, so it may still say what the review decided
otherwise: `Part of: MEM-OBJ-1` after MEM-OBJ-1 was rejected, "EPI-OBJ-2 and EPI-OBJ-3 are parts of
MEM-OBJ-1", "EPI-OBJ-4 is superseded by MEM-OBJ-2" when EPI-OBJ-4 entered as a new record, or a
mapping statement `MEM-OBJ-1 → OBJ-5` when the accepted one is `MEM-OBJ-1 → OBJ-7`. Each such
statement gets a mark after the block that holds it (its paragraph, table or list: a line inserted
inside one would break it):

    > **Overridden by the review:** EPI-OBJ-2 part of MEM-OBJ-1: MEM-OBJ-1 was rejected: <rationale>

The renderer calls `mark_contradictions` on every piece of carried text with the decisions taken
from its input (`decisions_of`); the self-check (`results.selfcheck`) reads the decisions back from
the rendered bytes (Dispositions, Mappings, Shared records, Limitations) and calls `contradicted_blocks`
on the carried regions it finds there, so a mark the renderer failed to write is caught on the bytes.
The two share only this module's reading of a line.

Pure: text and plain data in, text out. Quotations (`> ` lines) and fenced code are never read for
statements: they quote the source, not the analyst.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .fences import FENCE, outside_fences

MARK = "> **Overridden by the review:** "

_ID = r"(?<![A-Za-z0-9_-])(?:[A-Z]+-)?(?:CMP|OBJ|RTE|CLM|ABS|BAP)-(?:\d+|[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*){0,2})(?![A-Za-z0-9_])"
ID_RE = re.compile(_ID)
# An ID as prose dresses it: in backticks or bold, or as the text of a citation link `[ID](member.md#id)`.
_ONE = rf"[`*\[]*{_ID}[`*\]]*(?:\([^)\s]*\))?[`*]*"
_LIST = rf"{_ONE}(?:\s*(?:,\s*and|,|and)\s+{_ONE})*"

# `Part of: X` (a field, a table cell `Part of `X``); not the replaced value of `A supersedes `Part of: X` with …`.
_PART_OF_FIELD = re.compile(rf"(?<!supersedes `)\bPart of:?\s*(?P<target>{_ONE})")
# "A and B are parts of X", "A remains a distinct part of X", "X, which is itself a valid part of Y".
_PART_OF_WORDS = re.compile(
    rf"(?P<subjects>{_LIST})(?:,\s*which)?\s+(?:is|are|remains?|becomes?|was|were)\s+(?:[a-z]+\s+){{0,3}}?"
    rf"parts?\s+of\s+(?:the\s+)?(?P<target>{_ONE})")
# "A is superseded by B[, C][ and D]", also "… by the matching B identity".
_SUPERSEDED = re.compile(
    rf"(?P<source>{_ONE})\s+(?:is|was|remains)\s+superseded\s+by\s+(?:[a-z]+\s+){{0,2}}?(?P<targets>{_LIST})")
_MAPS_TO = re.compile(rf"(?P<source>{_ONE})\s*(?:→|->)\s*(?P<target>{_ONE})")
_LEADING_ID = re.compile(rf"^\s*(?:[-*+]\s+|\d+[.)]\s+)?(?P<id>{_ONE})")
_HEADING = re.compile(rf"^ {{0,3}}#{{1,6}}[ \t]+(?:On\s+)?(?P<id>{_ONE})?")
_QUOTE = re.compile(r"^ {0,3}>")

PART_OF, SUPERSEDES, MAPS_TO = "part-of", "supersedes", "maps-to"


@dataclass(frozen=True)
class Statement:
    """One relation a carried line states: `source` part of / is superseded by / → `target`."""

    source: str
    relation: str  # PART_OF, SUPERSEDES or MAPS_TO
    target: str

    @property
    def words(self) -> str:
        if self.relation == PART_OF:
            return f"{self.source} part of {self.target}"
        if self.relation == SUPERSEDES:
            return f"{self.source} is superseded by {self.target}"
        return f"{self.source} → {self.target}"


@dataclass(frozen=True)
class Decisions:
    """What the review decided, as far as a carried statement can contradict it."""

    # A member record (disposition `rejected`) or a rejected canonical record (also under the member
    # ID it was declared as) → why it has no place, in words ("MEM-OBJ-1 was rejected: …").
    rejected: dict[str, str] = field(default_factory=dict)
    # A member record with an accepted place → (relation, canonical target; "" for no-counterpart).
    placements: dict[str, tuple[str, str]] = field(default_factory=dict)
    # A member ID → the canonical record it is (RT-OBJ-2 is OBJ-2; MEM-OBJ-2 entered as OBJ-13).
    aliases: dict[str, str] = field(default_factory=dict)

    def canonical(self, record_id: str) -> str:
        return self.aliases.get(record_id, record_id)


def accepted_words(source: str, relation: str, target: str) -> str:
    if relation == "no-counterpart" or not target:
        return f"{source} has no counterpart in the shared set"
    if relation == "part-of":
        return f"{source} part of {target}"
    if relation == "supersedes":
        return f"{source} is superseded by {target}"
    return f"{source} → {target} ({relation})"


def _bare(token: str) -> str:
    found = ID_RE.search(token)
    return found.group(0) if found else ""


def statements_in(line: str, subject: str = "") -> list[Statement]:
    """The relations `line` states; a `Part of:` field belongs to `subject` (the record whose text or
    table row it is) unless the line opens with another ID."""
    found: list[Statement] = []
    leading = _LEADING_ID.match(line)
    for match in _PART_OF_FIELD.finditer(line):
        owner = _bare(leading.group("id")) if leading and leading.end() <= match.start() else subject
        if owner:
            found.append(Statement(owner, PART_OF, _bare(match.group("target"))))
    position = 0
    while (match := _PART_OF_WORDS.search(line, position)) is not None:
        target = _bare(match.group("target"))
        found += [Statement(s, PART_OF, target) for s in ID_RE.findall(match.group("subjects"))]
        position = match.start("target")  # the target may be the subject of the next statement
    for match in _SUPERSEDED.finditer(line):
        source = _bare(match.group("source"))
        found += [Statement(source, SUPERSEDES, t) for t in ID_RE.findall(match.group("targets"))]
    position = 0
    while (match := _MAPS_TO.search(line, position)) is not None:
        found.append(Statement(_bare(match.group("source")), MAPS_TO, _bare(match.group("target"))))
        position = match.start("target")
    return [s for s in dict.fromkeys(found) if s.source and s.target and s.source != s.target]


def overriding(statement: Statement, decisions: Decisions) -> str:
    """The decision that contradicts `statement`, in words ("" when none does): a record it names was
    rejected, or its source's accepted mapping names another target."""
    for record_id in (statement.target, statement.source):  # the parent or successor first: what it rests on
        why = decisions.rejected.get(record_id) or decisions.rejected.get(decisions.canonical(record_id))
        if why:
            return why
    placed = decisions.placements.get(statement.source)
    if placed is None:
        return ""
    relation, target = placed
    named = decisions.canonical(statement.target)
    if statement.relation == PART_OF:
        # Only a part-of placement says what the record is part of; a new or same record keeps its field.
        contradicted = relation == "part-of" and target != named
    elif statement.relation == SUPERSEDES:
        contradicted = relation != "supersedes" or target != named
    else:
        contradicted = target != named
    return f"the accepted mapping is {accepted_words(statement.source, relation, target)}" if contradicted else ""


def mark(statement: Statement, why: str) -> str:
    return f"{MARK}{statement.words}: {why}"


def mark_prefix(statement: Statement) -> str:
    return f"{MARK}{statement.words}: "


def contradicted_blocks(lines: list[str], decisions: Decisions,
                        subject: str = "") -> list[tuple[int, list[tuple[Statement, str]]]]:
    """(index of a block's last line, its contradicted statements with the decision overriding each) for
    each block of `lines` that states a contradicted relation. A block is a run of non-blank lines outside fenced code; a heading that
    opens with an ID (a declaration, `On ID`) makes that record the subject of the `Part of:` fields
    below it, any other heading gives back `subject`."""
    found: list[tuple[int, list[tuple[Statement, str]]]] = []
    current, marks = subject, []
    for index, line in outside_fences(lines):
        if heading := _HEADING.match(line):
            current = _bare(heading.group("id") or "") or subject
        elif line.strip() and not _QUOTE.match(line):
            row_subject = ""
            if line.lstrip().startswith("|"):
                first = line.strip().strip("|").split("|", 1)[0].strip()
                row_subject = first.strip("`*") if ID_RE.fullmatch(first.strip("`*")) else ""
            for statement in statements_in(line, row_subject or current):
                why = overriding(statement, decisions)
                if why and all(statement != seen for seen, _why in marks):
                    marks.append((statement, why))
        ends_block = index + 1 == len(lines) or not lines[index + 1].strip() or FENCE.match(lines[index + 1])
        if marks and ends_block:
            found.append((index, marks))
            marks = []
    return found


def mark_contradictions(text: str, decisions: Decisions, subject: str = "") -> str:
    """`text` verbatim with each block that states a contradicted relation followed by its marks."""
    lines = text.split("\n")
    after = dict(contradicted_blocks(lines, decisions, subject))
    if not after:
        return text
    out: list[str] = []
    for index, line in enumerate(lines):
        out.append(line)
        for statement, why in after.get(index, ()):
            out += ["", mark(statement, why)]
    return "\n".join(out)


def decisions_of(data) -> Decisions:
    """The decisions a `results.result_data.ResultInput` holds, as `overriding` reads them."""
    rejected: dict[str, str] = {}
    placements: dict[str, tuple[str, str]] = {}
    for d in data.dispositions:
        if d.disposition == "rejected":
            rejected[d.record] = f"{d.record} was rejected: {d.rationale.strip() or 'no rationale given'}"
        else:
            placements[d.record] = (d.relation, d.target)
    for item in data.rejected_items:
        if item.record:
            why = f"canonical record {item.record} was rejected: {item.rationale.strip() or 'no rationale given'}"
            for record_id in (item.record, item.declared_as):
                if record_id:
                    rejected[record_id] = why
    aliases = {r.declared_as: r.canonical_id for r in data.canonical_records if r.declared_as}
    for m in data.mappings:
        if m.relation in ("same", "new") and m.target:
            aliases.setdefault(m.source, m.target)
    return Decisions(rejected=rejected, placements=placements, aliases=aliases)

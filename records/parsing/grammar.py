"""The vocabulary and the line patterns of a member report, as the parser reads them.

Section titles the parser knows, the route field labels, and the regular
expressions for one line: headings, declaration leads, fields, table rows,
quotation anchors, mapping statements and amendments.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from records import ids

# --------------------------------------------------------------------------
# Vocabulary

KIND_HEADINGS = frozenset({
    "components",
    "operative objects",
    "routes",
    "claims",
    "evidenced absences",
    "behavioral-authority paths",
    "behavioural-authority paths",
})

TOP_LEVEL_TITLES = frozenset({
    "run identity",
    "boundary and evidence",
    "source register",
    "shared records",
    "annotations",
    "runtime account",
    "workflow account",
    "core ideas",
    "write side",
    "read-back",
    "integration issues",
    "limitations and checks",
    "limitations",
    "reconciliation",
    "verification and blockers",
    "lens scoping",
    "lens outputs",
    "bounded synthesis",
    "comparison rationale",
    "source-and-claim boundary",
    "epistemic-object inventory",
    "authority-route ledger",
    "system-claim versus route comparison",
    "bounded conclusion",
    "memory comparison",
    "memory-comparison profile",
    "run account",
    "memory account",
    "epistemic account",
})

SUB_TITLES = frozenset({
    "semantic verification",
    "deterministic validation",
    "blockers",
    "memory/context scope",
    "epistemic scope",
    "memory/context lens",
    "epistemic lens",
    "record verification",
    "synthesis verification",
    "record identity and ownership",
    "amendments and integration dispositions",
    "memory comparison cross-check",
    "ordinary shipped invocation",
    "provider and execution boundary",
    "alternate query and state paths",
    "change admission, control and evidence limits",
})

ROUTE_FIELD_LABELS = (
    "Immediate return",
    "Later read-back",
    "Delegated visibility",
    "Selection predicate",
    "Invalidation or expiry",
    "Activation or effect",
    "Evidence limits",
)

# --------------------------------------------------------------------------
# Line-level patterns

_ID = ids.ID_IN_TEXT_RE.pattern
# What may lead a declaration: a full ID or a malformed token shaped like one
# (kept whole and reported); `_lead_id` tells them apart.
_TOKEN = ids.TOKEN_PATTERN + r"(?![A-Za-z0-9_])"
_DASH = r"[\u2014\u2013]|-"  # em dash, en dash, hyphen (the latter only between spaces)

MD_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
# Any indentation: a fence inside a list item sits deeper than three spaces,
# and whatever it holds is code either way, never prose to read records from.
FENCE_OPEN_RE = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$")
QUOTE_LINE_RE = re.compile(r"^ {0,3}>")
QUOTE_PREFIX_RE = re.compile(r"^ {0,3}> ?")
PIPE_ROW_RE = re.compile(r"^ {0,3}\|")
TAB_ROW_RE = re.compile(r"\S\t")
BULLET_RE = re.compile(r"^ {0,3}(?:[-*+\u2022]|\d{1,3}[.)])(?:[ \t]+|$)")

ANCHOR_RE = re.compile(
    r"(?:^|[ \t])---[ \t]+`?(?P<path>[^\s`]+?)`?"
    r"(?:[ \t]+@[ \t]+`?(?P<commit>[^\s`]+?)`?)?[ \t]*$"
)
ANCHOR_LINES_RE = re.compile(r"^(?P<path>.+?):(?P<lines>\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)$")

ID_HEADING_RE = re.compile(
    rf"^(?:\*\*)?(?P<id>{_TOKEN})(?:\*\*)?(?:[ \t]*(?:[.:])?[ \t]*(?:(?:{_DASH})[ \t]+(?P<label>.*?))?)?[ \t]*$"
)
ANNOTATION_RE = re.compile(
    rf"^(?:\*\*)?On[ \t]+(?P<id>{_ID})(?:\*\*)?(?:[ \t]+(?:{_DASH})[ \t]+(?P<label>.*?))?[ \t]*(?:\*\*)?$"
)
# Links form: `#### On [RT-OBJ-store](runtime.md#rt-obj-store)`.
LINK_ANNOTATION_RE = re.compile(
    rf"^On[ \t]+\[(?P<id>{_ID})\]\((?P<destination>[^)\s]*)\)[ \t]*$"
)
# A record citation of the links form: a link whose text is shaped like a record ID.
RECORD_LINK_RE = re.compile(
    rf"\[(?P<id>{_TOKEN})\]\((?P<member>[^)#\s]*)(?:#(?P<anchor>[^)\s]*))?\)"
)
# The newest types (DESIGN §1); seeds 001-003 share the prefix, so a type alone does not make the links form.
LINKS_FORM_TYPE_PREFIX = "agentic-system-analyses/"
# A verification entry's addressee: `- runtime: …`.
ADDRESSEE_RE = re.compile(r"^(?P<addressee>[A-Za-z][A-Za-z-]*)[ \t]*:[ \t]+(?P<text>.*)$", re.DOTALL)
BOLD_DECL_RE = re.compile(
    rf"^(?:\*\*)(?P<id>{_TOKEN})[ \t]+(?:[\u2014\u2013]|-)[ \t]+(?P<label>.+?)\*\*[ \t]*(?P<body>.*)$"
)
# Older results: `CMP-5 —**Label.** text` (no space after the dash).
DASH_BOLD_DECL_RE = re.compile(
    rf"^(?P<id>{_TOKEN})[ \t]*[\u2014\u2013][ \t]*\*\*(?P<label>[^*]+?)\*\*[ \t]*(?P<body>.*)$"
)
BOLD_ID_RE = re.compile(rf"^\*\*(?P<id>{_TOKEN})[.:]?\*\*[.:]?[ \t]*(?P<body>.*)$")
LINE_DECL_RE = re.compile(
    rf"^(?P<id>{_TOKEN})(?:[ \t]+(?:[\u2014\u2013]|-)[ \t]+|[.:][ \t]+)(?P<rest>.*)$"
)
ID_ONLY_RE = re.compile(rf"^[ \t]*(?:\*\*)?(?P<id>{_TOKEN})(?:\*\*)?[ \t]*$")
LABEL_LINE_RE = re.compile(r"^[ \t]*(?:(?:[-*+\u2022])[ \t]+)?(?:\*\*)?Label(?:\*\*)?:(?:\*\*)?[ \t]*(?P<value>.*)$")

# `value` runs to the end of the line, trailing blanks included (readers strip it): a lazy `.*?` before
# `[ \t]*$` tried the end at every character of it, 8 µs a line, a tenth of a 2 MB report's parse.
FIELD_RE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<bullet>(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+)?"
    r"(?P<star>\*\*)?(?P<label>[A-Za-z][A-Za-z0-9 ,/()'\u2019&\-]{0,79}?)"
    r"(?:\*\*:|:\*\*|:)(?:[ \t]+(?P<value>.*))?$"
)
# Older prose also wrote `Invalidation/expiry`, `Activation/effect`.
_INLINE_LABELS = "|".join(
    [re.escape(label) for label in ROUTE_FIELD_LABELS]
    + [re.escape("Invalidation/expiry"), re.escape("Activation/effect")]
)
INLINE_FIELD_RE = re.compile(
    rf"(?:(?<=[.;])|^)[ \t]*(?P<label>{_INLINE_LABELS}|(?:[A-Za-z\-]+[ \t])?[Cc]onclusion status|[Gg]uarantee strength):[ \t]+"
)
# Every INLINE_FIELD_RE match holds its label's last word and the colon (`status:`, `read-back:`), and
# starts at the text's start or just after a `.` or `;`: where neither holds, it matches nowhere.
_INLINE_TAILS = tuple(sorted({label.split()[-1].split("/")[-1] + ":" for label in ROUTE_FIELD_LABELS}
                             | {"expiry:", "effect:", "status:", "strength:"}))
_INLINE_AFTER_RE = re.compile(r"[.;]")


def inline_field_matches(text: str, start: int = 0) -> Iterator[re.Match]:
    """`INLINE_FIELD_RE.finditer(text, start)`, the same matches, found where they can start: its search
    tried the lookbehind at every character of a line (8 µs a line of a 2 MB report)."""
    if not any(tail in text for tail in _INLINE_TAILS):
        return
    pos = start
    if pos == 0 and (m := INLINE_FIELD_RE.match(text, 0)) is not None:
        yield m
        pos = m.end()
    while (after := _INLINE_AFTER_RE.search(text, max(pos - 1, 0))) is not None:
        if (m := INLINE_FIELD_RE.match(text, after.end())) is not None:
            yield m
            pos = m.end()
        else:
            pos = after.end() + 1

MAPPINGS_LABEL_RE = re.compile(r"(?i)\bmappings(?:\*\*)?[ \t]*:(?:\*\*)?")
_ARROW = r"(?:\u2192|->|\u27f6)"
# `A → B` in a mapping statement. The right side is a record ID, or (older
# results) words naming something that is no record (`MEM-ABS-1 → limitation
# on RTE-8, not an ABS record`), which run to the next `;` or sentence end.
# A right side followed by another arrow is a route chain (`OBJ-2 → RTE-3 →
# OBJ-1`), never a mapping.
MAPPING_PAIR_RE = re.compile(
    rf"[ \t]*(?:and[ \t]+)?`?(?P<source>{_ID})`?[ \t]*{_ARROW}[ \t]*"
    rf"(?:`?(?P<target>{_ID})`?(?![ \t]*{_ARROW})(?=[ \t]*(?:[;,.()]|and\b|$))[ \t]*[;,]?"
    rf"|(?P<other>(?!`?{_ID})[A-Za-z][^;\n\u2192]*?)(?=[ \t]*(?:;|\.(?:[ \t]|$)|$)))[ \t]*;?"
)
# Where older results start a statement without a `Mappings:` label: a bullet
# (`- `MEM-OBJ-1` → OBJ-12.`) or after the colon of any lead-in sentence.
# There the left side must be an analyst's proposal (a prefixed ID), so prose
# about canonical records is not read as a mapping, and a record target must
# end the statement (`;`, `,`, `.`, `and`, a parenthesis or the line end).
_PROPOSAL_PREFIX = "|".join(ids.PREFIXES)
STATEMENT_START_RE = re.compile(rf"(?:^[ \t]*[-*+\u2022][ \t]+|:[ \t]*)(?=`?(?:{_PROPOSAL_PREFIX})-)")


def statement_starts(line: str) -> Iterator[re.Match]:
    """`STATEMENT_START_RE.finditer(line)`, the same matches, tried where one can start (the line's start, or a
    colon): the pattern's search tried its two branches at every character (16 ms of a 2 MB report)."""
    if (m := STATEMENT_START_RE.match(line)) is not None:
        yield m
    pos = m.end() if m is not None else 1
    while (colon := line.find(":", pos)) >= 0:
        if (m := STATEMENT_START_RE.match(line, colon)) is not None:
            yield m
            pos = m.end()
        else:
            pos = colon + 1
AMENDMENT_RE = re.compile(
    r"^[ \t]*(?:(?:[-*+\u2022])[ \t]+)?(?:\*\*)?(?P<label>Amendment|Unresolved conflict)(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*(?P<rest>.*)$",
    re.IGNORECASE,
)
TYPE_LINE_RE = re.compile(r"^Type:[ \t]*(?P<value>\S.*?)[ \t]*$")
NONE_RE = re.compile(r"^(?:none|no integration issues?|n/a)\b", re.IGNORECASE)

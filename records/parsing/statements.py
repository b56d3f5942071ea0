"""Mapping statements (lists and tables, DESIGN §2) and the reconciliation's amendments and unresolved conflicts."""
from __future__ import annotations

import re

from records import ids
from records.document import Amendment, MappingStatement

from .grammar import AMENDMENT_RE, MAPPING_PAIR_RE, MAPPINGS_LABEL_RE, statement_starts
from .lines import ReportLines
from .tables import strip_cell, tables


def mappings(doc: ReportLines) -> list[MappingStatement]:
    result = []
    for k in range(doc.body_start, doc.n):
        if not doc.scannable(k) or doc.kind[k] not in ("text", "heading"):
            continue
        line = doc.lines[k]
        read: set[int] = set()  # where each statement's left side starts, read once
        starts = [label.end() for label in MAPPINGS_LABEL_RE.finditer(line)] if may_label_mappings(line) else []
        if may_start_statement(line):
            starts += [m.end() for m in statement_starts(line)]
        for pos in starts:
            while (m := MAPPING_PAIR_RE.match(line, pos)) is not None:
                pos = m.end()
                if m.start("source") in read:
                    continue
                read.add(m.start("source"))
                if m.group("target"):
                    result.append(MappingStatement(m.group("source"), m.group("target"), "mapped", k + 1, "list"))
                else:
                    other = m.group("other").strip()
                    result.append(MappingStatement(m.group("source"), "", f"no record: {other}", k + 1, "list"))
    for rows in tables(doc):
        columns = mapping_columns([strip_cell(c) for c in rows[0][1]])
        if columns is None:
            continue
        src_col, tgt_col, disp_col = columns
        for k, cells in rows[1:]:
            if len(cells) <= max(columns):
                continue
            found_sources = ids.find_ids(cells[src_col])
            if not found_sources:
                continue
            targets = ids.find_ids(cells[tgt_col])
            result.append(MappingStatement(
                found_sources[0].record_id,
                targets[0].record_id if targets else "",
                strip_cell(cells[disp_col]),
                k + 1,
                "table",
            ))
    result.sort(key=lambda m: m.line)
    return result


# What each line pattern needs, looked for first as plain substrings (the patterns try every position of
# every line): `mappings` in any case holds "mapp" once lower-cased (only `m`, `a`, `p` and their capitals
# match those letters ignoring case, where `i` and `s` have look-alikes), and a statement a colon or a
# leading bullet before an analyst's `RT-`, `MEM-` or `EPI-`.
def may_label_mappings(line: str) -> bool:
    return "mapp" in line.lower()


def may_start_statement(line: str) -> bool:
    return ("RT-" in line or "MEM-" in line or "EPI-" in line) and (
        ":" in line or line.lstrip(" \t")[:1] in ("-", "*", "+", "\u2022"))


def amendments(doc: ReportLines) -> list[Amendment]:
    result = []
    k = doc.body_start
    while k < doc.n:
        if not doc.scannable(k) or doc.kind[k] != "text":
            k += 1
            continue
        m = AMENDMENT_RE.match(doc.lines[k])
        if not m:
            k += 1
            continue
        parts = [m.group("rest").strip()]
        j = k + 1
        while j < doc.n and doc.kind[j] == "text" and doc.scannable(j) and not AMENDMENT_RE.match(doc.lines[j]):
            parts.append(doc.lines[j].strip())
            j += 1
        text = "\n".join(p for p in parts if p)
        label = m.group("label").lower()
        kind = "amendment" if label == "amendment" else "unresolved-conflict"
        result.append(Amendment(kind, text, k + 1, ids.unique_ids(text)))
        k = j
    return result


CANONICAL_WORDS = re.compile(r"canonical|shared|result (?:record|id)|target (?:record|id)|^target$|^to$")
DISPOSITION_WORDS = re.compile(r"disposition|decision|^status$|^outcome$|^relation$|^verdict$")
PROPOSAL_WORDS = re.compile(r"proposal|proposed|member|^source\b|^from$|^record\b|^id$")


def mapping_columns(header: list[str]) -> tuple[int, int, int] | None:
    """(proposal, canonical, disposition) column indexes, in any order."""
    lowered = [h.lower() for h in header]
    target = next((i for i, h in enumerate(lowered) if CANONICAL_WORDS.search(h)), None)
    if target is None:
        return None
    disposition = next(
        (i for i, h in enumerate(lowered) if i != target and DISPOSITION_WORDS.search(h)), None
    )
    if disposition is None:
        return None
    proposal = next(
        (i for i, h in enumerate(lowered) if i not in (target, disposition) and PROPOSAL_WORDS.search(h)),
        None,
    )
    if proposal is None:
        return None
    return proposal, target, disposition

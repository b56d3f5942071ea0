"""Render a run's final result (DESIGN §7) from plain data.

Pure: no ORM, no Django, no clock. The caller (the finalization service)
gathers everything into a `ResultInput` and stores the returned text beside
its SHA-256; the digest is never written into the text itself.

Determinism: the same `ResultInput` always gives the same bytes, and lists
whose order carries no meaning (members, sources, canonical records,
annotations, mappings, integration issues, amendments, conflicts, rejected
items, checks, blockers) are sorted here, so the order in which a database
query returned them does not matter. The order of a member's prose sections
is the member's own and is kept.

Round trip: the rendered text is meant to be read back by
`records.parsing.parse_report` with the same canonical declarations and
mapping statements. Therefore declarations appear only as `#### ID — label`
headings inside `## Shared records`; accepted annotations sit under their
record as `##### Annotation by <member> on <ID>` (a heading that starts with
neither an ID nor `On`, so it declares and annotates nothing); the members'
prose, which may hold headings and lines that start with record IDs, is
carried verbatim only after Shared records, where nothing declares; and
accepted mappings are written once, as a single `Mappings: A → B; …` line.

Carried text is verbatim except for one addition: after a block that states a relation the
decisions contradict, a `> **Overridden by the review:** …` mark (results.contradictions).
"""
from __future__ import annotations

import json
import re

from reconcile.dispositions import relation_phrase
from records.validation import KIND_HEADINGS

from .contradictions import Decisions, decisions_of, mark_contradictions
from .fences import outside_fences

from .result_data import (  # noqa: F401 — callers read the dataclasses here too
    AmendmentDecision, AnnotationEntry, CanonicalEntry, CorrectionEntry, DECISION_WORDS, DispositionEntry, IssueDecision,
    KIND_ORDER, MappingEntry, MemberEntry, RECORD_ID_RE, ROLE_ORDER, RejectedItem, ResultInput, SourceEntry,
    Verification, mapping_sort_key, record_sort_key, sorted_amendments, sorted_annotations, sorted_conflicts,
    sorted_issues, sorted_members, sorted_records, sorted_rejected, source_sort_key,
)
from .review_lines import independent_review_blocks

RESULT_TYPE = "types/agentic-system-analysis-result.md"
_WHITESPACE = re.compile(r"\s+")


# --- text helpers ---------------------------------------------------------


def _one_line(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _block(text: str) -> str:
    """Verbatim text without the blank lines around it (they are ours to place)."""
    return text.strip("\n")


def escape_cell(text: str) -> str:
    """A pipe-table cell: one line, `|` escaped."""
    return _one_line(text).replace("\\|", "|").replace("|", "\\|")


def _indent_continuation(text: str, indent: str = "  ") -> str:
    lines = _block(text).split("\n")
    return "\n".join([lines[0]] + [indent + line if line.strip() else "" for line in lines[1:]])


def _decision_word(decision: str) -> str:
    return DECISION_WORDS.get(decision, decision)


def _role_title(role: str) -> str:
    return role[:1].upper() + role[1:] if role else "Member"


# --- front matter ---------------------------------------------------------


def front_matter(data: ResultInput) -> dict:
    """The §7 front matter keys, in §7's order."""
    fields = {
        "type": RESULT_TYPE,
        "run-id": data.run_id,
        "system": data.system,
        "run-date": data.run_date,
        "result-disposition": data.result_disposition,
        "target-class": data.target_class,
        "boundary-kind": data.boundary_kind,
        "reviewed-boundary": data.reviewed_boundary,
        "evidence-tier": data.evidence_tier,
        "analysis-cutoff": data.analysis_cutoff,
    }
    if data.memory_comparison is not None:
        fields["memory-comparison"] = data.memory_comparison
    return fields


# --- sections -------------------------------------------------------------


def _run_identity(data: ResultInput) -> list[str]:
    lines = [
        f"Run ID: `{data.run_id}`. System: {data.system}. Run date: {data.run_date}.",
        "",
        "Member reports:",
        "",
    ]
    members = sorted_members(data)
    if not members:
        lines.append("- none")
    for member in members:
        lines.append(
            f"- `{member.name}`: {member.role} report, version {member.version}, "
            f"SHA-256 `{member.sha256}`"
        )
    return ["## Run identity", "\n".join(lines)]


def _boundary(data: ResultInput, decisions: Decisions) -> list[str]:
    blocks = [
        "## Boundary and evidence",
        (
            f"Target class: {data.target_class}. Boundary kind: {data.boundary_kind}. "
            f"Reviewed boundary: commit `{data.reviewed_boundary}`. "
            f"Evidence tier: {data.evidence_tier}. Analysis cutoff: {data.analysis_cutoff}. "
            f"Result disposition: {data.result_disposition}."
        ),
    ]
    for member in sorted_members(data):
        if member.boundary_text.strip():
            blocks.append(f"### From the {member.role} report (`{member.name}`)")
            blocks.append(mark_contradictions(_block(member.boundary_text), decisions))
    return blocks


def _source_headers(sources: list[SourceEntry]) -> list[str]:
    headers: list[str] = []
    seen: set[str] = set()
    for source in sources:
        for header, _cell in _source_cells(source):
            key = _one_line(header).lower()
            if key not in seen:
                seen.add(key)
                headers.append(_one_line(header))
    return headers


def _source_cells(source: SourceEntry) -> list[tuple[str, str]]:
    cells = list(source.columns)
    if cells and _one_line(cells[0][1]) == source.source_id and "source" in cells[0][0].lower():
        cells = cells[1:]
    return cells


def _source_register(data: ResultInput) -> list[str]:
    sources = sorted(data.sources, key=source_sort_key)
    if not sources:
        return ["## Source register", "No sources registered."]
    headers = _source_headers(sources)
    rows = [
        "| " + " | ".join(["source ID"] + [escape_cell(h) for h in headers]) + " |",
        "|" + "---|" * (len(headers) + 1),
    ]
    for source in sources:
        by_header = {}
        for header, cell in _source_cells(source):
            by_header.setdefault(_one_line(header).lower(), cell)
        cells = [escape_cell(source.source_id)] + [
            escape_cell(by_header.get(h.lower(), "")) for h in headers
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return ["## Source register", "\n".join(rows)]


def _shared_records(data: ResultInput, decisions: Decisions) -> list[str]:
    records = sorted_records(data)
    unknown = [r for r in records if _record_kind(r) not in KIND_ORDER]
    if unknown:
        raise ValueError(
            "canonical records of unknown kind: " + ", ".join(r.canonical_id for r in unknown)
        )
    amended: dict[str, list[AmendmentDecision]] = {}
    for amendment in sorted_amendments(data):
        if amendment.decision == "accept":
            for canonical_id in amendment.amends:
                amended.setdefault(canonical_id, []).append(amendment)
    blocks = ["## Shared records"]
    for kind in KIND_ORDER:
        blocks.append(f"### {KIND_HEADINGS[kind]}")
        of_kind = [r for r in records if _record_kind(r) == kind]
        if not of_kind:
            blocks.append("none declared in this result")
        for record in of_kind:
            label = _one_line(record.label)
            blocks.append(f"#### {record.canonical_id} — {label}" if label else f"#### {record.canonical_id}")
            if record.declared_as:
                where = f" in {record.declared_in}" if record.declared_in else ""
                blocks.append(f"Declared as `{record.declared_as}`{where}.")
            if record.text.strip():
                subject = record.declared_as or record.canonical_id  # whose `Part of:` fields these are
                blocks.append(mark_contradictions(_block(record.text), decisions, subject))
            for annotation in sorted_annotations(record):
                blocks.append(f"##### Annotation by {annotation.member} on {annotation.target}")
                if annotation.text.strip():
                    blocks.append(mark_contradictions(_block(annotation.text), decisions, annotation.target))
            # The record's text above is carried verbatim; an accepted amendment of it stands beside
            # it, so Shared records never state a value the reconciliation replaced without saying so.
            for amendment in amended.get(record.canonical_id, ()):
                where = f" ({amendment.member} line {amendment.line})" if amendment.member and amendment.line else ""
                who = f" by {amendment.decided_by}" if amendment.decided_by else ""
                blocks.append(f"##### Accepted amendment{where}")
                blocks.append(f"Accepted{who}; where it differs from the text above, it replaces it: "
                              f"{_block(amendment.text)}")
    return blocks


def _record_kind(record: CanonicalEntry) -> str:
    if record.kind:
        return record.kind
    match = RECORD_ID_RE.match(record.canonical_id)
    return match["kind"] if match else ""


_CARRIED_HEADING = re.compile(r"^(#{1,6})(?=[ \t]|$)")
_CLAIM_TITLE = re.compile(r"verification|blocker", re.IGNORECASE)
CARRIED_LEVEL = 4  # carried headings sit below the contents' levels (1-3), so it lists each of ours once


def nest_headings(text: str) -> str:
    """`text` with every ATX heading outside a fenced block moved down to level 4 or lower (at most 6),
    keeping the order of levels; all else verbatim (DESIGN §7: carried headings nested under their author)."""
    lines = text.split("\n")
    for index, line in outside_fences(lines):
        heading = _CARRIED_HEADING.match(line)
        if heading:
            level = min(6, len(heading[1]) + CARRIED_LEVEL - 1)
            lines[index] = "#" * level + line[len(heading[1]):]
    return "\n".join(lines)


def _member_prose(data: ResultInput, decisions: Decisions) -> list[str]:
    """Each member's prose sections under its author: which report, version and SHA-256, and that these
    are that member's words, never the reviewer's; a member's own verification or blockers section is
    titled as its claim; a line stating a relation the decisions contradict is marked (results.contradictions)."""
    blocks: list[str] = []
    for member in sorted_members(data):
        sections = [(t, x) for t, x in member.prose_sections if t.strip() or x.strip()]
        if not sections:
            continue
        role = _role_title(member.role).lower()
        blocks.append(f"## {_role_title(member.role)} report (`{member.name}`)")
        blocks.append(f"As written in the {role} report, version {member.version}, SHA-256 `{member.sha256}`: "
                      f"the {role} analyst's words, carried verbatim, not the reviewer's.")
        for title, text in sections:
            section = []
            if title.strip():
                title = _one_line(title)
                whose = (f"the {role} report's own claim" if _CLAIM_TITLE.search(title)
                         else f"as the {role} report states it")
                section.append(f"### {title} ({whose})")
            if text.strip():
                section.append(nest_headings(_block(text)))
            # Marked with its heading, as the self-check reads it: a title opening with an ID names the
            # record its `Part of:` lines belong to.
            blocks.append(mark_contradictions("\n\n".join(section), decisions))
    return blocks


def mapping_statement(source: str, relation: str, target: str) -> str:
    """How the result states one accepted mapping, its relation always explicit (DESIGN §7):
    `MEM-OBJ-1 → OBJ-5` (same or new, which the table's relation column says), `MEM-OBJ-2 part of
    OBJ-3`, `EPI-OBJ-4 is superseded by OBJ-8`, `MEM-ABS-1 has no counterpart in the shared set`."""
    if relation == "part-of":
        return f"{source} part of {target}"
    if relation == "supersedes":
        return f"{source} is superseded by {target}"
    if relation == "no-counterpart" or not target:
        return f"{source} has no counterpart in the shared set"
    return f"{source} → {target}"


def no_place_statement(record: str) -> str:
    """How Limitations says a record (disposition `rejected`) has no place; nothing else says it."""
    return f"{record} has no place in the shared set"


def _disposition_sort_key(entry: DispositionEntry) -> tuple:
    rank = ROLE_ORDER.index(entry.member) if entry.member in ROLE_ORDER else len(ROLE_ORDER)
    return (rank, entry.member, record_sort_key(entry.record), entry.record)


def _sorted_dispositions(data: ResultInput) -> list[DispositionEntry]:
    return sorted(data.dispositions, key=_disposition_sort_key)


def _reconciliation(data: ResultInput) -> list[str]:
    blocks = ["## Reconciliation"]
    members = sorted_members(data)
    if members:
        blocks.append(
            "\n".join(f"- {m.name} SHA-256: {m.sha256} (verified)" for m in members)
        )
    blocks.append(
        f"Run manifest SHA-256: {data.verification.manifest_sha256} (verified)"
    )
    mappings = sorted(data.mappings, key=mapping_sort_key)
    blocks.append("### Mappings")
    if not mappings:
        blocks.append("No mapping was accepted.")
    else:
        # A table a parser reads as mapping statements (proposal, relation, canonical record), with the
        # mapping in words beside it: each accepted mapping once, its relation explicit.
        rows = ["| member record | relation | canonical record | mapping |", "|---|---|---|---|"]
        rows += ["| " + " | ".join([escape_cell(m.source), escape_cell(m.relation), escape_cell(m.target or "—"),
                                   escape_cell(mapping_statement(m.source, m.relation, m.target))]) + " |"
                 for m in mappings]
        blocks.append("\n".join(rows))

    dispositions = _sorted_dispositions(data)
    blocks.append("### Dispositions")
    if not dispositions:
        blocks.append("No member record needed a disposition.")
    else:
        # "place", not "canonical record": this table restates the mappings per record and must not be
        # read as a second set of mapping statements.
        rows = ["| member record | member | disposition | relation | place | rationale |",
                "|---|---|---|---|---|---|"]
        for d in dispositions:
            rows.append("| " + " | ".join([
                escape_cell(d.record), escape_cell(d.member), escape_cell(d.disposition),
                escape_cell(d.relation or "—"), escape_cell(d.target or "—"), escape_cell(d.rationale or "—"),
            ]) + " |")
        blocks.append("\n".join(rows))
    lost = [(d, a) for d in dispositions for a in sorted(d.alternatives)]
    if lost:
        blocks.append("### Alternatives not taken")
        items = []
        for d, (relation, target, rationale) in lost:
            chosen = mapping_statement(d.record, d.relation, d.target)
            items.append(_indent_continuation(
                f"- {relation_phrase(d.record, relation, target)}: rejected in favour of the accepted {chosen}.\n"
                f"Rationale: {_block(rationale) or 'none given'}"))
        blocks.append("\n".join(items))

    issues = sorted_issues(data)
    blocks.append("### Integration issue decisions")
    if not issues:
        blocks.append("No integration issues were raised.")
    else:
        accepted = sum(1 for i in issues if i.decision == "accept")
        rejected = sum(1 for i in issues if i.decision == "reject")
        blocks.append(
            f"{len(issues)} integration issues decided: {accepted} accepted, {rejected} rejected."
        )
        items = []
        for issue in issues:
            items.append(
                _indent_continuation(
                    f"- {issue.member} issue {issue.index}, {_decision_word(issue.decision)}"
                    f" by {issue.decided_by}: {_block(issue.text)}\n"
                    f"Rationale: {_block(issue.rationale) or 'none given'}"
                )
            )
        blocks.append("\n".join(items))

    blocks.append("### Amendments")
    amendments = sorted_amendments(data)
    if not amendments:
        blocks.append("No amendments.")
    for amendment in amendments:
        blocks.append(f"Amendment: {_block(amendment.text)}")
        blocks.append(f"Amendment decision: {_decided(amendment)}")

    blocks.append("### Unresolved conflicts")
    conflicts = sorted_conflicts(data)
    if not conflicts:
        blocks.append("No conflict remains unresolved.")
    for conflict in conflicts:
        blocks.append(f"Unresolved conflict: {_block(conflict.text)}")
        if conflict.decided_by or conflict.rationale.strip():
            blocks.append(f"Conflict decision: {_decided(conflict)}")
    return blocks


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _decided(item: AmendmentDecision) -> str:
    """`accepted by X (reconciliation.md line 12). Rationale: …` — who and where only when known."""
    where = f"{item.member} line {item.line}" if item.member and item.line else item.member
    who = f" by {item.decided_by}" if item.decided_by else ""
    return (f"{_decision_word(item.decision)}{who}{f' ({where})' if where else ''}. "
            f"Rationale: {_block(item.rationale) or 'none given'}")


def _limitations(data: ResultInput) -> list[str]:
    items = []
    for conflict in sorted_conflicts(data):
        line = f"- Carried unresolved: {_block(conflict.text)}"
        if conflict.decided_by or conflict.rationale.strip():
            line += f"\nDecision: {_decided(conflict)}"
        items.append(_indent_continuation(line))
    for amendment in sorted_amendments(data):
        if amendment.decision in ("carry", "reject"):
            what = "Carried amendment" if amendment.decision == "carry" else "Rejected amendment"
            items.append(_indent_continuation(
                f"- {what}, not applied to the shared records: {_block(amendment.text)}\n"
                f"Decision: {_decided(amendment)}"))
    for d in _sorted_dispositions(data):
        if d.disposition == "rejected":
            items.append(_indent_continuation(
                f"- {no_place_statement(d.record)} ({d.member} report): every mapping of it was rejected, so "
                f"the shared records say nothing of it; only its member's prose mentions it.\n"
                f"Rationale: {_block(d.rationale) or 'none given'}"))
    for rejected in sorted_rejected(data):
        line = f"- Rejected {_block(rejected.item)}{_declared_as(rejected)}: {_block(rejected.consequence)}"
        if rejected.rationale.strip():
            line += f"\nRationale: {_block(rejected.rationale)}"
        items.append(_indent_continuation(line))
    if not items:
        return ["## Limitations", "Nothing is left out or open: no record without a place, no rejected issue, "
                                  "amendment or canonical record, no unresolved conflict."]
    return ["## Limitations", "\n".join(items)]


def _declared_as(rejected: RejectedItem) -> str:
    """` (declared as `RT-OBJ-3`)` for a rejected canonical record that a member declared under another ID: the
    self-check reads it to know that carried prose naming RT-OBJ-3 names a rejected record."""
    return f" (declared as `{rejected.declared_as}`)" if rejected.record and rejected.declared_as else ""


def _verification(data: ResultInput) -> list[str]:
    v = data.verification
    blocks = [
        "## Verification and blockers",
        "### Semantic verification",
    ]
    if v.approval_note.strip():
        blocks.append(_block(v.approval_note))
    blocks.append(f"Approved by {v.approved_by} at {v.approved_at}.")
    blocks += independent_review_blocks(data.independent_reviews, _one_line)
    blocks.append("### Deterministic validation")
    checks = sorted(v.checks)
    if checks:
        blocks.append("Checks run:\n\n" + "\n".join(f"- {_one_line(c)}" for c in checks))
    blocks.append(
        f"Validation findings: {_count(v.errors, 'error')}, {_count(v.warnings, 'warning')}. "
        f"Run manifest SHA-256 {v.manifest_sha256} verified against the stored member bytes."
        + (f" {_one_line(v.quotations)}" if v.quotations else "")
    )
    if data.corrections:
        blocks.append("### Correction requests")
        blocks.append("\n".join(_indent_continuation(_correction_line(c))
                                for c in sorted(data.corrections, key=lambda c: c.number)))
    blocks.append("### Blockers")
    blockers = sorted(b for b in data.blockers if b.strip())
    if not blockers:
        blocks.append("none")
    else:
        blocks.append("\n".join(_indent_continuation(f"- {_block(b)}") for b in blockers))
    return blocks


def _correction_line(c) -> str:
    about = f"{c.member} {c.record}" if c.record else f"the {c.member} report"
    line = f"- #{c.number} to {about}, raised by {c.author}: {_one_line(c.text)} — {c.state}"
    if c.answer:
        line += f"; {c.answer} in {c.answered_in}: {_one_line(c.answer_text) or '(no text)'}"
    return line


def render_result(data: ResultInput) -> str:
    """The §7 Markdown result. Ends with exactly one newline."""
    header = (
        "---\n"
        + json.dumps(front_matter(data), indent=2, ensure_ascii=False)
        + "\n---"
    )
    decisions = decisions_of(data)
    blocks = [header, f"# {_one_line(data.title)}"]
    blocks += _run_identity(data)
    blocks += _boundary(data, decisions)
    blocks += _source_register(data)
    blocks += _shared_records(data, decisions)
    blocks += _member_prose(data, decisions)
    blocks += _reconciliation(data)
    blocks += _limitations(data)
    blocks += _verification(data)
    return "\n\n".join(blocks).rstrip() + "\n"
def result_json(data: ResultInput) -> dict:
    """The content of `data` as JSON-serialisable data, in rendering order."""
    v = data.verification
    return {
        "front_matter": front_matter(data),
        "title": data.title,
        "members": [
            {
                "name": m.name,
                "role": m.role,
                "version": m.version,
                "sha256": m.sha256,
                "boundary_text": m.boundary_text,
                "prose_sections": [{"title": t, "text": x} for t, x in m.prose_sections],
            }
            for m in sorted_members(data)
        ],
        "sources": [
            {
                "source_id": s.source_id,
                "columns": [{"header": h, "cell": c} for h, c in _source_cells(s)],
            }
            for s in sorted(data.sources, key=source_sort_key)
        ],
        "canonical_records": [
            {
                "canonical_id": r.canonical_id,
                "kind": _record_kind(r),
                "declared_as": r.declared_as or r.canonical_id,
                "label": r.label,
                "text": r.text,
                "annotations": [
                    {"member": a.member, "target": a.target, "text": a.text}
                    for a in sorted_annotations(r)
                ],
            }
            for r in sorted_records(data)
        ],
        "mappings": [
            {"source": m.source, "relation": m.relation, "target": m.target or None}
            for m in sorted(data.mappings, key=mapping_sort_key)
        ],
        "integration_issues": [
            {
                "member": i.member,
                "index": i.index,
                "text": i.text,
                "decision": i.decision,
                "rationale": i.rationale,
                "decided_by": i.decided_by,
            }
            for i in sorted_issues(data)
        ],
        "amendments": [_amendment_json(a) for a in sorted_amendments(data)],
        "unresolved_conflicts": [_amendment_json(c) for c in sorted_conflicts(data)],
        "rejected_items": [
            {"item": r.item, "consequence": r.consequence, "rationale": r.rationale}
            for r in sorted_rejected(data)
        ],
        "verification": {
            "approval_note": v.approval_note,
            "approved_by": v.approved_by,
            "approved_at": v.approved_at,
            "errors": v.errors,
            "warnings": v.warnings,
            "checks": sorted(v.checks),
            "manifest_sha256": v.manifest_sha256,
            **({"independent_reviews": data.independent_reviews} if data.independent_reviews else {}),
        },
        "blockers": sorted(b for b in data.blockers if b.strip()),
        "dispositions": [
            {"member": d.member, "record": d.record, "disposition": d.disposition, "relation": d.relation or None,
             "target": d.target or None, "rationale": d.rationale,
             "alternatives": [{"relation": r, "target": t or None, "rationale": x} for r, t, x in sorted(d.alternatives)]}
            for d in _sorted_dispositions(data)
        ],
    }


def _amendment_json(item: AmendmentDecision) -> dict:
    return {"text": item.text, "decision": item.decision, "rationale": item.rationale, "member": item.member,
            "line": item.line, "decided_by": item.decided_by, "amends": list(item.amends)}

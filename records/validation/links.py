"""The links form's own rules (DESIGN §6): which members are written in it, its declaration headings and
names, citations resolved by member and anchor, and a verification member's Blockers and Limits.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from records import ids
from records.parsing.grammar import LINKS_FORM_TYPE_PREFIX

from .findings import ERROR, WARNING, Finding, MemberInput, Collector
from .reading import front_of

# The reports a blocker may address (`runtime: …`).
ADDRESSEES = frozenset({"runtime", "memory", "workflow", "epistemic", "reconciliation", "boundary",
                        "memory-profile", "synthesis"})


def links_form_by_member(members: Sequence[MemberInput]) -> dict[str, bool]:
    """Per member name, whether it is judged by the links form's rules: its own parse says so, or it is of the
    newest types in a set whose other members are written in the links form (a boundary cites no record)."""
    any_links = any(m.report.links_form for m in members)
    return {m.name: m.report.links_form or (any_links and _newest_type(m)) for m in members}


def _newest_type(member: MemberInput) -> bool:
    doc_type = member.report.doc_type or str(front_of(member.report).get("type", ""))
    return doc_type.startswith(LINKS_FORM_TYPE_PREFIX)


def member_key(name: str) -> str:
    """How a citation names a member: `runtime.md` and the member `runtime` are one."""
    return name.removesuffix(".md")


def check_links_declarations(out: Collector, member: MemberInput) -> None:
    """`#### ID` + `Label:` is the only declaration; a numbered name is refused as malformed."""
    report = member.report
    if not report.links_form:
        return
    lines = report.text.splitlines()
    for decl in report.declarations:
        heading = lines[decl.line_start - 1].lstrip("#").strip() if decl.line_start <= len(lines) else ""
        if decl.form == "heading" and heading != decl.record_id:
            out.add(
                "declaration-heading-form",
                ERROR,
                f"\"{lines[decl.line_start - 1].strip()}\" declares in an older form; in the links form the heading is "
                f"exactly the ID (`#### {decl.record_id}`) and `Label: …` is the first line of its body.",
                record_id=decl.record_id,
                line=decl.line_start,
            )
        if ids.is_numbered(decl.record_id):
            out.add(
                "malformed-id",
                ERROR,
                f"{decl.record_id} has a numbered name; in the links form a name is one to three lower-case words "
                "(no numbers), e.g. RT-OBJ-store.",
                record_id=decl.record_id,
                line=decl.line_start,
            )


def citation_findings(members: Sequence[MemberInput], links_by_member: Mapping[str, bool]) -> list[Finding]:
    """Each citation of a links-form member resolved by its destination: the member and the anchor."""
    declared_by: dict[str, dict[str, int]] = {}  # member key → record ID → declarations of it there
    anchors: set[str] = set()
    for m in members:
        counts: dict[str, int] = defaultdict(int)
        for decl in m.report.declarations:
            counts[decl.record_id] += 1
            anchors.add(decl.record_id.lower())
        declared_by[member_key(m.name)] = counts
        declared_by.setdefault(m.role, counts)
    findings = []
    for m in members:
        if not links_by_member.get(m.name):
            continue
        for c in m.report.citations:
            problem = _citation_problem(c, member_key(m.name), declared_by, anchors)
            if problem:
                code, message = problem
                findings.append(Finding(code, ERROR, m.name, c.record_id, c.line, message))
    return findings


def _citation_problem(c, own: str, declared_by, anchors) -> tuple[str, str] | None:
    if not ids.is_record_id(c.record_id):
        return None  # a malformed ID, reported whole by the ID checks
    link = f"the link {c.written} (column {c.column})"
    expected = c.record_id.lower()
    if c.anchor != expected:
        return ("citation-anchor-mismatch",
                (f"In {link} the text {c.record_id} and the anchor #{c.anchor} disagree; the anchor is the ID in "
                f"lower case, #{expected}."))
    target = member_key(c.member) if c.member else own
    if target not in declared_by:
        return ("citation-member-missing",
                (f"{link} names the member {c.member}, which is not in this run's set; cite the member that declares "
                f"{c.record_id}."))
    count = declared_by[target].get(c.record_id, 0)
    if count == 1:
        return None
    where = sorted(k for k, d in declared_by.items() if d.get(c.record_id) and "." not in k)
    if count == 0 and c.anchor not in anchors:
        return ("citation-unresolved",
                f"{link}: no member declares {c.record_id}, so the anchor #{c.anchor} exists nowhere in this set.")
    if count == 0:
        return ("citation-wrong-member",
                (f"{link} names {c.member or 'this member'}, which does not declare {c.record_id}; "
                f"it is declared in {', '.join(f'{w}.md' for w in where)}."))
    return ("citation-ambiguous",
            f"{link}: {c.member or 'this member'} declares {c.record_id} {count} times; keep one declaration.")


def check_blockers(out: Collector, member: MemberInput) -> None:
    """Each blocker starts with the report it addresses (`runtime: …`)."""
    for blocker in member.report.blockers:
        if not blocker.addressee:
            out.add("blocker-addressee-missing", ERROR,
                    "This blocker names no report; start it with the report it addresses, e.g. `- runtime: …`.",
                    line=blocker.line)
        elif blocker.addressee.lower() not in ADDRESSEES:
            out.add("blocker-addressee-unknown", ERROR,
                    f"\"{blocker.addressee}:\" is not a report of the set; address one of "
                    f"{', '.join(sorted(ADDRESSEES))}.",
                    line=blocker.line)


def limit_findings(members: Sequence[MemberInput]) -> list[Finding]:
    """Each verification limit reaches the synthesis's Limitations, when the set has a synthesis."""
    syntheses = [m for m in members if m.role == "synthesis"]
    if not syntheses:
        return []
    limitations = " ".join(
        "\n".join(m.report.text.splitlines()[s.line_start - 1: s.line_end])
        for m in syntheses for s in m.report.sections if s.title.strip().lower().startswith("limitations")
    )
    findings = []
    for m in members:
        for limit in m.report.limits:
            named = [r for r in limit.references if ids.is_record_id(r)]
            if named and all(r in limitations for r in named):
                continue
            if not named and " ".join(limit.text.split())[:60] in " ".join(limitations.split()):
                continue
            findings.append(Finding(
                "limit-not-in-synthesis", WARNING, m.name, named[0] if named else "", limit.line,
                f"The limit \"{' '.join(limit.text.split())[:80]}\" does not reach the synthesis's Limitations; "
                "carry it there.",
            ))
    return findings

"""IDs within one member: tokens that break the ID grammar, duplicate declarations, a slug that
extends a declared ID, analyst prefixes, and annotations on the member's own records.
"""
from __future__ import annotations

from collections import Counter

from records import ids
from records.document import Declaration, ParsedReport

from .findings import ERROR, WARNING, MemberInput, Collector, severity_of
from .reading import split_id, is_record_id
from .vocabulary import ROLE_PREFIXES


def check_malformed_ids(out: Collector, report: ParsedReport, current: bool) -> None:
    """Tokens shaped like IDs that break the grammar, named whole: an error where they
    declare, and in references of the current form; a warning in older references."""
    for bad in report.malformed_ids:
        where = "declares a record" if bad.declared else "is cited"
        out.add(
            "malformed-id",
            ERROR if bad.declared or current else WARNING,
            f"{bad.token} {where} but is not a record ID: it has {ids.malformed_reason(bad.token)}. "
            "Write an optional RT-/MEM-/EPI- prefix, a kind (CMP, OBJ, RTE, CLM, ABS, BAP) and a number or one to three lower-case words.",
            record_id=bad.token,
            line=bad.line,
        )


def check_declared_ids(out: Collector, member: MemberInput, current: bool) -> None:
    report = member.report
    declared = [d.record_id for d in report.declarations]
    declared_set = set(declared)
    counts = Counter(declared)
    reported_duplicates: set[str] = set()
    for decl in report.declarations:
        record_id = decl.record_id
        if not is_record_id(record_id):
            out.add(
                "malformed-id",
                ERROR,
                f"{record_id} is not a record ID: write an optional RT-/MEM-/EPI- prefix, a kind (CMP, OBJ, RTE, CLM, ABS, BAP) and a number or one to three lower-case words.",
                record_id=record_id,
                line=decl.line_start,
            )
            continue
        if counts[record_id] > 1 and record_id not in reported_duplicates:
            reported_duplicates.add(record_id)
            lines = ", ".join(str(d.line_start) for d in report.declarations if d.record_id == record_id)
            out.add(
                "duplicate-declaration",
                ERROR,
                f"{record_id} is declared {counts[record_id]} times in this member (lines {lines}); keep one declaration and give any other referent its own ID.",
                record_id=record_id,
                line=decl.line_start,
            )
        parent = slug_parent(record_id)
        if parent and parent in declared_set:
            out.add(
                "slug-extends-declared-id",
                ERROR,
                f"{record_id} is the declared ID {parent} plus a word; choose a distinct slug so neither can be misread as the other.",
                record_id=record_id,
                line=decl.line_start,
            )
        _check_prefix(out, member, decl, current)


def slug_parent(record_id: str) -> str:
    prefix, kind, name = split_id(record_id)
    if not kind or name.isdigit() or "-" not in name:
        return ""
    parent_name = name.rsplit("-", 1)[0]
    return f"{prefix + '-' if prefix else ''}{kind}-{parent_name}"


def _check_prefix(out: Collector, member: MemberInput, decl: Declaration, current: bool) -> None:
    allowed = ROLE_PREFIXES.get(member.role)
    if allowed is None:
        return
    prefix = split_id(decl.record_id)[0]
    if not prefix:
        if member.role == "runtime" and not current:
            return  # numbered generations' runtime members use bare IDs
        out.add(
            "foreign-prefix",
            severity_of(current),
            f"{decl.record_id} has no analyst prefix; a {member.role} report declares under {allowed[0]}-.",
            record_id=decl.record_id,
            line=decl.line_start,
        )
    elif prefix not in allowed:
        out.add(
            "foreign-prefix",
            ERROR,
            f"{decl.record_id} is declared under another analyst's prefix {prefix}-; a {member.role} report declares under {allowed[0]}- and annotates others' records with \"On {decl.record_id}\".",
            record_id=decl.record_id,
            line=decl.line_start,
        )


def check_annotations(out: Collector, report: ParsedReport) -> None:
    declared = {d.record_id for d in report.declarations}
    for annotation in report.annotations:
        if annotation.target in declared:
            out.add(
                "annotation-on-own-record",
                ERROR,
                f"This member both declares {annotation.target} and annotates it; move the annotation's fields into the declaration.",
                record_id=annotation.target,
                line=annotation.line_start,
            )

"""The record contract (DESIGN §6) checked on parsed member reports.

Pure functions on `records.document` dataclasses: no ORM, no Django. Every
check returns `Finding` values; nothing raises on bad content.

Generations. A member written in the current form (prefixed slug IDs such as
`MEM-OBJ-playbook-content`) gets the strict rules as errors. Older
generations (bare numbered IDs as in seed 000, or prefixed numbered IDs such
as `RT-OBJ-2`) are held only to what they required: where a rule changed
(section lists, route fields in prose or summary tables, prose line anchors,
...) the finding is a warning. The generation is read from the member's own
ID shapes, then its front matter `type`; a member naming no record at all
takes the generation of the rest of its set.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import hashlib
import re
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Collection, Iterable, Mapping, Sequence

import yaml

from records import generations, ids, profiles
from records.parsing import ROUTE_FIELD_LABELS
from records.document import Declaration, ParsedReport
from records.profiles import (  # noqa: F401 - re-exported: callers read the vocabulary here
    PROFILE_ASSESSMENTS,
    PROFILE_AXES,
    PROFILE_BASES,
    PROFILE_FIRST_AXES,
    PROFILE_LATER_AXES,
    YES_NO_AXES,
)

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    code: str  # stable, kebab-case
    severity: str  # "error" | "warning"
    member: str  # member label ("memory.md", a member id string, "ARTIFACT.yaml")
    record_id: str  # "" when not about one record
    line: int  # 0 when not applicable
    message: str  # what is wrong and what to do

    def sort_key(self) -> tuple:
        return (self.member, self.line, self.code, self.record_id, self.message, self.severity)


@dataclass(frozen=True)
class RunFacts:
    run_id: str
    reviewed_boundary: str  # the frozen source commit
    revises: tuple[str, ...] = ()  # run IDs of the final runs this run revises, nearest first (DESIGN §3)


@dataclass(frozen=True)
class MemberInput:
    name: str  # member label used in findings
    role: str  # runtime, memory, workflow, epistemic, boundary, overview, reconciliation, memory-profile, synthesis, verification, result
    report: ParsedReport


# --------------------------------------------------------------------------
# Vocabulary (DESIGN §2, Appendix A)

KIND_HEADINGS = {
    "CMP": "Components",
    "OBJ": "Operative objects",
    "RTE": "Routes",
    "CLM": "Claims",
    "ABS": "Evidenced absences",
    "BAP": "Behavioral-authority paths",
}
CONCLUSION_VALUES = (
    "absent",
    "inapplicable",
    "uninspected",
    "claimed",
    "afforded",
    "wired",
    "observed",
    "causally supported",
)
GUARANTEE_VALUES = (
    "invariant",
    "protocol",
    "policy",
    "best effort",
    "deployment guarantee",
    "no claimed guarantee",
)
ROUTE_FIELDS = ROUTE_FIELD_LABELS  # the seven route fields of DESIGN §2, as the parser reads them
RESULT_DISPOSITIONS = ("complete", "blocked", "out-of-scope")

# Sections each member type requires, in order (top-level `##` headings).
# Sections not listed may appear anywhere between them.
REQUIRED_SECTIONS = {
    "memory": (
        "Boundary and evidence",
        "Core ideas",
        "Shared records",
        "Write side",
        "Read-back",
        "Integration issues",
        "Limitations and checks",
    ),
    "runtime": ("Runtime account", "Shared records"),
    "workflow": ("Workflow account", "Shared records"),
    "epistemic": (
        "Source-and-claim boundary",
        "Epistemic-object inventory",
        "Authority-route ledger",
        "System-claim versus route comparison",
        "Bounded conclusion",
        "Shared records",
    ),
    "overview": (
        "Boundary and evidence",
        "Source register",
        "Bounded synthesis",
        "Limitations",
        "Verification and blockers",
    ),
    "reconciliation": ("Reconciliation",),
    "boundary": ("Source register",),
    "result": (
        "Run identity",
        "Boundary and evidence",
        "Source register",
        "Shared records",
        "Reconciliation",
        "Limitations",
        "Verification and blockers",
    ),
}
ROLES_WITH_SHARED_RECORDS = ("memory", "runtime", "workflow", "epistemic", "result")
# Which analyst prefixes a member of each role may declare under.
ROLE_PREFIXES = {
    "runtime": ("RT",),
    "memory": ("MEM",),
    "epistemic": ("EPI",),
}

# The memory-comparison profile's vocabulary and checks live in records.profiles.

# --------------------------------------------------------------------------
# ID grammar: records.ids is the one statement of it.


def is_record_id(value: str) -> bool:
    return ids.is_record_id(value)


def is_source_id(value: str) -> bool:
    return ids.is_source_id(value)


def _split_id(record_id: str) -> tuple[str, str, str]:
    """(prefix, kind, name) of a well-formed record ID; ("", "", "") otherwise."""
    parsed = ids.parse_id(record_id)
    if parsed is None or parsed[1] == ids.SOURCE_KIND:
        return "", "", ""
    return parsed


def _ids_in(text: str) -> list[str]:
    return [m.record_id for m in ids.find_ids(text) if is_record_id(m.record_id)]


# A full record ID inside a sentence pattern (no source IDs).
_ID_PATTERN = r"(?<![A-Za-z0-9_\-])" + ids.RECORD_ID_RE.pattern.replace("?P<prefix>", "?:").replace(
    "?P<kind>", "?:"
).replace("?P<tail>", "?:") + r"(?![A-Za-z0-9_])"


# --------------------------------------------------------------------------
# Small readers over a ParsedReport


def _norm_title(title: str) -> str:
    title = title.strip().strip("#").strip()
    title = re.sub(r"^\d+\.\s*", "", title)
    return re.sub(r"\s+", " ", title.rstrip(":. ")).lower()


def _strip_ticks(value: str) -> str:
    value = value.strip()
    while len(value) >= 2 and value[0] == "`" and value[-1] == "`":
        value = value[1:-1].strip()
    return value


# The last reports' excluded and prose lines, by identity: validation asks several times per report. A parsed
# report is frozen data, so what was computed for it stays true; the entry holds the report, so its id is not reused.
_LINES_MEMO: dict[int, tuple[ParsedReport, frozenset[int], tuple[tuple[int, str], ...]]] = {}
_LINES_MEMO_SIZE = 16
_LINES_MEMO_LOCK = threading.Lock()


def _lines_of(report: ParsedReport) -> tuple[frozenset[int], tuple[tuple[int, str], ...]]:
    entry = _LINES_MEMO.get(id(report))
    if entry is None or entry[0] is not report:
        excluded = frozenset(_compute_excluded_lines(report))
        prose = tuple((number, line) for number, line in enumerate(report.text.splitlines(), start=1)
                      if number not in excluded)
        entry = (report, excluded, prose)
        with _LINES_MEMO_LOCK:
            while len(_LINES_MEMO) >= _LINES_MEMO_SIZE:
                _LINES_MEMO.pop(next(iter(_LINES_MEMO)))
            _LINES_MEMO[id(report)] = entry
    return entry[1], entry[2]


def _excluded_lines(report: ParsedReport) -> frozenset[int]:
    """Lines inside quotations, fences and the front matter: never scanned for prose rules."""
    return _lines_of(report)[0]


def _compute_excluded_lines(report: ParsedReport) -> set[int]:
    # Segments merge quotations into the declaration that holds them, so the
    # extents are rebuilt here from the quotations, `>` lines and fences.
    excluded: set[int] = set()
    for segment in report.segments:
        if segment.kind in ("quotation", "fence", "front_matter"):
            count = max(1, len(segment.text.splitlines()))
            excluded.update(range(segment.line, segment.line + count))
    for quotation in report.quotations:
        count = max(1, len(quotation.text.splitlines()))
        excluded.update(range(quotation.line, quotation.line + count + 1))  # body, then its anchor line
    fence = ""
    for number, line in enumerate(report.text.splitlines(), start=1):
        match = _FENCE_RE.match(line)
        if fence:
            excluded.add(number)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and not match.group(2).strip():
                fence = ""
        elif match:
            fence = match.group(1)
            excluded.add(number)
        elif _QUOTE_LINE_RE.match(line):
            excluded.add(number)
    return excluded


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_QUOTE_LINE_RE = re.compile(r"^ {0,3}>")


def _prose_lines(report: ParsedReport) -> tuple[tuple[int, str], ...]:
    return _lines_of(report)[1]


def _report_generation(report: ParsedReport) -> str:
    """A generation of `records.ids` read from the member's own IDs (declarations,
    else annotations, else references), then its front matter `type`; "" when
    neither tells."""
    shapes = [d.record_id for d in report.declarations if is_record_id(d.record_id)]
    if not shapes:
        shapes = [a.target for a in report.annotations if is_record_id(a.target)]
    if not shapes:
        shapes = [r.record_id for r in report.references if is_record_id(r.record_id)]
    if shapes:
        return ids.generation_of(shapes)
    doc_type = report.doc_type or str(_front(report).get("type", ""))
    if doc_type.startswith("agentic-system-analyses/"):
        return ids.GENERATION_SLUG
    if doc_type.startswith("agentic-systems/"):
        return ids.GENERATION_PREFIXED
    return ""


def _front(report: ParsedReport) -> dict:
    """The front matter as a mapping ({} when absent or not a mapping)."""
    return report.front_matter if isinstance(report.front_matter, dict) else {}


def _severity(current: bool) -> str:
    return ERROR if current else WARNING


class _Collector:
    def __init__(self, member: str):
        self.member = member
        self.findings: list[Finding] = []

    def add(self, code: str, severity: str, message: str, *, record_id: str = "", line: int = 0) -> None:
        self.findings.append(Finding(code, severity, self.member, record_id, line, message))


# --------------------------------------------------------------------------
# Public API


def validate_member(member: MemberInput, run: RunFacts) -> list[Finding]:
    """Findings about one member on its own (no references across the set)."""
    generation = _report_generation(member.report) or member.report.generation
    current = generation == ids.GENERATION_SLUG
    return _sorted(_held_to_generation(_member_findings(member, run, current=current), {member.name: current}))


def validate_set(
    members: Sequence[MemberInput],
    run: RunFacts,
    *,
    canonical_ids: Collection[str] = (),
    extra_mappings: Sequence[tuple[str, str, str]] = (),
) -> list[Finding]:
    """Member-level findings of every member plus the checks across the set."""
    generations = {m.name: _report_generation(m.report) for m in members}
    known = [g for g in generations.values() if g]
    set_generation = Counter(known).most_common(1)[0][0] if known else ""
    current_by_member = {}
    for m in members:
        generation = generations[m.name] or set_generation or m.report.generation
        current_by_member[m.name] = generation == ids.GENERATION_SLUG

    findings: list[Finding] = []
    for m in members:
        findings.extend(_member_findings(m, run, current=current_by_member[m.name]))
    findings.extend(_set_findings(members, run, current_by_member, canonical_ids, extra_mappings))
    return _sorted(_held_to_generation(findings, current_by_member))


def _held_to_generation(findings: Iterable[Finding], current_by_member: Mapping[str, bool]) -> list[Finding]:
    """Each finding at the severity its member's generation holds it to (records.generations);
    a rule the member's generation did not have is dropped. Findings about no member stay."""
    kept = []
    for finding in findings:
        if finding.member not in current_by_member:
            kept.append(finding)
            continue
        severity = generations.held_to(finding.code, current=current_by_member[finding.member], severity=finding.severity)
        if severity is not None:
            kept.append(finding if severity == finding.severity else dataclasses.replace(finding, severity=severity))
    return kept


def validate_manifest(artifact_yaml_text: str, files: Mapping[str, bytes]) -> list[Finding]:
    """Check an `ARTIFACT.yaml` against the files kept beside it.

    `files` maps each file name in the set directory to its exact bytes
    (`ARTIFACT.yaml` itself, if included, is ignored).
    """
    out = _Collector("ARTIFACT.yaml")
    try:
        manifest = yaml.safe_load(artifact_yaml_text)
    except yaml.YAMLError as exc:
        out.add("manifest-unreadable", ERROR, f"ARTIFACT.yaml is not valid YAML ({exc.__class__.__name__}); fix its syntax.")
        return _sorted(out.findings)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("members"), dict):
        out.add(
            "manifest-unreadable",
            ERROR,
            "ARTIFACT.yaml needs a `members:` mapping from each member file name to its `sha256:` pin.",
        )
        return _sorted(out.findings)
    pins = manifest["members"]
    for name in sorted(pins, key=str):
        entry = pins[name]
        name = str(name)
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            out.add(
                "malformed-pin",
                ERROR,
                f"The pin for {name} is not a lower-case 64-digit hex SHA-256 under `sha256:`; write the digest of the file's exact bytes.",
                record_id=name,
            )
            continue
        if name not in files:
            out.add(
                "pinned-file-missing",
                ERROR,
                f"ARTIFACT.yaml pins {name}, but the set holds no such file; add the file or remove its pin.",
                record_id=name,
            )
            continue
        actual = hashlib.sha256(files[name]).hexdigest()
        if actual != digest:
            out.add(
                "pin-mismatch",
                ERROR,
                f"{name} has SHA-256 {actual}, but ARTIFACT.yaml pins {digest}; the bytes changed after pinning — restore them or re-pin.",
                record_id=name,
            )
    for name in sorted(files):
        if name == "ARTIFACT.yaml" or name in {str(k) for k in pins}:
            continue
        out.add(
            "member-not-pinned",
            ERROR,
            f"{name} is in the set but ARTIFACT.yaml does not pin it; add its SHA-256 under `members:` or remove the file.",
            record_id=name,
        )
    return _sorted(out.findings)


def _sorted(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(set(findings), key=Finding.sort_key)


# --------------------------------------------------------------------------
# Member-level checks


def _member_findings(member: MemberInput, run: RunFacts, *, current: bool) -> list[Finding]:
    out = _Collector(member.name)
    report = member.report
    _check_identity(out, report, run, current)
    _check_sections(out, member, current)
    _check_shared_records(out, member, current)
    _check_validation_pending(out, member)
    _check_declared_ids(out, member, current)
    _check_malformed_ids(out, report, current)
    _check_annotations(out, report)
    _check_part_of(out, report, current)
    _check_ranges(out, report, current)
    _check_status_fields(out, report, current)
    _check_route_fields(out, report, current)
    _check_source_register(out, report, run, current)
    _check_quotations(out, report, run, current)
    _check_prose_anchors(out, report, current)
    _check_amendment_form(out, member, current)
    _check_boundary_facts(out, member)
    _check_reconciliation_section(out, member)
    _check_profile_shape(out, member, current)
    return out.findings


def _check_identity(out: _Collector, report: ParsedReport, run: RunFacts, current: bool) -> None:
    if report.front_matter_error:
        out.add(
            "front-matter-unreadable",
            _severity(current),
            f"The front matter could not be read ({report.front_matter_error}); fix its YAML so run-id and reviewed-boundary can be checked.",
            line=1,
        )
    front = _front(report)
    run_id = front.get("run-id")
    if run_id is not None and run.run_id and str(run_id).strip() in run.revises:
        out.add(
            "run-id-of-revised-run",
            WARNING,
            f"The front matter says run-id {run_id}, the final run that this run revises: the member was carried "
            f"over unchanged. Give it run-id {run.run_id} when you next upload it.",
            line=1,
        )
    elif run_id is not None and run.run_id and str(run_id).strip() != run.run_id:
        out.add(
            "run-id-mismatch",
            ERROR,
            f"The front matter says run-id {run_id}, but this run is {run.run_id}; upload the member to its own run or correct its run-id.",
            line=1,
        )
    boundary = front.get("reviewed-boundary")
    if boundary is not None and run.reviewed_boundary and str(boundary).strip() != run.reviewed_boundary:
        out.add(
            "reviewed-boundary-mismatch",
            ERROR,
            f"The front matter says reviewed-boundary {boundary}, but this run reviews {run.reviewed_boundary}; the member analysed another commit.",
            line=1,
        )


def _top_sections(report: ParsedReport):
    levels = [s.level for s in report.sections if s.level >= 2]
    top = min(levels) if levels else None
    return [s for s in report.sections if top is None or s.level == top]


def _find_section(report: ParsedReport, title: str):
    wanted = _norm_title(title)
    for section in _top_sections(report):
        if _norm_title(section.title) == wanted:
            return section
    for section in report.sections:
        if _norm_title(section.title) == wanted:
            return section
    return None


def _check_sections(out: _Collector, member: MemberInput, current: bool) -> None:
    required = REQUIRED_SECTIONS.get(member.role)
    if not required:
        return
    severity = _severity(current)
    found = []
    for title in required:
        section = _find_section(member.report, title)
        if section is None:
            out.add(
                "missing-section",
                severity,
                f"A {member.role} report needs a \"{title}\" section; add it in its place ({', '.join(required)}).",
            )
        else:
            found.append((title, section))
    for (before, first), (after, second) in zip(found, found[1:]):
        if second.line_start < first.line_start:
            out.add(
                "section-out-of-order",
                severity,
                f"\"{after}\" comes before \"{before}\"; a {member.role} report orders its sections {', '.join(required)}.",
                line=second.line_start,
            )


def _check_shared_records(out: _Collector, member: MemberInput, current: bool) -> None:
    if member.role not in ROLES_WITH_SHARED_RECORDS:
        return
    report = member.report
    shared = _find_section(report, "Shared records")
    if shared is None:
        return
    lines = report.text.splitlines()
    inside = [s for s in report.sections if shared.line_start < s.line_start <= shared.line_end]
    body = "\n".join(lines[shared.line_start : shared.line_end]).lower()
    by_title = {_norm_title(s.title): s for s in inside}
    severity = _severity(current)
    any_kind_heading = any(_norm_title(h) in by_title for h in KIND_HEADINGS.values())
    if not any_kind_heading and "none declared in this member" in body and not report.declarations:
        return
    for kind, heading in KIND_HEADINGS.items():
        section = by_title.get(_norm_title(heading))
        if section is None:
            out.add(
                "missing-kind-heading",
                severity,
                f"Shared records has no \"{heading}\" heading; add it, with its declarations or the words \"none declared in this member\".",
                line=shared.line_start,
            )
            continue
        declared_here = any(
            d.kind == kind and section.line_start <= d.line_start <= max(section.line_end, section.line_start)
            for d in report.declarations
        )
        text = "\n".join(lines[section.line_start : section.line_end]).lower()
        if not declared_here and "none declared" not in text and not any(d.kind == kind for d in report.declarations):
            out.add(
                "empty-kind-heading",
                severity,
                f"\"{heading}\" declares nothing; write \"none declared in this member\" under it.",
                line=section.line_start,
            )


_VALIDATION_PENDING_RE = re.compile(r"^\W*validation\W*:\W*pending\b", re.IGNORECASE)


def _check_validation_pending(out: _Collector, member: MemberInput) -> None:
    if member.role != "memory":
        return
    for number, line in _prose_lines(member.report):
        if _VALIDATION_PENDING_RE.match(line):
            out.add(
                "validation-pending",
                ERROR,
                "The memory report still says \"Validation: pending\"; run its validation and record the outcome before upload.",
                line=number,
            )


def _check_malformed_ids(out: _Collector, report: ParsedReport, current: bool) -> None:
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


def _check_declared_ids(out: _Collector, member: MemberInput, current: bool) -> None:
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
        parent = _slug_parent(record_id)
        if parent and parent in declared_set:
            out.add(
                "slug-extends-declared-id",
                ERROR,
                f"{record_id} is the declared ID {parent} plus a word; choose a distinct slug so neither can be misread as the other.",
                record_id=record_id,
                line=decl.line_start,
            )
        _check_prefix(out, member, decl, current)


def _slug_parent(record_id: str) -> str:
    prefix, kind, name = _split_id(record_id)
    if not kind or name.isdigit() or "-" not in name:
        return ""
    parent_name = name.rsplit("-", 1)[0]
    return f"{prefix + '-' if prefix else ''}{kind}-{parent_name}"


def _check_prefix(out: _Collector, member: MemberInput, decl: Declaration, current: bool) -> None:
    allowed = ROLE_PREFIXES.get(member.role)
    if allowed is None:
        return
    prefix = _split_id(decl.record_id)[0]
    if not prefix:
        if member.role == "runtime" and not current:
            return  # numbered generations' runtime members use bare IDs
        out.add(
            "foreign-prefix",
            _severity(current),
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


def _check_annotations(out: _Collector, report: ParsedReport) -> None:
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


_PART_OF_RE = re.compile(r"Part of\s*:", re.IGNORECASE)
_PART_OF_LINE_RE = re.compile(r"^(?:[-•*] )?Part of:(.*)$")


def _part_of_lines(report: ParsedReport) -> list[tuple[int, str]]:
    return [(number, line) for number, line in _prose_lines(report) if _PART_OF_RE.search(line)]


def _part_of_value(match: re.Match) -> str:
    """The ID a `_PART_OF_LINE_RE` match names, without trailing period or backticks."""
    return _strip_ticks(match.group(1).strip().rstrip("."))


def _check_part_of(out: _Collector, report: ParsedReport, current: bool) -> None:
    severity = _severity(current)
    lines = _part_of_lines(report)
    for decl in report.declarations:
        seen: list[tuple[int, str]] = []
        for number, line in lines:
            if not decl.line_start <= number <= decl.line_end:
                continue
            match = _PART_OF_LINE_RE.match(line)
            if not match:
                out.add(
                    "part-of-misplaced",
                    severity,
                    "\"Part of:\" must stand on its own unindented line inside the declaration (`Part of: RT-OBJ-2`).",
                    record_id=decl.record_id,
                    line=number,
                )
                continue
            value = _part_of_value(match)
            seen.append((number, value))
            if not is_record_id(value):
                out.add(
                    "part-of-not-one-id",
                    severity,
                    f"\"Part of: {match.group(1).strip()}\" must name exactly one full record ID and nothing else.",
                    record_id=decl.record_id,
                    line=number,
                )
            elif value == decl.record_id:
                out.add(
                    "part-of-self",
                    severity,
                    f"{decl.record_id} says it is part of itself; name the containing record instead.",
                    record_id=decl.record_id,
                    line=number,
                )
        if len(seen) > 1:
            out.add(
                "part-of-repeated",
                severity,
                f"{decl.record_id} has {len(seen)} \"Part of:\" lines; a record is part of at most one other record.",
                record_id=decl.record_id,
                line=seen[1][0],
            )
    if not current:
        return
    for number, line in lines:
        if not _PART_OF_LINE_RE.match(line):
            continue
        if any(d.line_start <= number <= d.line_end for d in report.declarations):
            continue
        out.add(
            "part-of-outside-declaration",
            ERROR,
            "\"Part of:\" stands outside any declaration; move it under the `#### ID — Label` heading of the record it belongs to.",
            line=number,
        )


def _check_ranges(out: _Collector, report: ParsedReport, current: bool) -> None:
    for ref in report.ranges:
        out.add(
            "range-reference",
            _severity(current),
            f"\"{ref.text}\" is a range; write every ID in full (e.g. RTE-1, RTE-2, RTE-3).",
            line=ref.line,
        )


_STATUS_LABEL_RE = re.compile(r"conclusion status$", re.IGNORECASE)
_PROSE_STATUS_RE = re.compile(
    r"((?:[A-Za-z-]+ )?conclusion status)\s*:\s*(.*?)(?=(?:[A-Za-z-]+ )?conclusion status\s*:|$)", re.IGNORECASE
)


def _check_status_fields(out: _Collector, report: ParsedReport, current: bool) -> None:
    records = [(d.record_id, d.kind, d.fields, d.text, d.line_start, True) for d in report.declarations]
    records += [(a.target, "", a.fields, a.text, a.line_start, False) for a in report.annotations]
    excluded = _excluded_lines(report)
    for record_id, kind, fields, text, line_start, is_declaration in records:
        if current:
            _check_status_current(out, record_id, kind, fields, line_start, is_declaration)
        else:
            _check_status_older(out, record_id, kind, text, line_start, excluded, is_declaration)


def _check_status_current(out, record_id, kind, fields, line_start, is_declaration) -> None:
    labels: Counter = Counter()
    status_count = 0
    for field in fields:
        label = field.label.strip()
        if _STATUS_LABEL_RE.search(label):
            status_count += 1
            values, code = CONCLUSION_VALUES, "invalid-conclusion-status"
        elif label.lower() == "guarantee strength":
            values, code = GUARANTEE_VALUES, "invalid-guarantee-strength"
        else:
            continue
        labels[label.lower()] += 1
        if labels[label.lower()] == 2:
            out.add(
                "duplicate-status-label",
                ERROR,
                f"{record_id} has \"{label}\" twice (labels are compared case-insensitively); keep one value per field.",
                record_id=record_id,
                line=field.line,
            )
        if _strip_ticks(field.value) not in values:
            out.add(
                code,
                ERROR,
                f"\"{label}: {field.value.strip()}\" must hold exactly one of: {', '.join(values)} — nothing else on the line.",
                record_id=record_id,
                line=field.line,
            )
    if is_declaration and kind == "RTE" and status_count == 0:
        out.add(
            "missing-conclusion-status",
            ERROR,
            f"Route {record_id} states no conclusion status; add at least one `- <layer> conclusion status: <value>` bullet.",
            record_id=record_id,
            line=line_start,
        )


def _check_status_older(out, record_id, kind, text, line_start, excluded, is_declaration) -> None:
    status_count = 0
    for offset, line in enumerate(text.splitlines()):
        number = line_start + offset
        if number in excluded:
            continue
        for match in _PROSE_STATUS_RE.finditer(line):
            status_count += 1
            value = _strip_ticks(match.group(2))
            value = value.lstrip("`*_ ").lower()
            if not any(value.startswith(v) for v in CONCLUSION_VALUES):
                out.add(
                    "unreadable-conclusion-status",
                    WARNING,
                    f"\"{match.group(1)}: {match.group(2).strip()[:60]}\" does not begin with one of: {', '.join(CONCLUSION_VALUES)}.",
                    record_id=record_id,
                    line=number,
                )
    if is_declaration and kind == "RTE" and status_count == 0:
        out.add(
            "missing-conclusion-status",
            WARNING,
            f"Route {record_id} states no readable conclusion status (older form: accepted, but the status cannot be read).",
            record_id=record_id,
            line=line_start,
        )


def _check_route_fields(out: _Collector, report: ParsedReport, current: bool) -> None:
    excluded = _excluded_lines(report)
    for decl in report.declarations:
        if decl.kind != "RTE":
            continue
        if current:
            _check_route_fields_current(out, decl)
        else:
            _check_route_fields_older(out, decl, excluded)


_REASON_RE = re.compile(r"^(inapplicable|uninspected)\b(.*)$", re.IGNORECASE | re.DOTALL)


def _check_route_fields_current(out: _Collector, decl: Declaration) -> None:
    wanted = {label.lower(): label for label in ROUTE_FIELDS}
    seen: dict[str, int] = {}
    for field in decl.fields:
        key = field.label.strip().lower()
        if key not in wanted or not field.bullet:
            continue
        label = wanted[key]
        if key in seen:
            out.add(
                "duplicate-route-field",
                ERROR,
                f"Route {decl.record_id} gives \"{label}\" twice; keep one bullet.",
                record_id=decl.record_id,
                line=field.line,
            )
            continue
        seen[key] = field.line
        value = field.value.strip()
        if not _strip_ticks(value):
            out.add(
                "empty-route-field",
                ERROR,
                f"Route {decl.record_id} leaves \"{label}\" empty; state it, or write `inapplicable — reason` / `uninspected — reason`.",
                record_id=decl.record_id,
                line=field.line,
            )
            continue
        match = _REASON_RE.match(_strip_ticks(value))
        if match and not re.match(r"^\s*[—–]\s*\S", match.group(2)):
            out.add(
                "route-field-needs-reason",
                ERROR,
                f"Route {decl.record_id}: \"{label}: {value}\" needs its reason, written `{match.group(1).lower()} — reason`.",
                record_id=decl.record_id,
                line=field.line,
            )
    for key, label in wanted.items():
        if key not in seen:
            out.add(
                "missing-route-field",
                ERROR,
                f"Route {decl.record_id} has no \"- {label}:\" bullet; add it (unindented, in the route's own region).",
                record_id=decl.record_id,
                line=decl.line_start,
            )


def _check_route_fields_older(out: _Collector, decl: Declaration, excluded: set[int]) -> None:
    prose = "\n".join(
        line for offset, line in enumerate(decl.text.splitlines()) if decl.line_start + offset not in excluded
    ).lower()
    missing = [label for label in ROUTE_FIELDS if f"{label.lower()}:" not in prose]
    if missing:
        out.add(
            "missing-route-field",
            WARNING,
            f"Route {decl.record_id} does not label {', '.join(missing)} (older compact form: accepted, but these fields cannot be read).",
            record_id=decl.record_id,
            line=decl.line_start,
        )


def _revision_cell(row) -> str:
    for header, cell in row.columns:
        if header.strip().lower().startswith("revision"):
            return _strip_ticks(cell)
    return ""


def _check_source_register(out: _Collector, report: ParsedReport, run: RunFacts, current: bool) -> None:
    if not report.sources:
        return
    counts = Counter(row.source_id for row in report.sources)
    for row in report.sources:
        if len(row.columns) != 8:
            out.add(
                "source-row-columns",
                ERROR,
                f"{row.source_id} has {len(row.columns)} columns; every Source register row has eight (source ID, kind, identity/location, revision, evidence layer, inspected scope, citation anchors, access gaps).",
                record_id=row.source_id,
                line=row.line,
            )
        if not is_source_id(row.source_id):
            out.add(
                "malformed-id",
                ERROR,
                f"{row.source_id} is not a source ID; sources are numbered SRC-1, SRC-2, …",
                record_id=row.source_id,
                line=row.line,
            )
    for source_id, count in sorted(counts.items()):
        if count > 1:
            first = min(row.line for row in report.sources if row.source_id == source_id)
            out.add(
                "duplicate-source",
                ERROR,
                f"{source_id} appears {count} times in the Source register; number each source once.",
                record_id=source_id,
                line=first,
            )
    commit = run.reviewed_boundary.strip()
    if commit and not any(commit in _revision_cell(row) for row in report.sources):
        out.add(
            "no-source-at-boundary",
            ERROR,
            f"No Source register row has revision {commit}, the run's reviewed boundary; register the frozen commit.",
            line=min(row.line for row in report.sources),
        )


def _same_commit(named: str, commit: str) -> bool:
    named = _strip_ticks(named).lower()
    commit = commit.lower()
    return named == commit or (len(named) >= 7 and commit.startswith(named))


def _check_quotations(out: _Collector, report: ParsedReport, run: RunFacts, current: bool) -> None:
    commit = run.reviewed_boundary.strip()
    for quotation in report.quotations:
        if quotation.commit and commit and not _same_commit(quotation.commit, commit):
            out.add(
                "quotation-commit-mismatch",
                ERROR,
                f"The quotation from {quotation.path} is anchored at {quotation.commit}, not the run's commit {commit}; quote the reviewed commit.",
                line=quotation.line,
            )
        if not quotation.text.strip():
            out.add(
                "empty-quotation",
                _severity(current),
                f"The quotation anchored at {quotation.path or 'its source'} has no body; quote the passage or drop the anchor.",
                line=quotation.line,
            )


_PROSE_ANCHOR_RE = re.compile(
    r"(?<![\w/.@-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z][A-Za-z0-9]*):(\d+(?:[-–]\d+)?(?:,\s?\d+(?:[-–]\d+)?)*)(?!\d)"
)


_COLON_DIGIT_RE = re.compile(r":\d")


def _check_prose_anchors(out: _Collector, report: ParsedReport, current: bool) -> None:
    for number, line in _prose_lines(report):
        if not _COLON_DIGIT_RE.search(line):
            continue  # a line anchor is `path:N`; the full pattern is slow on long prose
        for match in _PROSE_ANCHOR_RE.finditer(line):
            out.add(
                "prose-line-anchor",
                _severity(current),
                f"\"{match.group(0)}\" carries line numbers outside a quotation; cite the path alone and quote the passage.",
                line=number,
            )


_SUPERSEDED_RE = re.compile(
    r"^\s*`?(?P<old>" + _ID_PATTERN + r")`? is superseded by `?(?P<new>" + _ID_PATTERN
    + r")`?(?: and `?(?P<also>" + _ID_PATTERN + r")`?)?(?=[\s.;,:]|$)"
)


def _supersession(text: str) -> re.Match | None:
    """`X is superseded by Y[ and Z]`, read after collapsing whitespace: a paragraph may wrap anywhere."""
    return _SUPERSEDED_RE.match(" ".join(text.split()))


def _check_amendment_form(out: _Collector, member: MemberInput, current: bool) -> None:
    if not current:
        return  # older reconciliations may carry value amendments
    for amendment in member.report.amendments:
        if amendment.kind != "amendment":
            continue
        if not _supersession(amendment.text):
            amended = _ids_in(amendment.text)
            out.add(
                "value-amendment",
                ERROR,
                f"In the current form an amendment is only an identity judgment: \"Amendment: X is superseded by Y\" (or \"by Y and Z\"); state the value correction{' to ' + amended[0] if amended else ''} as an integration issue.",
                record_id=amended[0] if amended else "",
                line=amendment.line,
            )


def _check_boundary_facts(out: _Collector, member: MemberInput) -> None:
    front = _front(member.report)
    cutoff = front.get("analysis-cutoff")
    if cutoff is None:
        if member.role == "boundary":
            out.add("invalid-analysis-cutoff", ERROR, "The boundary states no analysis-cutoff; add it as a date (YYYY-MM-DD).", line=1)
    elif not _is_real_date(cutoff):
        out.add(
            "invalid-analysis-cutoff",
            ERROR,
            f"analysis-cutoff \"{cutoff}\" is not a real calendar date; write it as YYYY-MM-DD.",
            line=1,
        )
    disposition = front.get("result-disposition")
    if disposition is None:
        if member.role == "boundary":
            out.add(
                "invalid-result-disposition",
                ERROR,
                f"The boundary states no result-disposition; add one of {', '.join(RESULT_DISPOSITIONS)}.",
                line=1,
            )
    elif str(disposition).strip() not in RESULT_DISPOSITIONS:
        out.add(
            "invalid-result-disposition",
            ERROR,
            f"result-disposition \"{disposition}\" must be one of {', '.join(RESULT_DISPOSITIONS)}.",
            line=1,
        )


def _is_real_date(value) -> bool:
    if isinstance(value, _dt.datetime):
        return False
    if isinstance(value, _dt.date):
        return True
    text = str(value).strip()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        _dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _check_reconciliation_section(out: _Collector, member: MemberInput) -> None:
    if member.role != "reconciliation":
        return
    sections = [s for s in member.report.sections if _norm_title(s.title) == "reconciliation"]
    if len(sections) != 1:
        out.add(
            "reconciliation-section-count",
            ERROR,
            f"A reconciliation member has exactly one \"## Reconciliation\" section; this one has {len(sections)}.",
            line=sections[1].line_start if len(sections) > 1 else 0,
        )


# --------------------------------------------------------------------------
# The memory-comparison profile (Appendix A): records.profiles


def _check_profile_shape(out: _Collector, member: MemberInput, current: bool) -> None:
    front = _front(member.report)
    if "memory-comparison" not in front:
        if member.role == "memory-profile":
            out.add(
                "profile-malformed",
                ERROR,
                "A memory-profile member carries a `memory-comparison` profile in its front matter; add it.",
                line=1,
            )
        return
    for problem in profiles.check_profile(front["memory-comparison"], role=member.role, current=current):
        out.add(problem.code, ERROR, problem.message, record_id=problem.axis, line=1)


# --------------------------------------------------------------------------
# Set-level checks


def _references_of(member: MemberInput) -> list[tuple[str, int]]:
    """Every (record ID, line) the member cites outside quotations and fences."""
    report = member.report
    refs: set[tuple[str, int]] = set()
    for ref in report.references:
        refs.add((ref.record_id, ref.line))
    for decl in report.declarations:
        refs.update((ref.record_id, ref.line) for ref in decl.references)
    for annotation in report.annotations:
        refs.update((ref.record_id, ref.line) for ref in annotation.references)
        refs.add((annotation.target, annotation.line_start))
    for issue in report.integration_issues:
        mentioned = {record_id for record_id, _ in refs}
        for record_id in issue.references:
            if record_id not in mentioned:
                refs.add((record_id, issue.line))
    declared_at = {(d.record_id, d.line_start) for d in report.declarations}
    return sorted(refs - declared_at)


def _suggestion(record_id: str, declared: Collection[str]) -> str:
    return _Suggestions(declared)(record_id)


class _Suggestions:
    """`_suggestion` over one set of declared IDs: sorted and indexed by (kind, name) once, each answer kept.

    A run cites the same undeclared IDs many times; before, every citation
    sorted and split every declared ID again.
    """

    def __init__(self, declared: Collection[str]) -> None:
        self.given = declared
        self.declared: list[str] | None = None  # sorted and indexed on the first question
        self.by_name: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.answers: dict[str, str] = {}

    def __call__(self, record_id: str) -> str:
        answer = self.answers.get(record_id)
        if answer is None:
            if self.declared is None:
                self.declared = sorted(self.given)
                for d in self.declared:
                    self.by_name[_split_id(d)[1:]].append(d)
            answer = self.answers[record_id] = self._answer(record_id)
        return answer

    def _answer(self, record_id: str) -> str:
        prefix, kind, name = _split_id(record_id)
        if kind:
            same_name = [d for d in self.by_name.get((kind, name), ()) if d != record_id]
            if same_name:
                return f" The same name is declared as {', '.join(same_name)}; did you mean that?"
        close = difflib.get_close_matches(record_id, self.declared, n=1, cutoff=0.6)
        if close:
            return f" The nearest declared ID is {close[0]}."
        return ""


def _set_findings(
    members: Sequence[MemberInput],
    run: RunFacts,
    current_by_member: Mapping[str, bool],
    canonical_ids: Collection[str],
    extra_mappings: Sequence[tuple[str, str, str]],
) -> list[Finding]:
    findings: list[Finding] = []
    declared_in: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for m in members:
        for decl in m.report.declarations:
            declared_in[decl.record_id].append((m.name, decl.line_start))
    role_of = {m.name: m.role for m in members}
    sources = {row.source_id for m in members for row in m.report.sources}
    canonical = set(canonical_ids)
    resolvable = set(declared_in) | canonical
    suggest = _Suggestions(resolvable)

    # Duplicate declarations across members. A result restates the canonical
    # records, so its declarations are not duplicates of the members'.
    for record_id, places in sorted(declared_in.items()):
        groups: dict[bool, list[tuple[str, int]]] = defaultdict(list)
        for name, line in places:
            groups[role_of[name] == "result"].append((name, line))
        for is_result, group in groups.items():
            member_names = sorted({name for name, _ in group})
            if len(member_names) < 2:
                continue
            for name, line in group:
                others = ", ".join(n for n in member_names if n != name)
                findings.append(
                    Finding(
                        "duplicate-declaration-across-members",
                        ERROR,
                        name,
                        record_id,
                        line,
                        f"{record_id} is also declared in {others}; IDs are unique across the run's set — keep the owner's declaration and annotate it elsewhere.",
                    )
                )

    for m in members:
        current = current_by_member[m.name]
        excused = {s.source for s in m.report.mappings} if _is_result(m) else set()
        for record_id, line in _references_of(m):
            if is_source_id(record_id):
                if record_id not in sources:
                    findings.append(
                        Finding(
                            "unknown-source",
                            ERROR,
                            m.name,
                            record_id,
                            line,
                            f"{record_id} is not in any Source register of this run; register it or cite a registered source.",
                        )
                    )
                continue
            if not is_record_id(record_id):
                continue
            if record_id in excused:
                continue  # an imported result's proposal IDs live in a memory report outside the run
            if record_id not in resolvable:
                parent = _slug_parent(record_id)
                if parent and parent in resolvable:
                    findings.append(
                        Finding(
                            "slug-extends-declared-id",
                            ERROR,
                            m.name,
                            record_id,
                            line,
                            f"{record_id} is the declared ID {parent} plus a word; write {parent} (and any following word apart from it) or declare a distinct record.",
                        )
                    )
                    continue
                findings.append(
                    Finding(
                        "unresolved-reference",
                        ERROR,
                        m.name,
                        record_id,
                        line,
                        f"{record_id} is not declared by any member of this run nor among its canonical records.{suggest(record_id)}",
                    )
                )
            elif len(declared_in.get(record_id, ())) > 1 and len({n for n, _ in declared_in[record_id] if role_of[n] != 'result'}) > 1:
                findings.append(
                    Finding(
                        "ambiguous-reference",
                        _severity(current),
                        m.name,
                        record_id,
                        line,
                        f"{record_id} is declared more than once in this run, so this reference is ambiguous; resolve the duplicate declaration.",
                    )
                )

    findings.extend(_part_of_resolution(members, resolvable))
    findings.extend(_profile_resolution(members, resolvable))
    findings.extend(_mapping_findings(members, extra_mappings))
    findings.extend(_amendment_findings(members, declared_in, current_by_member))
    findings.extend(_quoted_paths(members))
    if not any(m.report.sources for m in members) and any(
        ref for m in members for ref, _ in _references_of(m) if is_source_id(ref)
    ):
        findings.append(
            Finding(
                "no-source-register",
                WARNING,
                members[0].name,
                "",
                0,
                "No member of this run carries a Source register; upload the overview or boundary member that registers the sources.",
            )
        )
    return findings


def _is_result(member: MemberInput) -> bool:
    return member.role == "result" or "analysis-result" in (member.report.doc_type or "")


def _part_of_resolution(members: Sequence[MemberInput], resolvable: set[str]) -> list[Finding]:
    suggest = _Suggestions(resolvable)
    findings = []
    for m in members:
        lines = _part_of_lines(m.report)
        for decl in m.report.declarations:
            for number, line in lines:
                if not decl.line_start <= number <= decl.line_end:
                    continue
                match = _PART_OF_LINE_RE.match(line)
                if not match:
                    continue
                value = _part_of_value(match)
                if is_record_id(value) and value != decl.record_id and value not in resolvable:
                    findings.append(
                        Finding(
                            "part-of-unresolved",
                            ERROR,
                            m.name,
                            decl.record_id,
                            number,
                            f"{decl.record_id} is part of {value}, which no member of this run declares.{suggest(value)}",
                        )
                    )
    return findings


def _profile_resolution(members: Sequence[MemberInput], resolvable: set[str]) -> list[Finding]:
    suggest = _Suggestions(resolvable)
    findings = []
    for m in members:
        front = _front(m.report)
        excused = {s.source for s in m.report.mappings} if _is_result(m) else set()
        for axis, record_id in sorted(set(profiles.profile_records(front.get("memory-comparison")))):
            if record_id in resolvable or record_id in excused:
                continue
            findings.append(
                Finding(
                    "profile-record-unresolved",
                    ERROR,
                    m.name,
                    record_id,
                    1,
                    f"memory-comparison `{axis}` cites {record_id}, which no member of this run declares.{suggest(record_id)}",
                )
            )
    return findings


def _mapping_findings(members: Sequence[MemberInput], extra_mappings: Sequence[tuple[str, str, str]]) -> list[Finding]:
    findings = []
    for m in members:
        for mapping in m.report.mappings:
            source_kind, target_kind = _split_id(mapping.source)[1], _split_id(mapping.target)[1]
            if source_kind and target_kind and source_kind != target_kind:
                findings.append(
                    Finding(
                        "mapping-kind-mismatch",
                        ERROR,
                        m.name,
                        mapping.source,
                        mapping.line,
                        f"{mapping.source} ({source_kind}) is mapped to {mapping.target} ({target_kind}); a record maps only to a canonical record of its own kind.",
                    )
                )
    allocated: dict[str, list[str]] = defaultdict(list)
    for source, relation, target in extra_mappings:
        target = target or ""
        source_kind, target_kind = _split_id(source)[1], _split_id(target)[1]
        if source_kind and target_kind and source_kind != target_kind:
            findings.append(
                Finding(
                    "mapping-kind-mismatch",
                    ERROR,
                    "",
                    source,
                    0,
                    f"The {relation} mapping {source} ({source_kind}) → {target} ({target_kind}) joins records of different kinds; choose a target of kind {source_kind}.",
                )
            )
        if relation == "new" and target:
            allocated[target].append(source)
    for target, sources in sorted(allocated.items()):
        if len(sources) > 1:
            findings.append(
                Finding(
                    "canonical-id-allocated-twice",
                    ERROR,
                    "",
                    target,
                    0,
                    f"Canonical ID {target} is allocated by {len(sources)} new mappings ({', '.join(sorted(sources))}); each new record gets its own ID.",
                )
            )
    return findings


def _amended_ids(report: ParsedReport) -> list[str]:
    amended = []
    for amendment in report.amendments:
        if amendment.kind != "amendment":
            continue
        ids = _ids_in(amendment.text)
        if ids:
            amended.append(ids[0])
    return amended


_AMENDED_LINE_RE = re.compile(r"^\W*Amended or superseded records\W*:(.*)$", re.IGNORECASE)


def _amendment_findings(
    members: Sequence[MemberInput], declared_in: Mapping[str, list], current_by_member: Mapping[str, bool]
) -> list[Finding]:
    findings = []
    reconciliations = [m for m in members if m.role == "reconciliation"]
    for m in reconciliations:
        if not current_by_member[m.name]:
            continue
        for amendment in m.report.amendments:
            match = _supersession(amendment.text) if amendment.kind == "amendment" else None
            if not match:
                continue
            for record_id in filter(None, (match.group("old"), match.group("new"), match.group("also"))):
                if record_id not in declared_in:
                    findings.append(
                        Finding(
                            "amendment-id-undeclared",
                            ERROR,
                            m.name,
                            record_id,
                            amendment.line,
                            f"The amendment names {record_id}, which no member declares; supersession is between two declared records.",
                        )
                    )
    if len(reconciliations) != 1:
        return findings
    amended = set(_amended_ids(reconciliations[0].report))
    for m in members:
        if m.role != "overview":
            continue
        lines = [(n, l) for n, l in _prose_lines(m.report) if _AMENDED_LINE_RE.match(l)]
        severity = _severity(current_by_member[m.name])
        if not lines:
            if amended:
                findings.append(
                    Finding(
                        "amended-records-mismatch",
                        severity,
                        m.name,
                        "",
                        0,
                        f"The reconciliation amends {', '.join(sorted(amended))}, but the overview has no \"Amended or superseded records:\" line; add it.",
                    )
                )
            continue
        number, line = lines[0]
        listed = set(_ids_in(_AMENDED_LINE_RE.match(line).group(1)))
        if listed != amended:
            missing = sorted(amended - listed)
            extra = sorted(listed - amended)
            parts = []
            if missing:
                parts.append(f"add {', '.join(missing)}")
            if extra:
                parts.append(f"remove {', '.join(extra)}")
            findings.append(
                Finding(
                    "amended-records-mismatch",
                    severity,
                    m.name,
                    "",
                    number,
                    f"\"Amended or superseded records:\" must list exactly the IDs the reconciliation amends ({', '.join(sorted(amended)) or 'none'}); {' and '.join(parts)}.",
                )
            )
    return findings


def _quoted_paths(members: Sequence[MemberInput]) -> list[Finding]:
    register_text = " ".join(cell for m in members for row in m.report.sources for _, cell in row.columns)
    if not register_text:
        return []
    findings = []
    for m in members:
        for quotation in m.report.quotations:
            path = _strip_ticks(quotation.path).split(":", 1)[0].strip()
            if not path:
                continue
            candidates = [path] + [path[: i + 1] for i, ch in enumerate(path) if ch == "/"]
            if any(c in register_text for c in candidates):
                continue
            findings.append(
                Finding(
                    "quotation-path-not-registered",
                    WARNING,
                    m.name,
                    "",
                    quotation.line,
                    f"The quoted path {path} is not named in the Source register (neither it nor a folder containing it); check that it lies within a registered source.",
                )
            )
    return findings

"""`memory-comparison` `version: 2` (upstream `kb/agentic-system-analyses/types/agent-memory-profile.md` and
its schema at 53a0a4c4): the ten first axes, each an assessment over scoped units whose findings carry a
value in words, a basis and the records they rest on, records cited by link destination
(`memory.md#mem-obj-store`). Read by its own rules, beside the older forms of `records.validation.profile_forms`.
"""
from __future__ import annotations

import re

from records import ids

AXES = ("storage_substrate", "representational_form", "lineage", "behavioral_authority", "write_agency",
        "curation_operations", "read_back_direction", "read_back_signal", "trace_learning", "trace_source")
ASSESSMENTS = ("known", "partial", "absent", "inapplicable", "uninspected", "not-determinable")
BASES = ("claimed", "afforded", "wired", "observed", "causally supported")
COVERED = ("known", "partial", "absent", "inapplicable")  # these cite at least one record
WITH_FINDINGS = ("known", "partial")
AXIS_FIELDS = ("assessment", "units", "records", "note")
UNIT_FIELDS = ("scope", "assessment", "findings", "records", "note")
FINDING_FIELDS = ("value", "basis", "records", "note")
DESTINATION_RE = re.compile(r"^[a-z][a-z0-9-]*\.md#(?P<anchor>(?:rt|mem|epi)-(?:cmp|obj|rte|clm|abs|bap)-[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*){0,2})$")
WHERE = "memory-comparison"


def is_version_2(profile) -> bool:
    return isinstance(profile, dict) and profile.get("version") == 2


def record_of(destination: str) -> str:
    """The record ID a destination cites (`memory.md#mem-obj-store` → MEM-OBJ-store); "" when it is none."""
    m = DESTINATION_RE.match(str(destination).strip())
    if not m:
        return ""
    prefix, kind, name = m.group("anchor").split("-", 2)
    return f"{prefix.upper()}-{kind.upper()}-{name}"


def cited_records(profile) -> list[tuple[str, str]]:
    """(axis, record ID or the destination as written) of every citation in the profile."""
    cited = []
    for axis, body in (profile.get("axes") or {}).items() if isinstance(profile.get("axes"), dict) else ():
        for destination in _destinations(body):
            cited.append((str(axis), record_of(destination) or str(destination)))
    return cited


def _destinations(body):
    if not isinstance(body, dict):
        return
    yield from body.get("records") or []
    for unit in body.get("units") or []:
        if isinstance(unit, dict):
            yield from unit.get("records") or []
            for finding in unit.get("findings") or []:
                if isinstance(finding, dict):
                    yield from finding.get("records") or []


def check(profile, problem) -> None:
    """Every problem of a version-2 profile, each given to `problem(code, axis, message)`."""
    if not str(profile.get("scope") or "").strip():
        problem("profile-malformed", "", f"{WHERE} has no `scope`; state what the profile covers.")
    for key in sorted(set(map(str, profile)) - {"version", "scope", "axes"}):
        problem("profile-malformed", "", f"{WHERE} version 2 has no field `{key}`.")
    axes = profile.get("axes")
    if not isinstance(axes, dict):
        problem("profile-malformed", "", f"{WHERE} has no `axes` mapping; add its ten axes.")
        return
    for axis in AXES:
        if axis not in axes:
            problem("profile-axis-missing", axis, f"{WHERE} has no `{axis}` axis; add it with its assessment.")
    for axis in sorted(set(map(str, axes)) - set(AXES)):
        problem("profile-axis-unknown", axis, f"{WHERE} version 2 has no axis `{axis}`; it has {', '.join(AXES)}.")
    for axis in [a for a in AXES if a in axes]:
        _check_part(axes[axis], AXIS_FIELDS, "units", lambda code, message, a=axis: problem(code, a, f"{WHERE} `{a}`: {message}"))


def _check_part(body, fields, children: str, add) -> None:
    """An axis (its `units`) or a unit (its `findings`): fields, assessment, coverage and records."""
    if not isinstance(body, dict):
        add("profile-axis-malformed", f"write {', '.join(fields)}.")
        return
    keys = set(map(str, body))
    for key in fields:
        if key not in keys:
            add("profile-axis-malformed", f"`{key}` is missing.")
    for key in sorted(keys - set(fields)):
        add("profile-axis-malformed", f"`{key}` is not a field here.")
    assessment = str(body.get("assessment", "")).strip()
    if assessment not in ASSESSMENTS:
        add("profile-invalid-assessment", f"assessment \"{assessment}\" must be one of {', '.join(ASSESSMENTS)}.")
    records = body.get("records") or []
    _check_destinations(records, add)
    if assessment in COVERED and not records:
        add("profile-records-missing", f"a {assessment} assessment cites at least one record.")
    if assessment == "absent" and not any((ids.parse_id(record_of(r)) or ("", "", ""))[1] == "ABS" for r in records):
        add("profile-absent-needs-abs", "an absent assessment cites an evidenced-absence (ABS-) record.")
    items = body.get(children)
    items = items if isinstance(items, list) else []
    if assessment in WITH_FINDINGS and not items:
        add("profile-values-mismatch", f"a {assessment} assessment gives its {children}.")
    if children == "findings" and assessment in ASSESSMENTS and assessment not in WITH_FINDINGS and items:
        add("profile-values-mismatch", f"a {assessment} unit takes `findings: []`.")
    for item in items:
        if children == "units":
            _check_part(item, UNIT_FIELDS, "findings", add)
        else:
            _check_finding(item, add)


def _check_finding(finding, add) -> None:
    if not isinstance(finding, dict):
        add("profile-axis-malformed", f"a finding holds {', '.join(FINDING_FIELDS)}.")
        return
    keys = set(map(str, finding))
    for key in FINDING_FIELDS:
        if key not in keys:
            add("profile-axis-malformed", f"a finding's `{key}` is missing.")
    for key in sorted(keys - set(FINDING_FIELDS)):
        add("profile-axis-malformed", f"`{key}` is not a field of a finding.")
    if not str(finding.get("value") or "").strip():
        add("profile-invalid-value", "a finding states its value in words.")
    if str(finding.get("basis", "")).strip() not in BASES:
        add("profile-invalid-basis", f"basis \"{finding.get('basis', '')}\" must be one of {', '.join(BASES)}.")
    if not finding.get("records"):
        add("profile-records-missing", "a finding cites at least one record.")
    _check_destinations(finding.get("records") or [], add)


def _check_destinations(records, add) -> None:
    for record in records:
        if not record_of(record):
            add("profile-record-form", f"\"{record}\" is no record citation; write its link destination, "
                                       "`member.md#record-anchor`.")

"""The memory-comparison profile (DESIGN §6, Appendix A), in the form it was written in.

Pure functions on the front matter's `memory-comparison` mapping. Two forms
exist and each axis is judged by its own:

- current: per-value `evidence` (`{value: {basis, records, note}}`) beside
  `assessment`, `values`, `records`, `note`; one evidence entry per value of a
  known/partial assessment;
- earliest results: one axis-level `basis` (the same five values, null where
  the assessment gives no values) and no `evidence`.

An axis carrying both is an error: a reader could not tell which basis
holds. The earliest form belongs to older generations; a current-form (slug)
member writes per-value evidence.

Problems come back as `ProfileProblem` values; `records.validation` turns
them into findings.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from records import ids

from . import profile_v2

PROFILE_AXES = {
    "storage_substrate": (
        "files", "graph", "in-memory", "kv", "model-weights", "prompt-registry",
        "rdbms", "repo", "service-object", "sqlite", "vector",
    ),
    "representational_form": ("natural-language", "parametric", "symbolic"),
    "lineage": ("authored", "imported", "other-compiled", "trace-extracted"),
    "behavioral_authority": (
        "enforcement", "instruction", "knowledge", "learning", "ranking", "routing", "validation",
    ),
    "write_agency": ("automatic", "manual"),
    "curation_operations": (
        "consolidate", "decay", "dedup", "evolve", "invalidate", "promote", "synthesize",
    ),
    "read_back_direction": ("pull", "push"),
    "read_back_signal": (
        "coarse", "identifier", "inferred-embedding", "inferred-judgment", "inferred-lexical",
    ),
    "trace_learning": ("no", "yes"),
    "trace_source": ("event-streams", "session-logs", "tool-traces", "trajectories"),
    "learning_scope": ("cross-task", "per-project", "per-task"),
    "learning_timing": ("offline", "online", "staged"),
    "distilled_form": ("natural-language", "parametric", "symbolic"),
    "faithfulness_tested": ("no", "yes"),
}
PROFILE_FIRST_AXES = tuple(PROFILE_AXES)[:10]
PROFILE_LATER_AXES = tuple(PROFILE_AXES)[10:]
PROFILE_ASSESSMENTS = ("known", "partial", "absent", "inapplicable", "uninspected", "not-determinable")
PROFILE_BASES = ("claimed", "afforded", "wired", "observed", "causally supported")
PROFILE_AXIS_FIELDS = ("assessment", "values", "evidence", "records", "note")
EARLIEST_AXIS_FIELDS = ("assessment", "values", "basis", "records", "note")
YES_NO_AXES = ("trace_learning", "faithfulness_tested")
WITH_VALUES = ("known", "partial")

WHERE = "memory-comparison"


@dataclass(frozen=True)
class ProfileProblem:
    code: str
    axis: str  # "" when about the whole profile
    message: str


def profile_value(value) -> str:
    """A value as written; YAML reads unquoted yes/no as booleans."""
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return str(value).strip()


def profile_records(profile) -> list[tuple[str, str]]:
    """(axis, record ID) for every record the profile cites, in either form."""
    if profile_v2.is_version_2(profile):
        return profile_v2.cited_records(profile)
    cited: list[tuple[str, str]] = []
    axes = profile.get("axes") if isinstance(profile, dict) else None
    if not isinstance(axes, dict):
        return cited
    for axis, body in axes.items():
        if not isinstance(body, dict):
            continue
        for record in body.get("records") or []:
            cited.append((str(axis), str(record)))
        evidence = body.get("evidence")
        if isinstance(evidence, dict):
            for entry in evidence.values():
                if isinstance(entry, dict):
                    for record in entry.get("records") or []:
                        cited.append((str(axis), str(record)))
    return cited


def check_profile(profile, *, role: str, current: bool) -> list[ProfileProblem]:
    """Problems of one `memory-comparison` profile. `current`: the member is in the
    current (slug) generation, where only the per-value evidence form is valid."""
    problems: list[ProfileProblem] = []
    if not isinstance(profile, dict):
        return [ProfileProblem("profile-malformed", "", f"{WHERE} must be a mapping with `scope` and `axes`.")]
    if profile_v2.is_version_2(profile):
        profile_v2.check(profile, lambda code, axis, message: problems.append(ProfileProblem(code, axis, message)))
        return problems
    if not str(profile.get("scope") or "").strip():
        problems.append(ProfileProblem("profile-malformed", "", f"{WHERE} has no `scope`; state what the profile covers."))
    axes = profile.get("axes")
    if not isinstance(axes, dict):
        problems.append(ProfileProblem("profile-malformed", "", f"{WHERE} has no `axes` mapping; add the axes of Appendix A."))
        return problems
    present = {str(k) for k in axes}
    required = list(PROFILE_FIRST_AXES)
    if role == "result" or current or present & set(PROFILE_LATER_AXES):
        required += PROFILE_LATER_AXES
    for axis in required:
        if axis not in present:
            problems.append(ProfileProblem("profile-axis-missing", axis, f"{WHERE} has no `{axis}` axis; add it with its assessment."))
    for axis in sorted(present - set(PROFILE_AXES)):
        problems.append(ProfileProblem("profile-axis-unknown", axis, f"{WHERE} has an unknown axis `{axis}`; use the axes of Appendix A."))
    for axis in [a for a in PROFILE_AXES if a in present]:
        problems.extend(_check_axis(axis, axes[axis], current=current))
    return problems


def _check_axis(axis: str, body, *, current: bool) -> list[ProfileProblem]:
    problems: list[ProfileProblem] = []

    def add(code: str, message: str) -> None:
        problems.append(ProfileProblem(code, axis, f"{WHERE} `{axis}`: {message}"))

    if not isinstance(body, dict):
        add("profile-axis-malformed", "write assessment, values, evidence, records and note.")
        return problems
    keys = set(map(str, body))
    if "basis" in keys and "evidence" in keys:
        add(
            "profile-axis-mixed-forms",
            "gives both an axis-level `basis` (the earliest results' form) and per-value `evidence` (the current form); keep one.",
        )
        return problems
    earliest = "basis" in keys
    if earliest and current:
        add(
            "profile-axis-malformed",
            "an axis-level `basis` is the earliest results' form; the current form gives per-value `evidence` (basis, records, note for each value).",
        )
        return problems
    fields = EARLIEST_AXIS_FIELDS if earliest else PROFILE_AXIS_FIELDS
    for key in fields:
        if key not in keys:
            add("profile-axis-malformed", f"`{key}` is missing; every axis has {', '.join(fields[:-1])} and {fields[-1]}.")
    for key in sorted(keys - set(fields)):
        add("profile-axis-malformed", f"`{key}` is not an axis field.")
    assessment = str(body.get("assessment", "")).strip()
    if assessment not in PROFILE_ASSESSMENTS:
        add("profile-invalid-assessment", f"assessment \"{assessment}\" must be one of {', '.join(PROFILE_ASSESSMENTS)}.")
    raw_values = body.get("values")
    values = [profile_value(v) for v in raw_values] if isinstance(raw_values, list) else []
    if raw_values is not None and not isinstance(raw_values, list):
        add("profile-axis-malformed", "`values` must be a list.")
    for value in values:
        if value not in PROFILE_AXES[axis]:
            add("profile-invalid-value", f"\"{value}\" is not a value of this axis ({', '.join(PROFILE_AXES[axis])}).")
    for value, count in Counter(values).items():
        if count > 1:
            add("profile-invalid-value", f"\"{value}\" is listed {count} times.")
    if assessment in WITH_VALUES and not values:
        add("profile-values-mismatch", f"a {assessment} assessment lists its values; add them.")
    if assessment in PROFILE_ASSESSMENTS and assessment not in WITH_VALUES and values:
        add("profile-values-mismatch", f"a {assessment} assessment takes `values: []`.")
    if earliest:
        yes_basis = _check_axis_basis(add, assessment, body.get("basis"))
    else:
        yes_basis = _check_evidence(add, assessment, values, body.get("evidence"))
    if assessment == "absent":
        records = [str(r) for r in body.get("records") or []]
        if not any((ids.parse_id(r) or ("", "", ""))[1] == "ABS" for r in records):
            add("profile-absent-needs-abs", "an absent assessment cites an evidenced-absence (ABS-) record.")
    if axis in YES_NO_AXES:
        if len(values) > 1:
            add("profile-invalid-value", "this yes/no axis takes one value.")
        if assessment == "partial" and "no" in values:
            add("profile-invalid-value", "a partial assessment cannot assert \"no\".")
        if axis == "faithfulness_tested" and "yes" in values and yes_basis not in ("observed", "causally supported"):
            add("profile-faithfulness-basis", "\"yes\" needs an observed or causally supported basis.")
    return problems


def _check_axis_basis(add, assessment: str, basis) -> str:
    """The earliest form: one basis for the axis, null where the assessment gives no values."""
    if assessment in WITH_VALUES:
        if str(basis or "").strip() not in PROFILE_BASES:
            add(
                "profile-invalid-basis",
                f"the axis basis \"{'' if basis is None else basis}\" of a {assessment} assessment must be one of {', '.join(PROFILE_BASES)}.",
            )
    elif assessment in PROFILE_ASSESSMENTS and basis is not None:
        add("profile-invalid-basis", f"a {assessment} assessment gives no values, so its axis basis is null, not \"{basis}\".")
    return str(basis or "").strip()


def _check_evidence(add, assessment: str, values: list[str], evidence) -> str:
    """The current form: one evidence entry per value. Returns the basis of "yes", if any."""
    if evidence is not None and not isinstance(evidence, dict):
        add("profile-axis-malformed", "`evidence` must map each value to its basis, records and note.")
        evidence = {}
    evidence = evidence or {}
    evidence_keys = {profile_value(k) for k in evidence}
    if assessment in WITH_VALUES:
        for value in values:
            if value not in evidence_keys:
                add("profile-evidence-mismatch", f"value \"{value}\" has no evidence entry; give its basis, records and note.")
    for key in sorted(evidence_keys - set(values)):
        add("profile-evidence-mismatch", f"evidence for \"{key}\", which is not among the axis values.")
    for key, entry in evidence.items():
        key = profile_value(key)
        if not isinstance(entry, dict):
            add("profile-axis-malformed", f"evidence for \"{key}\" must hold basis, records and note.")
            continue
        basis = str(entry.get("basis", "")).strip()
        if basis not in PROFILE_BASES:
            add("profile-invalid-basis", f"evidence basis \"{basis}\" for \"{key}\" must be one of {', '.join(PROFILE_BASES)}.")
    entry = evidence.get("yes", evidence.get(True))
    return str(entry.get("basis", "")) if isinstance(entry, dict) else ""

"""A run's identity read from its own run directory (DESIGN §4 `POST /api/runs/import/`).

Pure: the `ARTIFACT.yaml` mapping and the member files' bytes in, the fields
`reviews.services.create_run` takes out. Each field is taken from the first
place that states it: the manifest, then the overview, the boundary, the
result, then every other member by file name; a set without an overview
(the links form) takes its system from the source repository it names. The run ID and the reviewed
boundary are the set's identity: members that disagree on them refuse the
import, naming the files, since validation would report every one of them.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from records.parsing import parse_report

# run field → front matter key
FRONT_MATTER_KEYS = {
    "run_id": "run-id",
    "system": "system",
    "title": "title",
    "run_date": "run-date",
    "target_class": "target-class",
    "boundary_kind": "boundary-kind",
    "reviewed_boundary": "reviewed-boundary",
    "evidence_tier": "evidence-tier",
    "analysis_cutoff": "analysis-cutoff",
}
IDENTITY_FIELDS = ("run_id", "reviewed_boundary")
REQUIRED_FIELDS = ("run_id", "system", "title", "run_date", "reviewed_boundary")
PRECEDENCE = ("overview.md", "boundary.md", "result.md")
MANIFEST = "ARTIFACT.yaml"
_RUN_ID_DATE = re.compile(r"^AAS-(\d{4}-\d{2}-\d{2})-")


class IdentityError(Exception):
    """The directory does not say which run it is; `problems` name the files and fields."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def source_identity(front: Mapping) -> str:
    """The source repository a member's front matter names: `source: {identity: …}` or `source-identity`."""
    source = front.get("source")
    value = source.get("identity") if isinstance(source, Mapping) else None
    value = value or front.get("source-identity")
    return str(value).strip() if value else ""


def identity_of(manifest: Mapping, members: Mapping[str, bytes]) -> dict:
    """`create_run` fields read from the manifest and the members' front matter.

    Raises IdentityError when members disagree on the run ID or reviewed
    boundary, or when a required field is stated nowhere."""
    sources: list[tuple[str, Mapping, str]] = [(MANIFEST, manifest if isinstance(manifest, Mapping) else {}, "")]
    ordered = [n for n in PRECEDENCE if n in members] + sorted(n for n in members if n not in PRECEDENCE)
    for name in ordered:
        report = parse_report(members[name].decode("utf-8", errors="replace"))
        sources.append((name, report.front_matter if isinstance(report.front_matter, dict) else {}, report.title))

    identity: dict = {}
    stated_in: dict[str, list[tuple[str, str]]] = {field: [] for field in FRONT_MATTER_KEYS}
    for name, front, _title in sources:
        for field, key in FRONT_MATTER_KEYS.items():
            value = front.get(key)
            if value is None or not str(value).strip():
                continue
            stated_in[field].append((name, str(value).strip()))
    problems = []
    for field in IDENTITY_FIELDS:
        values = {value for _, value in stated_in[field]}
        if len(values) > 1:
            places = ", ".join(f"{name} says {value}" for name, value in stated_in[field])
            problems.append(f"{FRONT_MATTER_KEYS[field]}: the files disagree ({places}); a run directory holds one run")
    for field in FRONT_MATTER_KEYS:
        if stated_in[field]:
            identity[field] = stated_in[field][0][1]
    if "title" not in identity:
        identity["title"] = next((title for _, _, title in sources if title), "") or next(
            (str(front["description"]).strip() for _, front, _ in sources if str(front.get("description") or "").strip()), "")
    if "system" not in identity:
        # The links form's sets have no overview yet (code writes it later): the system is the
        # repository the boundary's `source.identity` (or a member's `source-identity`) names.
        identity_url = next((url for _, front, _ in sources if (url := source_identity(front))), "")
        if identity_url:
            identity["system"] = identity_url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    if "run_date" not in identity and "run_id" in identity:
        m = _RUN_ID_DATE.match(identity["run_id"])
        if m:
            identity["run_date"] = m.group(1)
    identity.setdefault("analysis_cutoff", None)
    for field in REQUIRED_FIELDS:
        if not identity.get(field):
            problems.append(
                f"{FRONT_MATTER_KEYS[field]}: neither {MANIFEST} nor any member's front matter states it; "
                "add it to the overview's or the boundary's front matter"
            )
    if problems:
        raise IdentityError(problems)
    identity["title"] = identity["title"][:300]
    return identity

"""The parse and the findings of every older document stay what they were (issue 18 item 6, issue 25).

For each seed and each corpus run (the older generations: the links-form example set is judged by
its own rules in test_links_form.py) the test computes the parse (every field of each
`ParsedReport`, as canonical JSON, kept by its SHA-256 and a few counts) and the findings
(kept whole), and compares them with `fixtures/findings_unchanged.json`, written at the
commit before the parser became a package. Regenerate it only for a change of behaviour
that is meant, and say so in the commit:

    DJANGO_SETTINGS_MODULE=config.settings .venv/bin/python -m tests.records.test_findings_unchanged --write
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path

import pytest

from records.parsing import parse_report
from records.validation import MemberInput, RunFacts, validate_member, validate_set

SHARED = Path(__file__).resolve().parents[3] / "shared"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "findings_unchanged.json"

SEED_ROLES = {"000": "result", "001": "workflow", "002": "memory", "003": "memory"}
SEED_RUN = RunFacts(run_id="AAS-2026-09-25-supermemory-02", reviewed_boundary="0" * 40)
ROLE_BY_STEM = {
    "overview": "overview", "runtime": "runtime", "memory": "memory", "epistemic": "epistemic",
    "reconciliation": "reconciliation", "boundary": "boundary", "memory-profile": "memory-profile",
    "synthesis": "synthesis", "result": "result", "workflow": "workflow",
}


# Fields the parse gained after the fixture was written: left out while they hold their default,
# so that a document in which they find nothing keeps its digest.
ADDED_FIELDS = ("links_form", "citations", "blockers", "limits")


def parse_digest(report) -> dict:
    fields = dataclasses.asdict(report)
    for name in ADDED_FIELDS:
        if not fields[name]:
            del fields[name]
    data = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return {
        "sha256": hashlib.sha256(data.encode("utf-8")).hexdigest(),
        "declarations": len(report.declarations),
        "annotations": len(report.annotations),
        "references": len(report.references),
        "quotations": len(report.quotations),
    }


def finding_lines(findings) -> list[str]:
    return [f"{f.severity} {f.code} {f.member}:{f.line} [{f.record_id}] {f.message}" for f in findings]


def seed_outcome(path: Path) -> dict:
    report = parse_report(path.read_text(encoding="utf-8"))
    member = MemberInput(name=path.name, role=SEED_ROLES[path.name[:3]], report=report)
    return {"parse": {path.name: parse_digest(report)}, "findings": finding_lines(validate_member(member, SEED_RUN))}


def corpus_outcome(run_dir: Path) -> dict:
    members, run = [], None
    for path in sorted(run_dir.glob("*.md")):
        report = parse_report(path.read_text(encoding="utf-8"))
        members.append(MemberInput(path.name, ROLE_BY_STEM.get(path.stem, "verification"), report))
        front = report.front_matter or {}
        if run is None and front.get("run-id"):
            run = RunFacts(run_id=str(front["run-id"]), reviewed_boundary=str(front.get("reviewed-boundary", "")))
    return {
        "parse": {m.name: parse_digest(m.report) for m in members},
        "findings": finding_lines(validate_set(members, run)),
    }


def inputs() -> dict[str, Path]:
    found = {f"seed/{p.name}": p for p in sorted((SHARED / "seeds").glob("*.txt"))}
    found.update({f"corpus/{p.name}": p for p in sorted((SHARED / "corpus").iterdir()) if p.is_dir()})
    return found


def outcome(key: str, path: Path) -> dict:
    return seed_outcome(path) if key.startswith("seed/") else corpus_outcome(path)


def expected() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("key", sorted(inputs()))
def test_it_parses_and_judges_each_older_document_as_before(key):
    want = expected()
    assert key in want, f"{key} is new: regenerate the fixture (see the module docstring)"
    assert outcome(key, inputs()[key]) == want[key]


def test_the_fixture_covers_every_seed_and_corpus_run():
    assert sorted(expected()) == sorted(inputs())


if __name__ == "__main__" and "--write" in sys.argv:
    import django  # only the fixture writer needs Django set up by hand; pytest-django does it otherwise

    django.setup()
    data = {key: outcome(key, path) for key, path in inputs().items()}
    FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE} ({len(data)} documents or runs)")

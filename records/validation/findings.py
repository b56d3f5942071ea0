"""What a check returns and how findings are gathered: `Finding` and its severities, the run's
`RunFacts`, a `MemberInput`, the per-member collector, and the one sort order of findings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from records.document import ParsedReport

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


def severity_of(current: bool) -> str:
    return ERROR if current else WARNING


class Collector:
    def __init__(self, member: str):
        self.member = member
        self.findings: list[Finding] = []

    def add(self, code: str, severity: str, message: str, *, record_id: str = "", line: int = 0) -> None:
        self.findings.append(Finding(code, severity, self.member, record_id, line, message))


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(set(findings), key=Finding.sort_key)

"""The memory-comparison profile (Appendix A, records.validation.profile_forms): present where the role needs it,
well formed, and citing records the run declares.
"""
from __future__ import annotations

from typing import Sequence

from . import profile_forms
from .findings import ERROR, Finding, MemberInput, Collector
from .reading import front_of
from .references import is_result_member, Suggestions


def check_profile_shape(out: Collector, member: MemberInput, current: bool) -> None:
    front = front_of(member.report)
    if "memory-comparison" not in front:
        if member.role == "memory-profile":
            out.add(
                "profile-malformed",
                ERROR,
                "A memory-profile member carries a `memory-comparison` profile in its front matter; add it.",
                line=1,
            )
        return
    for problem in profile_forms.check_profile(front["memory-comparison"], role=member.role, current=current):
        out.add(problem.code, ERROR, problem.message, record_id=problem.axis, line=1)


def profile_resolution(members: Sequence[MemberInput], resolvable: set[str]) -> list[Finding]:
    suggest = Suggestions(resolvable)
    findings = []
    for m in members:
        front = front_of(m.report)
        excused = {s.source for s in m.report.mappings} if is_result_member(m) else set()
        for axis, record_id in sorted(set(profile_forms.profile_records(front.get("memory-comparison")))):
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

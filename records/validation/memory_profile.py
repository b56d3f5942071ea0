"""The memory-comparison profile (Appendix A, records.validation.profile_forms): present where the role needs it,
well formed, and citing records the run declares.
"""
from __future__ import annotations

from typing import Sequence

from . import profile_forms
from .findings import ERROR, Finding, MemberInput, _Collector
from .reading import _front
from .references import _is_result, _Suggestions


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
    for problem in profile_forms.check_profile(front["memory-comparison"], role=member.role, current=current):
        out.add(problem.code, ERROR, problem.message, record_id=problem.axis, line=1)


def _profile_resolution(members: Sequence[MemberInput], resolvable: set[str]) -> list[Finding]:
    suggest = _Suggestions(resolvable)
    findings = []
    for m in members:
        front = _front(m.report)
        excused = {s.source for s in m.report.mappings} if _is_result(m) else set()
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

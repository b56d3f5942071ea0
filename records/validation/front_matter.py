"""What a member's front matter states about its run: run-id and reviewed boundary, and the
boundary facts analysis-cutoff and result-disposition.
"""
from __future__ import annotations

import datetime as _dt
import re

from records.document import ParsedReport

from .citations import same_commit
from .findings import ERROR, WARNING, MemberInput, RunFacts, Collector, severity_of
from .reading import front_of
from .vocabulary import RESULT_DISPOSITIONS


def check_identity(out: Collector, report: ParsedReport, run: RunFacts, current: bool) -> None:
    if report.front_matter_error:
        out.add(
            "front-matter-unreadable",
            severity_of(current),
            f"The front matter could not be read ({report.front_matter_error}); fix its YAML so run-id and reviewed-boundary can be checked.",
            line=1,
        )
    front = front_of(report)
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
    if boundary is not None and run.reviewed_boundary and not same_commit(str(boundary), run.reviewed_boundary):
        out.add(
            "reviewed-boundary-mismatch",
            ERROR,
            f"The front matter says reviewed-boundary {boundary}, but this run reviews {run.reviewed_boundary}; the member analysed another commit.",
            line=1,
        )


def check_boundary_facts(out: Collector, member: MemberInput) -> None:
    front = front_of(member.report)
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

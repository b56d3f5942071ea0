"""What the run page shows of a run's validation: the report on its manifest, the report's finding
groups and the run's quotation totals, kept per process for the run's audit chain head.

Every change they are read from is made by a service that writes an event on the run's chain in the
same transaction (a validation, which rewrites the findings and the quotation checks: `run.validated`;
an upload: `member.*`; a source snapshot: `source.*`), so a head names one state of all three: a
request that read the run at its start and finds them kept for that head shows that state without
reading it again (`reviews.kept`, as `reconcile.blockers` keeps a run's standing). The members'
pipeline rows are not kept: a version's move from received to parsing writes no event.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse

from reviews.kept import KeptByHead
from reviews.models import Run

from . import services
from .finding_counts import report_groups
from .finding_groups import FindingGroup, shown_with_links
from .models import Role, ValidationReport
from .templatetags.quotations import quotation_summary

KEPT_RUNS = 32


@dataclass(frozen=True)
class RunValidation:
    report: ValidationReport | None
    finding_groups: list[FindingGroup]  # their locations as shown, linked to the members' pages
    quotations: dict  # `quotation_summary`'s: the snapshot, the totals and their marks


_KEPT = KeptByHead(size=KEPT_RUNS)


def kept_validation(run: Run) -> RunValidation:
    """`read_validation(run)`, kept for the run's chain head as `run` was read (the KEPT_RUNS runs last
    asked for)."""
    return _KEPT.kept(run, "validation", read_validation)


def forget_kept() -> None:
    """Drop everything kept, as a moved chain head would: for a test that writes behind the services' back
    (no event), or a bench measuring a first read (as `reconcile.blockers.forget_kept`)."""
    _KEPT.clear()


def read_validation(run: Run) -> RunValidation:
    report = services.latest_validation(run)
    # Counted by the database: a row per group, however many findings the report holds.
    groups = report_groups(report.pk) if report else []
    named = {member for group in groups for member in group.members if member in Role.values}
    pages = {member: reverse("member-detail", args=[run.run_id, member]) for member in named}
    return RunValidation(report=report, finding_groups=shown_with_links(groups, pages),
                         quotations=quotation_summary(run))

"""The reconciliation pages' reads: what a view asks of the database, in a fixed number of queries
whatever the run's size (the views assemble rows and URLs from these)."""
from __future__ import annotations

from django.db.models import Count, F, Q

from records.models import IntegrationIssue, MemberReport, Record
from reviews.models import Run

from .models import CanonicalRecord, IssueDecision, Mapping

RECORD_COLUMNS = ("id", "member_version_id", "ordinal", "record_id", "kind", "prefix", "label", "text",
                  "content_sha256")

CANONICAL_COLUMNS = ("id", "canonical_id", "kind", "number", "label", "text", "origin", "state", "rationale",
                     "version")


def members(run: Run):
    return list(
        MemberReport.objects.filter(run=run)
        .select_related("current_version")
        .only("id", "role", "current_version__id", "current_version__version", "current_version__sha256",
              "current_version__status")
        .annotate(declarations=Count("current_version__records",
                                     filter=Q(current_version__records__record_type=Record.Type.DECLARATION)))
        .order_by("role")
    )


def current_mappings(run: Run):
    return (Mapping.objects.filter(run=run)
            .annotate(member_role=F("source_record__member_version__member__role"))
            .order_by("source", "id"))


def canonicals(run: Run) -> dict[str, CanonicalRecord]:
    return {c.canonical_id: c for c in CanonicalRecord.objects.filter(run=run).only(*CANONICAL_COLUMNS)}


def active_targets(run: Run) -> list[tuple[str, str, str]]:
    """(canonical ID, kind, label) of the run's active canonical records, in the shared set's order."""
    return list(CanonicalRecord.objects.filter(run=run, state=CanonicalRecord.State.ACTIVE)
                .values_list("canonical_id", "kind", "label"))


def decision_of(issue: IntegrationIssue) -> IssueDecision | None:
    try:
        return issue.decision
    except IssueDecision.DoesNotExist:
        return None


def awaits_answers(run: Run) -> bool:
    """Open correction requests wait for an agent's answer: the run's live regions keep polling for it."""
    from .models import CorrectionRequest

    return CorrectionRequest.objects.filter(run=run, state=CorrectionRequest.State.OPEN).exists()

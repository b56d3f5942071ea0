"""The reconciliation pages' reads: what a view asks of the database, in a fixed number of queries
whatever the run's size (the views assemble rows and URLs from these)."""
from __future__ import annotations

from django.db.models import Count, F, Q, Window
from django.db.models.functions import RowNumber

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


# How many target choices a page lists per kind; typing in a target field asks for the ones that match.
TARGET_CHOICES = 50


def active_targets(run: Run, *, kind: str = "", matching: str = "", per_kind: int | None = TARGET_CHOICES
                   ) -> list[tuple[str, str, str]]:
    """(canonical ID, kind, label) of the run's active canonical records, in the shared set's order: the
    first `per_kind` of each kind (all with None), of `kind` only and whose ID or label holds `matching`
    when given. One query."""
    found = CanonicalRecord.objects.filter(run=run, state=CanonicalRecord.State.ACTIVE)
    if kind:
        found = found.filter(kind=kind)
    if matching:
        found = found.filter(Q(canonical_id__icontains=matching) | Q(label__icontains=matching))
    if per_kind is not None:
        found = found.annotate(place=Window(RowNumber(), partition_by=F("kind"),
                                            order_by=[F("number").asc(nulls_last=True), F("canonical_id")]))
        found = found.filter(place__lte=per_kind)
    return list(found.order_by("kind", "number", "canonical_id").values_list("canonical_id", "kind", "label"))


def target_kinds(run: Run) -> list[str]:
    """The kinds the run's active canonical records have (what the page keeps a target list for)."""
    return sorted(CanonicalRecord.objects.filter(run=run, state=CanonicalRecord.State.ACTIVE)
                  .values_list("kind", flat=True).distinct().order_by())


def decision_of(issue: IntegrationIssue) -> IssueDecision | None:
    try:
        return issue.decision
    except IssueDecision.DoesNotExist:
        return None


def awaits_answers(run: Run) -> bool:
    """Open correction requests wait for an agent's answer: the run's live regions keep polling for it."""
    from .models import CorrectionRequest

    return CorrectionRequest.objects.filter(run=run, state=CorrectionRequest.State.OPEN).exists()

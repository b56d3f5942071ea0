"""The reconciliation pages' reads: what a view asks of the database, in a fixed number of queries
whatever the run's size (the views assemble rows and URLs from these)."""
from __future__ import annotations

from django.db import connection
from django.db.models import Count, F, Q, Window
from django.db.models.functions import RowNumber

from records import ids
from records.models import IntegrationIssue, MemberReport, Record
from reviews.models import Run

from .models import CanonicalRecord, IssueDecision, Mapping

RECORD_COLUMNS = ("id", "member_version_id", "ordinal", "record_id", "kind", "prefix", "label", "text",
                  "content_sha256", "line_start", "line_end")

CANONICAL_COLUMNS = ("id", "canonical_id", "kind", "number", "label", "text", "origin", "state", "rationale",
                     "version")


def members(run: Run) -> list[MemberReport]:
    """The run's members by role, each with `declarations`: how many declarations its current version
    has, from the counts the parse keeps per kind (`MemberVersion.kind_counts`), or, for a version parsed
    before they were kept, from one aggregate query."""
    found = list(MemberReport.objects.filter(run=run).select_related("current_version")
                 .only("id", "role", "current_version__id", "current_version__version",
                       "current_version__sha256", "current_version__status", "current_version__kind_counts")
                 .order_by("role"))
    unkept = [m.current_version_id for m in found
              if m.current_version is not None and m.current_version.kind_counts is None]
    counted = dict(Record.objects.filter(member_version_id__in=unkept, record_type=Record.Type.DECLARATION)
                   .values_list("member_version_id").annotate(n=Count("id")).order_by()) if unkept else {}
    for m in found:
        kept = m.current_version.kind_counts if m.current_version is not None else None
        m.declarations = (sum(n for record_type, _kind, n, _first in kept if record_type == Record.Type.DECLARATION)
                          if kept is not None else counted.get(m.current_version_id, 0))
    return found


def current_mappings(run: Run):
    """The run's mappings in the page's order, nothing joined: a page reads its 60 by their sources' IDs
    (with each source's member joined, that query took 2.5 ms at 2,000 records; 1.5 ms without)."""
    return Mapping.objects.filter(run=run).order_by("source", "id")


def canonicals(run: Run) -> dict[str, CanonicalRecord]:
    return {c.canonical_id: c for c in CanonicalRecord.objects.filter(run=run).only(*CANONICAL_COLUMNS)}


# How many target choices a page lists per kind; typing in a target field asks for the ones that match.
TARGET_CHOICES = 50


def active_targets(run: Run, *, kind: str = "", matching: str = "", per_kind: int | None = TARGET_CHOICES
                   ) -> list[tuple[str, str, str]]:
    """(canonical ID, kind, label) of the run's active canonical records, in the shared set's order: the
    first `per_kind` of each kind (all with None), of `kind` only and whose ID or label holds `matching`
    when given. One query: on PostgreSQL a UNION of one index scan per kind of the vocabulary (canonical
    IDs take their kind from it), reading `per_kind` rows each whatever the run's size."""
    found = CanonicalRecord.objects.filter(run=run, state=CanonicalRecord.State.ACTIVE)
    if kind:
        found = found.filter(kind=kind)
    if matching:
        found = found.filter(Q(canonical_id__icontains=matching) | Q(label__icontains=matching))
    order = (F("number").asc(nulls_last=True), "canonical_id")
    columns = ("canonical_id", "kind", "label")
    if per_kind is None:
        return list(found.order_by("kind", *order).values_list(*columns))
    if not connection.features.supports_slicing_ordering_in_compound:
        found = found.annotate(place=Window(RowNumber(), partition_by=F("kind"), order_by=list(order)))
        return list(found.filter(place__lte=per_kind).order_by("kind", *order).values_list(*columns))
    parts = [found.filter(kind=k).order_by(*order).values_list(*columns, "number")[:per_kind]
             for k in ([kind] if kind else ids.KINDS)]
    rows = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    ordered = sorted(rows, key=lambda r: (r[1], r[3] is None, r[3] or 0, r[0]))
    return [(canonical_id, k, label) for canonical_id, k, label, _number in ordered]


def decision_of(issue: IntegrationIssue) -> IssueDecision | None:
    try:
        return issue.decision
    except IssueDecision.DoesNotExist:
        return None


def awaits_answers(run: Run) -> bool:
    """Open correction requests wait for an agent's answer: the run's live regions keep polling for it."""
    from .models import CorrectionRequest

    return CorrectionRequest.objects.filter(run=run, state=CorrectionRequest.State.OPEN).exists()

"""Audit timeline links for reconcile's objects: the reconciliation page, scrolled to the row.

Registered with reviews.audit_links from ReconcileConfig.ready (reviews does not
import reconcile). Row anchors are the page's own ids: `pair-<mapping>`,
`issue-<integration issue>`, `amendment-<amendment decision>`; a mapping's link
also picks the member whose records it belongs to (`?member=<role>`).
"""
from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse

from reviews.audit_links import register

from .dispositions import mapping_link, mapping_name
from .models import AmendmentDecision, CorrectionRequest, IssueDecision, Mapping


def _page(run, **query) -> str:
    query = {k: v for k, v in query.items() if v}
    return reverse("run-reconcile", args=[run.run_id]) + (f"?{urlencode(query)}" if query else "")


def _ids(events) -> list[int]:
    return [int(e.object_id) for e in events if str(e.object_id).isdigit()]


def mappings(run, events) -> dict:
    roles = dict(Mapping.objects.filter(run=run, pk__in=_ids(events))
                 .values_list("pk", "source_record__member_version__member__role"))
    # A mapping stated by a reconciliation or result has no member record: its row is under "statements".
    return {e.pk: mapping_link(run.run_id, roles[int(e.object_id)], int(e.object_id))
            for e in events if str(e.object_id).isdigit() and int(e.object_id) in roles}


def _issue_decisions(run, events) -> dict:
    found = {pk: (issue, role) for pk, issue, role in IssueDecision.objects.filter(run=run, pk__in=_ids(events))
             .values_list("pk", "issue_id", "issue__member_version__member__role")}
    return {e.pk: f"{_page(run, member=found[int(e.object_id)][1])}#issue-{found[int(e.object_id)][0]}"
            for e in events if str(e.object_id).isdigit() and int(e.object_id) in found}


def _amendments(run, events) -> dict:
    return {e.pk: f"{_page(run)}#amendment-{e.object_id}" for e in events if str(e.object_id).isdigit()}


def _canonical_records(run, events) -> dict:
    return {}  # the page itself: a canonical record's row has no anchor of its own


def _snapshot(event) -> dict:
    return (event.after or {}) if isinstance(event.after, dict) and event.after else (event.before or {})


def _mapping_names(run, events) -> dict:
    """From the event's own snapshot: the mapping as it was then (its target may have changed since)."""
    names = {}
    for e in events:
        shot = _snapshot(e)
        if shot.get("source"):
            names[e.pk] = mapping_name(shot["source"], shot.get("relation", ""), shot.get("target", ""))
    missing = [int(e.object_id) for e in events if e.pk not in names and str(e.object_id).isdigit()]
    rows = {pk: mapping_name(*rest) for pk, *rest in Mapping.objects.filter(run=run, pk__in=missing)
            .values_list("pk", "source", "relation", "target")} if missing else {}
    # One whose snapshot names no records and that the run no longer holds: said so, its id in the tooltip.
    return {e.pk: "a mapping no longer in the run" for e in events} | names | {
        e.pk: rows[int(e.object_id)] for e in events
        if e.pk not in names and str(e.object_id).isdigit() and int(e.object_id) in rows}


def _issue_names(run, events) -> dict:
    found = {pk: f"{role} integration issue {index}" for pk, role, index in IssueDecision.objects.filter(
        run=run, pk__in=_ids(events)).values_list("pk", "issue__member_version__member__role", "issue__index")}
    return {e.pk: found[int(e.object_id)] for e in events if str(e.object_id).isdigit() and int(e.object_id) in found}


def _amendment_names(run, events) -> dict:
    found = {pk: f"{AmendmentDecision.KIND_LABELS.get(kind, kind).lower()} at line {line} of the {role} report"
             for pk, kind, line, role in AmendmentDecision.objects.filter(run=run, pk__in=_ids(events))
             .values_list("pk", "kind", "line", "member_version__member__role")}
    return {e.pk: found[int(e.object_id)] for e in events if str(e.object_id).isdigit() and int(e.object_id) in found}


def _canonical_names(run, events) -> dict:
    return {e.pk: f"canonical record {e.object_id}" for e in events}


def _correction_names(run, events) -> dict:
    found = {pk: f"correction request to {member}{' ' + record_id if record_id else ''}"
             for pk, member, record_id in CorrectionRequest.objects.filter(run=run, pk__in=_ids(events))
             .values_list("pk", "member", "record_id")}
    return {e.pk: found[int(e.object_id)] for e in events if str(e.object_id).isdigit() and int(e.object_id) in found}


def _or_page(resolver):
    """An object its resolver no longer finds still links to the reconciliation page."""
    def resolve(run, events) -> dict:
        return {e.pk: _page(run) for e in events} | resolver(run, events)
    return resolve


def register_all() -> None:
    for object_type, resolver, namer in (
            ("canonical_record", _canonical_records, _canonical_names),
            ("integration_issue", _canonical_records, None),
            ("mapping", mappings, _mapping_names), ("issue_decision", _issue_decisions, _issue_names),
            ("amendment_decision", _amendments, _amendment_names),
            ("correction_request", lambda run, events: {}, _correction_names)):
        register(object_type, _or_page(resolver), namer)

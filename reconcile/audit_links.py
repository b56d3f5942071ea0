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

from .dispositions import mapping_link
from .models import IssueDecision, Mapping


def _page(run, **query) -> str:
    query = {k: v for k, v in query.items() if v}
    return reverse("run-reconcile", args=[run.run_id]) + (f"?{urlencode(query)}" if query else "")


def _ids(events) -> list[int]:
    return [int(e.object_id) for e in events if str(e.object_id).isdigit()]


def _mappings(run, events) -> dict:
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


def _or_page(resolver):
    """An object its resolver no longer finds still links to the reconciliation page."""
    def resolve(run, events) -> dict:
        return {e.pk: _page(run) for e in events} | resolver(run, events)
    return resolve


def register_all() -> None:
    for object_type, resolver in (("canonical_record", _canonical_records), ("integration_issue", _canonical_records),
                                  ("mapping", _mappings), ("issue_decision", _issue_decisions),
                                  ("amendment_decision", _amendments)):
        register(object_type, _or_page(resolver))

"""Quotation marks beside records, and the run's snapshot summary, for any page that shows them.

Tags rather than view context: the member, run and reconciliation pages include
`records/_quotations.html` / `records/_source_snapshot.html` with one line each,
and reconcile never has to know how quotations are stored. The quotations of a
run are loaded once per request (one query for records, one for checks) and
then looked up per record, so 2,000 rows cost 2,000 dictionary lookups.
"""
from __future__ import annotations

import bisect
import functools
from collections import defaultdict

from django import template
from django.db.models import Q
from django.urls import reverse

from records.models import QuotationCheck, Record
from records.services import current_versions
from records.services.quotations import quotation_summary as _quotation_summary

register = template.Library()

MARKS = {
    "verified": "✓ verified",
    "not-found": "✗ not found",
    "ambiguous": "? ambiguous",
    "path-missing": "✗ path missing",
    "range-outside": "✗ range outside",
    "commit-mismatch": "✗ other commit",
    "unverified": "… unverified",
}


# What the fragment prints of a check, and the role for its link: never the member version's report
# bytes or parse (which `select_related` would otherwise fetch again with every check).
CHECK_FIELDS = ("member_version__member__role", "member_version_id", "line", "path", "lines", "commit", "status",
                "message", "source_lines", "candidates")


def _decorate(check: QuotationCheck, run) -> None:
    """What the fragment prints beyond the row: its mark, and the quoting line on the member page."""
    check.mark = MARKS.get(check.status, check.status)
    check.link = f"{_member_url(run.run_id, check.member_version.member.role)}?line={check.line}#L{check.line}"


@functools.lru_cache(maxsize=256)
def _member_url(run_id: str, role: str) -> str:
    return reverse("member-detail", args=[run_id, role])


def _index(run) -> dict:
    """{record pk: [check, …], record ID: [check, …]} for the current versions' quotations."""
    versions = current_versions(run).values("pk")
    by_version: dict[int, list] = defaultdict(list)
    for check in (QuotationCheck.objects.filter(run=run, member_version__in=versions, kind=QuotationCheck.Kind.QUOTATION)
                  .select_related("member_version__member")
                  .only(*CHECK_FIELDS).order_by("member_version_id", "line")):
        _decorate(check, run)
        by_version[check.member_version_id].append(check)
    index: dict = defaultdict(list)
    if not by_version:
        return index
    for pk, version_pk, record_id, first, last in (Record.objects.filter(member_version_id__in=list(by_version))
                                                   .values_list("pk", "member_version_id", "record_id", "line_start",
                                                                "line_end")):
        checks = by_version[version_pk]
        lines = [c.line for c in checks]
        inside = checks[bisect.bisect_left(lines, first):bisect.bisect_right(lines, last)]
        if inside:
            index[pk] = inside
            index[record_id] = index[record_id] + inside
    return index


# Above this many records, the run's whole index is read (one query for its checks, one for its records)
# rather than one range per record in the query.
PAGE_QUERY_RECORDS = 300


def page_quotations(run, records) -> dict:
    """{record pk: [check, …]} for these records (a page of the member page or of the reconciliation
    page; of one version or several): one query whatever the size of the report, where `_index` reads
    every record of the run. Records need `line_start` and `line_end`."""
    index: dict = defaultdict(list)
    if not records:
        return index
    if len(records) > PAGE_QUERY_RECORDS:
        whole = _index(run)
        return defaultdict(list, {r.pk: whole[r.pk] for r in records if r.pk in whole})
    spans: dict[int, tuple[int, int]] = {}  # version → the lines its records span (a page is in document order)
    for record in records:
        first, last = spans.get(record.member_version_id, (record.line_start, record.line_end))
        spans[record.member_version_id] = (min(first, record.line_start), max(last, record.line_end))
    ranges = Q()
    for version, (first, last) in spans.items():
        ranges |= Q(member_version_id=version, line__gte=first, line__lte=last)
    by_version: dict[int, list] = defaultdict(list)
    for check in (QuotationCheck.objects.filter(ranges, kind=QuotationCheck.Kind.QUOTATION)
                  .select_related("member_version__member").only(*CHECK_FIELDS).order_by("line", "ordinal")):
        _decorate(check, run)
        by_version[check.member_version_id].append(check)
    lines = {version: [check.line for check in checks] for version, checks in by_version.items()}
    for record in records:
        checks = by_version.get(record.member_version_id)
        if checks:
            at = lines[record.member_version_id]
            inside = checks[bisect.bisect_left(at, record.line_start):bisect.bisect_right(at, record.line_end)]
            if inside:
                index[record.pk].extend(inside)
    return index


@register.simple_tag(takes_context=True)
def record_quotations(context, record) -> list:
    """The checked quotations inside `record` (a Record, or a record ID) of the context's run; from the
    context's `quotation_index` when the view built one for the records it shows."""
    run = context.get("run")
    request = context.get("request")
    if run is None or record is None or record == "":
        return []
    if context.get("quotation_index") is not None:
        return context["quotation_index"].get(record.pk if isinstance(record, Record) else record, [])
    cache = getattr(request, "_quotation_index", None) if request is not None else None
    if cache is None or cache[0] != run.pk:
        cache = (run.pk, _index(run))
        if request is not None:
            request._quotation_index = cache
    key = record.pk if isinstance(record, Record) else record
    return cache[1].get(key, [])


@register.simple_tag(takes_context=True)
def version_quotations(context, version) -> list:
    """Every checked quotation of one member version, in line order, each with its mark."""
    checks = list(QuotationCheck.objects.filter(member_version=version, kind=QuotationCheck.Kind.QUOTATION)
                  .select_related("member_version__member").only(*CHECK_FIELDS).order_by("line", "ordinal"))
    run = context.get("run") or version.member.run
    for check in checks:
        _decorate(check, run)
    return checks


@register.simple_tag
def quotation_summary(run) -> dict:
    summary = _quotation_summary(run)
    summary["marks"] = [(status, MARKS[status], count) for status, count in summary["totals"].items()]
    return summary

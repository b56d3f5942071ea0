"""The side-by-side reconciliation page (DESIGN.md §5): the member picker and filters, one page of rows
at a time, the integration issues and amendments panels.

The page's query count does not grow with the number of records: every row's data comes from a fixed set
of queries made up front (see `_page_context`)."""
from __future__ import annotations

import secrets
from collections import defaultdict
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.db.models import Count, F
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET

from records.member_page import kind_totals
from records.models import IntegrationIssue, Record
from reviews.access import run_for
from reviews.models import Run

from .. import selectors
from .. import services
from ..blockers import kept_page, kept_standing
from ..panels import blockers_context
from ..diffs import stored_diffs
from ..forms import BulkAcceptForm, PageFilterForm
from ..models import CanonicalRecord, Decidable, Mapping
from ..passes.entering import in_review_pass
from .runs import counters_context
from .context import (KEPT_FILTERS, STATEMENTS, controls_of, csrf_input_tag, kept_query, targets_by_kind,
                      target_options)
from .bulk import undo_key
from .independent import review_banner
from .rows import (IssueRow, RowBuilder, actions_of, amendment_rows_of, markdown_diff_html, grouped)


# The query parameters one view of the page is made of (htmx's headers pick a part of it to send).
VIEW_PARAMS = ("member", "kind", "show", "issues", "offset", "seen")


def _page_context(request, run: Run, filters: PageFilterForm) -> dict:
    """The page's context: what every reader of this view of the run at its chain head shares, kept
    (`blockers.kept_page`), and what is the reader's own (their CSRF token, their last bulk accept, their
    review pass, the controls their roles allow)."""
    controls = controls_of(request, run)
    view = urlencode([(name, request.GET.get(name, "")) for name in VIEW_PARAMS]
                     + [("decide", controls["can_decide"]), ("propose", controls["can_propose"])])
    shared = kept_page(run, f"page?{view}", lambda run: _view_context(request, run, filters, controls))
    return {
        **shared,
        **counters_context(request, run, kept=True),  # the request's `run` with them
        **controls,
        "correction_base": shared["correction_base"],  # the picked member's, not the URL's (controls')
        "csrf_input": csrf_input_tag(request),
        "bulk_form": BulkAcceptForm(initial={"min_score": 0.9}),
        "bulk_undo": request.session.get(undo_key(run)),
        **review_banner(request, run),
    }


def _view_context(request, run: Run, filters: PageFilterForm, controls: dict) -> dict:
    """What this view of the page shows of the run: the same for every reader whose roles allow the same
    `controls` (the rows' actions depend on those roles and on the URL's filters alone). Its page of rows
    is rendered here, once, with `ROWS_CSRF` where each form's CSRF field goes (`run_reconcile` puts the
    reader's own there)."""
    members = selectors.members(run)
    pickable = [m for m in members if m.role not in services.SEEDING_ROLES and m.declarations]
    # Mapping statements of a result or reconciliation whose source no member of the run declares
    # (seed 000's `MEM-OBJ-1 → OBJ-5`) still need a decision: they get a picker entry of their own.
    unattached_count = Mapping.objects.filter(run=run, source_record__isnull=True).count()
    choices = [m.role for m in pickable] + ([STATEMENTS] if unattached_count else [])
    wanted = filters.value("member")
    current = wanted if wanted in choices else (choices[0] if choices else "")
    selected = next((m for m in pickable if m.role == current), None)
    kind, show = filters.value("kind"), filters.value("show") or "all"
    standing = kept_standing(run)  # `run` is run_for's, read at the request's start

    records = Record.objects.none()
    if selected is not None:
        records = Record.objects.filter(member_version_id=selected.current_version_id,
                                        record_type=Record.Type.DECLARATION)
        if kind:
            records = records.filter(kind=kind)
    if show == "all" and current != STATEMENTS:
        shown, more = _one_page_of_rows(request, run, records, standing, _declarations(selected, kind))
    else:
        rows = _filtered_rows(request, run, records, standing, show, kind, statements=current == STATEMENTS)
        shown, more = _rows_page(rows, request.GET.get("offset"))

    issues_scope = filters.value("issues")
    targets = selectors.active_targets(run)  # the first of each kind; the rest as the reviewer types
    kinds_present = sorted({k for _id, k, _label in targets})  # a kind with an active record has a first
    diffs = stored_diffs([(r.record.text, r.canonical.text) for r in shown
                          if r.record is not None and r.canonical is not None], markdown_diff_html)
    for r in shown:
        if r.record is not None and r.canonical is not None:
            r.diff = diffs.get((r.record.text, r.canonical.text))
    # The page's rows are the picked member's, which the URL may not name yet.
    correction_base = controls["correction_base"] and (
        reverse("run-corrections", args=[run.run_id]) + "?" + urlencode({"member": current}) + "&record=")
    # One page of rows (the word diffs of those rows only); the rest arrive as the reviewer scrolls or presses j
    # past the last row (`more`: htmx, or a plain link without JavaScript).
    rows = grouped([row.display() for row in shown])
    more = more | {"url": _page_url(run, {name: request.GET.get(name, "") for name in KEPT_FILTERS}
                                    | {"member": current, "offset": more["offset"],
                                       "seen": more.get("seen", "")})} if more else None
    return {
        "rows_html": render_to_string("reconcile/run_reconcile.html#page-rows", {
            "rows": rows, "more": more, "can_decide": controls["can_decide"], "correction_base": correction_base,
            "csrf_input": ROWS_CSRF}),
        "correction_base": correction_base,
        "members": pickable,
        "selected": selected,
        "current": current,
        "statements": STATEMENTS,
        "unattached_count": unattached_count,
        "kind": kind,
        "show": show,
        "issues_scope": issues_scope,
        "kinds": [k for k, _ in filters.fields["kind"].choices if k],
        "shows": [s for s, _ in PageFilterForm.SHOW],
        "rows": rows,  # `rows_html` shows them; the table says when there are none
        **_issues_panel(request, run, members, selected, issues_scope),
        "amendment_rows": amendment_rows_of(request, run, services.current_amendment_decisions(run)),
        "target_options": {kind: target_options(choices)
                           for kind, choices in targets_by_kind(targets, kinds_present).items()},
        **blockers_context(run, standing),
        "query": kept_query(request.GET),
    }


PAGE_ROWS = 60

# Where the kept rows' forms take the reader's CSRF field: a comment no report text can hold (texts are
# escaped; the marker is drawn per process and never shown).
ROWS_CSRF = SafeString(f"<!--csrf {secrets.token_hex(16)}-->")


def _builder(request, run: Run, standing, canonicals) -> RowBuilder:
    return RowBuilder(canonicals=canonicals, standing=standing, run=run, query=kept_query(request.GET),
                       user=request.user)


def _canonicals_for(run: Run, mappings, standing) -> dict[str, CanonicalRecord]:
    """The canonical records the rows of these mappings show: their targets, and what a target entered as."""
    entered = standing.entered_as
    wanted = {m.target for m in mappings if m.target}
    wanted |= {entered[t] for t in wanted if t in entered}
    return {c.canonical_id: c for c in CanonicalRecord.objects.filter(run=run, canonical_id__in=wanted)
            .only(*selectors.CANONICAL_COLUMNS)}


def _one_page_of_rows(request, run: Run, records, standing, totals: int) -> tuple[list, dict | None]:
    """One page of every row (the page's default view), reading only that page's records, mappings and
    canonical records: the records from the ordinal `offset` names (the (version, ordinal) index), each
    with its rows (one per mapping of it, or one without), until about PAGE_ROWS rows, never splitting a
    record's rows. `totals` is how many records the view has (kept by the parse); the next page's link
    carries how many were shown before it (`seen`), so nothing is counted over the run per request."""
    start, seen = (int(v) if v and v.isdigit() else 0 for v in (request.GET.get("offset"), request.GET.get("seen")))
    page = list(records.filter(ordinal__gte=start).order_by("ordinal").only(*selectors.RECORD_COLUMNS)
                [:PAGE_ROWS + 1])
    mappings = list(selectors.current_mappings(run).filter(source__in=[r.record_id for r in page]))
    by_source: dict[str, list[Mapping]] = defaultdict(list)
    for m in mappings:
        by_source[m.source].append(m)
    builder = _builder(request, run, standing, _canonicals_for(run, mappings, standing))
    builder.quote(run, page)
    rows, shown = [], 0
    for record in page:
        if len(rows) >= PAGE_ROWS:
            break
        rows.extend(builder.rows(record, by_source.get(record.record_id, ())))
        shown += 1
    if shown == len(page):
        return rows, None
    seen += shown
    return rows, {"offset": page[shown].ordinal, "seen": seen, "left": max(totals - seen, 0), "unit": "record"}


def _declarations(selected, kind: str) -> int:
    """How many declarations (of `kind`, or of every kind) the picked member's current version has, as the
    parse kept them per kind."""
    if selected is None or selected.current_version is None:
        return 0
    return sum(t["n"] for (record_type, k), t in kind_totals(selected.current_version).items()
               if record_type == Record.Type.DECLARATION and (not kind or k == kind))


def _filtered_rows(request, run: Run, records, standing, show: str, kind: str, *, statements: bool) -> list:
    """Every row of the picked member (or of the mapping statements) that the `show` filter keeps."""
    records = list(records.only(*selectors.RECORD_COLUMNS).order_by("ordinal"))
    mappings = list(selectors.current_mappings(run))
    builder = _builder(request, run, standing, _canonicals_for(run, mappings, standing))
    builder.quote(run, records)
    by_source: dict[str, list[Mapping]] = defaultdict(list)
    for m in mappings:
        by_source[m.source].append(m)
    rows = [row for record in records for row in builder.rows(record, by_source.get(record.record_id, ()))]
    if statements:
        rows.extend(row for mapping in mappings if mapping.source_record_id is None
                    for row in builder.rows(None, [mapping]) if not kind or row.kind == kind)
    if show == "undecided":
        rows = [r for r in rows if r.mapping is None or r.is_open]
    elif show == "stale":
        rows = [r for r in rows if r.mapping is not None and r.mapping.state == Decidable.State.STALE]
    elif show == "conflicts":
        rows = [r for r in rows if r.conflict]
    return rows


def _rows_page(rows: list, offset: str | None) -> tuple[list, dict | None]:
    """The rows from `offset` (a row index) for about PAGE_ROWS rows, never splitting one member record's
    rows across pages; and where the next page starts ({"offset", "left"}), or None at the end."""
    start = int(offset) if offset and offset.isdigit() else 0
    start = min(start, len(rows))
    end = min(start + PAGE_ROWS, len(rows))
    while 0 < end < len(rows) and rows[end].source == rows[end - 1].source:
        end += 1
    return rows[start:end], ({"offset": end, "left": len(rows) - end, "unit": "row"} if end < len(rows) else None)


def _page_url(run: Run, params: dict) -> str:
    query = urlencode({k: v for k, v in params.items() if v})
    return reverse("run-reconcile", args=[run.run_id]) + (f"?{query}" if query else "")


def _issues_panel(request, run: Run, members, selected, scope: str) -> dict:
    """The integration issues of the picked member (or of all members: `issues=all`), two queries."""
    current_versions = [m.current_version_id for m in members if m.current_version_id]
    per_version = dict(IntegrationIssue.objects.filter(member_version_id__in=current_versions)
                       .values_list("member_version_id").annotate(n=Count("id")).order_by())
    scoped = selected if scope != "all" else None
    issues = IntegrationIssue.objects.filter(
        member_version_id__in=[scoped.current_version_id] if scoped else current_versions)
    issues = (issues.annotate(member_role=F("member_version__member__role"))
              .select_related("decision")
              .only("id", "index", "text", "references", "line", "member_version_id", "decision")
              .order_by("member_role", "index"))
    issue_action = actions_of(run, "reconcile-decide-issue", kept_query(request.GET))
    kept = {name: request.GET.get(name, "") for name in KEPT_FILTERS}
    return {
        "issue_rows": [IssueRow(issue=i, decision=selectors.decision_of(i), member_role=i.member_role,
                                action=issue_action(i.pk)) for i in issues],
        "issues_member": scoped.role if scoped else "",
        "issues_total": sum(per_version.values()),
        "issues_of_selected": per_version.get(selected.current_version_id, 0) if selected else 0,
        "issues_all_url": _page_url(run, kept | {"issues": "all"}) + "#issues",
        "issues_member_url": _page_url(run, kept | {"issues": ""}) + "#issues",
    }


@login_required
@require_GET
@in_review_pass
def target_choices(request, run_id: str):
    """The target choices of one kind matching what the reviewer typed (`target`): a datalist's options."""
    run = run_for(request, run_id)
    kind, typed = request.GET.get("kind", "")[:3], request.GET.get("target", "").strip()[:120]
    return render(request, "reconcile/run_reconcile.html#target-options", {"options": target_options(
        (i, label) for i, _k, label in selectors.active_targets(run, kind=kind, matching=typed))})


@login_required
@require_GET
@in_review_pass
def run_reconcile(request, run_id: str):
    run = run_for(request, run_id)
    filters = PageFilterForm(request.GET)
    context = _page_context(request, run, filters)
    if request.htmx and request.htmx.target == "pair-table":
        response = render(request, "reconcile/run_reconcile.html#pair-table", context)
    elif request.htmx and request.GET.get("offset"):  # the next page of rows, as the reviewer scrolls
        response = render(request, "reconcile/run_reconcile.html#page-rows", context)
    else:
        response = render(request, "reconcile/run_reconcile.html", context)
    response.content = response.content.replace(ROWS_CSRF.encode(), context["csrf_input"].encode())
    return response

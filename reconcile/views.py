"""The reviewer's runs list and the side-by-side reconciliation page (DESIGN.md §5), with the
decisions posted from it.

One view serves the page and its htmx regions; a decision re-renders the same
row fragment (`reconcile/_pair_row.html`, `reconcile/_issue_row.html`) that the
first paint used, with the counters updated out of band. Without JavaScript the
forms are plain POSTs that redirect back (POST/redirect/GET).

The page's query count does not grow with the number of records: every row's
data comes from a fixed set of queries made up front (see `_page_context`).
"""
from __future__ import annotations

import functools
import html
from collections import Counter, defaultdict
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, F, Q
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.template.defaultfilters import date as format_date
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import template_localtime
from django.views.decorators.http import require_GET, require_POST

from records.ids import parse_id
from records.models import IntegrationIssue, MemberReport, Record
from reviews.access import DECIDE, READ_RUNS, check_role, has_any_role
from reviews.audit import Actor
from reviews.models import Run

from . import diffing, services
from .forms import BulkAcceptForm, DecisionForm, PageFilterForm
from .models import CanonicalRecord, Decidable, IssueDecision, KindCounter, Mapping

# Members whose declarations are the canonical side, not something to map.
CANONICAL_ROLES = {"runtime", "result"}
STALE_MESSAGE = "Another reviewer changed this item; here is its current state."
# The picker entry for mappings whose source is not a record of a current member version.
STATEMENTS = "statements"
# The page filters a decision form carries back to the page it came from.
KEPT_FILTERS = ("member", "kind", "show")

# Columns the page reads; the bytes and parser output of a version stay in the database.
RECORD_COLUMNS = ("id", "member_version_id", "ordinal", "record_id", "kind", "prefix", "label", "text",
                  "content_sha256")
CANONICAL_COLUMNS = ("id", "canonical_id", "kind", "number", "label", "text", "origin", "state", "rationale",
                     "version")


# ---------------------------------------------------------------------------
# Rows

@dataclass
class PairRow:
    """One line of the page: a member record and the canonical record a mapping points it at."""

    record: Record | None
    mapping: Mapping | None
    canonical: CanonicalRecord | None
    would_be: str = ""
    conflict: str = ""
    message: str = ""
    message_class: str = ""
    action: str = ""  # where the row's decision form posts

    @property
    def dom_id(self) -> str:
        return f"pair-{self.mapping.pk}" if self.mapping else f"record-{self.record.pk}"

    @property
    def kind(self) -> str:
        if self.record is not None:
            return self.record.kind
        parsed = parse_id(self.mapping.source) if self.mapping else None
        return parsed[1] if parsed else ""

    @property
    def is_open(self) -> bool:
        return self.mapping is not None and self.mapping.is_open

    @property
    def score(self) -> str:
        """The suggestion's score with two decimals ('' when the mapping has none)."""
        score = self.mapping.score if self.mapping else None
        return "" if score is None else f"{score:.2f}"

    @property
    def needs_target(self) -> bool:
        return self.mapping is not None and self.mapping.relation != Mapping.Relation.NO_COUNTERPART

    def display(self) -> dict:
        """Everything `_pair_row.html` prints, as plain values: the template does no lookups
        through models and few conditionals, which is what keeps 2,000 rows fast to render.
        The word diff is computed here, so only for rows that are shown and have a canonical side."""
        m, record, canonical = self.mapping, self.record, self.canonical
        if record is not None and canonical is not None:
            left, right = _diff(record.text, canonical.text)
        else:
            left = record.text if record is not None else ""
            right = canonical.text if canonical is not None else ""
        row = {
            "dom_id": self.dom_id,
            "css": f"state-{m.state if m else 'unmapped'}" + (" conflict" if self.conflict else ""),
            "source": record.record_id if record is not None else m.source,
            "label": record.label if record is not None else "",
            "record": record is not None,
            "left": left,
            "mapping": m is not None,
            "message": self.message,
            "message_class": self.message_class,
        }
        if m is None:
            return row
        if canonical is not None:
            side = "canonical"
        elif self.would_be:
            side = "new"
        elif m.relation == Mapping.Relation.NO_COUNTERPART:
            side = "none"
        else:
            side = "missing"
        decided = ""
        if m.decided_by:
            decided = f"{m.state} by {m.decided_by}"
            if m.decided_at:
                decided += f", {format_date(template_localtime(m.decided_at), 'Y-m-d H:i')}"
            if m.rationale:
                decided += f": “{m.rationale}”"
        is_open = m.is_open
        row.update({
            "side": side,
            "relation": m.relation,
            "canonical_id": canonical.canonical_id if canonical is not None else "",
            "canonical_label": canonical.label if canonical is not None else "",
            "canonical_rejected": canonical is not None and canonical.state == CanonicalRecord.State.REJECTED,
            "right": right,
            "would_be": self.would_be,
            "target": m.target,
            "state": m.state,
            "score": self.score,
            "provenance": f"{m.origin}{f' · {m.proposed_by}' if m.proposed_by else ''} · v{m.version}",
            "reason": m.reason,
            "conflict": self.conflict,
            "decided": decided,
            "action": self.action,
            "version": m.version,
            "is_open": is_open,
            "target_input": is_open and self.needs_target,
            "kind": self.kind,
            "target_placeholder": m.target or "allocate on accept",
        })
        return row


@dataclass
class IssueRow:
    issue: IntegrationIssue
    decision: IssueDecision | None
    member_role: str
    message: str = ""
    message_class: str = ""
    action: str = ""

    @property
    def dom_id(self) -> str:
        return f"issue-{self.issue.pk}"

    @property
    def is_open(self) -> bool:
        return self.decision is None or self.decision.is_open


# Word diffs cost ~0.1 ms each (difflib), a tenth of a 2,000-row page; texts change far less often
# than the page is loaded, so each process keeps the latest few thousand.
@functools.lru_cache(maxsize=4096)
def _diff(old: str, new: str) -> tuple[SafeString, SafeString]:
    """Both texts escaped; words only in `old` wrapped in <del>, words only in `new` in <ins>."""
    left, right = [], []
    for op, text in diffing.diff_words(old, new):
        escaped = html.escape(text, quote=False)
        if op == diffing.EQUAL:
            left.append(escaped)
            right.append(escaped)
        elif op == diffing.DELETE:
            left.append(f"<del>{escaped}</del>")
        else:
            right.append(f"<ins>{escaped}</ins>")
    return mark_safe("".join(left)), mark_safe("".join(right))  # noqa: S308 — every piece escaped above


def _actions(run: Run, url_name: str, query: str):
    """pk → the decision URL, reversed once per page rather than once per row."""
    stem = reverse(url_name, args=[run.run_id, 0])[: -len("0/decide/")]
    suffix = "decide/" + (f"?{query}" if query else "")
    return lambda pk: f"{stem}{pk}/{suffix}"


def _csrf_input(request) -> SafeString:
    """The hidden CSRF field of every row's form, rendered once per response: `{% csrf_token %}`
    in the row template cost 20 µs a row, a fifth of the row's rendering."""
    return format_html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', get_token(request))


def _would_be_id(mapping: Mapping, next_numbers: dict[str, int]) -> str:
    """The canonical ID accepting a `new` mapping would allocate (DESIGN.md §2)."""
    if mapping.target:
        return mapping.target
    parsed = parse_id(mapping.source)
    if parsed is None:
        return ""
    _, kind, tail = parsed
    if tail.isdigit():
        return f"{kind}-{next_numbers.get(kind, 1)} (next free number)"
    return mapping.source


def _conflicts(mappings: list[Mapping]) -> dict[int, str]:
    """Mapping pk → why it is in conflict: its record has several open mappings, or its
    target is also claimed by another member's accepted mapping."""
    open_per_source = Counter(m.source for m in mappings if m.is_open)
    claims: dict[str, list[Mapping]] = defaultdict(list)
    for m in mappings:
        if m.state == Decidable.State.ACCEPTED and m.target:
            claims[m.target].append(m)
    found = {}
    for m in mappings:
        if m.state == Decidable.State.REJECTED:
            continue
        if m.is_open and open_per_source[m.source] > 1:
            found[m.pk] = f"{m.source} has {open_per_source[m.source]} open mappings"
            continue
        rivals = [c for c in claims.get(m.target, ()) if c.source != m.source
                  and getattr(c, "member_role", None) != getattr(m, "member_role", None)]
        if m.target and rivals:
            found[m.pk] = f"{m.target} is also claimed by {rivals[0].source} (accepted)"
    return found


def _pair_row(record, mapping, canonicals, next_numbers, conflicts) -> PairRow:
    row = PairRow(record=record, mapping=mapping, canonical=None)
    if mapping is None:
        return row
    row.conflict = conflicts.get(mapping.pk, "")
    if mapping.relation == Mapping.Relation.NEW and not (mapping.target and mapping.target in canonicals):
        row.would_be = _would_be_id(mapping, next_numbers)
    elif mapping.target:
        row.canonical = canonicals.get(mapping.target)
    return row


def _current_mappings(run: Run):
    return (Mapping.objects.filter(run=run)
            .annotate(member_role=F("source_record__member_version__member__role"))
            .order_by("source", "id"))


def _next_numbers(run: Run) -> dict[str, int]:
    return {kind: last + 1 for kind, last in KindCounter.objects.filter(run=run).values_list("kind", "last_number")}


def _canonicals(run: Run) -> dict[str, CanonicalRecord]:
    return {c.canonical_id: c for c in CanonicalRecord.objects.filter(run=run).only(*CANONICAL_COLUMNS)}


def _progress(run: Run) -> dict:
    """Counts of what is left to decide, in the shape of services.decision_progress."""
    progress = services.decision_progress(run)
    mappings, issues = progress.get("mappings", {}), progress.get("issues", {})
    return {
        "mappings_undecided": mappings.get("undecided", 0),
        "mappings_stale": mappings.get("stale", 0),
        "mappings_total": mappings.get("total", 0),
        "issues_undecided": issues.get("undecided", 0),
        "issues_total": issues.get("total", 0),
    }


def _members(run: Run):
    return list(
        MemberReport.objects.filter(run=run)
        .select_related("current_version")
        .only("id", "role", "current_version__id", "current_version__version", "current_version__sha256",
              "current_version__status")
        .annotate(declarations=Count("current_version__records",
                                     filter=Q(current_version__records__record_type=Record.Type.DECLARATION)))
        .order_by("role")
    )


def _page_context(request, run: Run, filters: PageFilterForm) -> dict:
    members = _members(run)
    pickable = [m for m in members if m.role not in CANONICAL_ROLES and m.declarations]
    mappings = list(_current_mappings(run))
    # Mapping statements of a result or reconciliation whose source no member of the run declares
    # (seed 000's `MEM-OBJ-1 → OBJ-5`) still need a decision: they get a picker entry of their own.
    unattached = [m for m in mappings if m.source_record_id is None]
    choices = [m.role for m in pickable] + ([STATEMENTS] if unattached else [])
    wanted = filters.value("member")
    current = wanted if wanted in choices else (choices[0] if choices else "")
    selected = next((m for m in pickable if m.role == current), None)
    kind, show = filters.value("kind"), filters.value("show") or "all"

    records = []
    if selected is not None:
        records = Record.objects.filter(member_version_id=selected.current_version_id,
                                        record_type=Record.Type.DECLARATION).only(*RECORD_COLUMNS)
        if kind:
            records = records.filter(kind=kind)
        records = list(records.order_by("ordinal"))
    canonicals = _canonicals(run)
    next_numbers = _next_numbers(run)
    conflicts = _conflicts(mappings)

    by_source: dict[str, list[Mapping]] = defaultdict(list)
    for m in mappings:
        by_source[m.source].append(m)
    query = _kept_query(request.GET)
    mapping_action = _actions(run, "reconcile-decide-mapping", query)
    rows = []
    for record in records:
        for mapping in by_source.get(record.record_id) or [None]:
            row = _pair_row(record, mapping, canonicals, next_numbers, conflicts)
            row.action = mapping_action(mapping.pk) if mapping else ""
            rows.append(row)
    if current == STATEMENTS:
        for mapping in unattached:
            row = _pair_row(None, mapping, canonicals, next_numbers, conflicts)
            row.action = mapping_action(mapping.pk)
            if not kind or row.kind == kind:
                rows.append(row)
    if show == "undecided":
        rows = [r for r in rows if r.mapping is None or r.is_open]
    elif show == "stale":
        rows = [r for r in rows if r.mapping is not None and r.mapping.state == Decidable.State.STALE]
    elif show == "conflicts":
        rows = [r for r in rows if r.conflict]

    current_versions = [m.current_version_id for m in members if m.current_version_id]
    issues = (IntegrationIssue.objects.filter(member_version_id__in=current_versions)
              .annotate(member_role=F("member_version__member__role"))
              .select_related("decision")
              .only("id", "index", "text", "references", "line", "member_version_id", "decision")
              .order_by("member_role", "index"))
    issue_action = _actions(run, "reconcile-decide-issue", query)
    issue_rows = [IssueRow(issue=i, decision=_decision_of(i), member_role=i.member_role, action=issue_action(i.pk))
                  for i in issues]

    kinds_present = sorted({c.kind for c in canonicals.values() if c.state == CanonicalRecord.State.ACTIVE})
    return {
        "run": run,
        "members": pickable,
        "selected": selected,
        "current": current,
        "statements": STATEMENTS,
        "unattached_count": len(unattached),
        "kind": kind,
        "show": show,
        "kinds": [k for k, _ in filters.fields["kind"].choices if k],
        "shows": [s for s, _ in PageFilterForm.SHOW],
        "rows": [row.display() for row in rows],
        "issue_rows": issue_rows,
        "targets_by_kind": _targets_by_kind(canonicals, kinds_present),
        "progress": _progress(run),
        "can_decide": has_any_role(request.user, DECIDE),
        "csrf_input": _csrf_input(request),
        "query": query,
        "bulk_form": BulkAcceptForm(initial={"min_score": 0.9}),
    }


def _targets_by_kind(canonicals: dict[str, CanonicalRecord], kinds: list[str]) -> dict[str, list[str]]:
    targets = {k: [] for k in kinds}
    for c in canonicals.values():
        if c.state == CanonicalRecord.State.ACTIVE and c.kind in targets:
            targets[c.kind].append(c.canonical_id)
    return targets


def _decision_of(issue: IntegrationIssue) -> IssueDecision | None:
    try:
        return issue.decision
    except IssueDecision.DoesNotExist:
        return None


def _kept_query(params) -> str:
    kept = {name: params.get(name) for name in KEPT_FILTERS if params.get(name)}
    return urlencode(kept)


def _back_to_page(run: Run, request, anchor: str = "") -> str:
    url = reverse("run-reconcile", args=[run.run_id])
    query = _kept_query(request.GET)
    return url + (f"?{query}" if query else "") + (f"#{anchor}" if anchor else "")


# ---------------------------------------------------------------------------
# Views

RUNS_PER_PAGE = 50


def _progress_by_run(run_ids: list[int]) -> dict[int, dict]:
    """run pk → decided and total mappings and issues, in two grouped queries for any number of runs.

    Issues count as in `services.current_issue_decisions`: only those of each member's current version.
    """
    decided = Q(state__in=(Decidable.State.ACCEPTED, Decidable.State.REJECTED))
    counts = {"total": Count("id"), "decided": Count("id", filter=decided),
              "stale": Count("id", filter=Q(state=Decidable.State.STALE))}
    mappings = {row["run_id"]: row for row in
                Mapping.objects.filter(run_id__in=run_ids).values("run_id").annotate(**counts).order_by()}
    issues = {row["run_id"]: row for row in
              IssueDecision.objects.filter(run_id__in=run_ids,
                                           issue__member_version__member__current_version=F("issue__member_version"))
              .values("run_id").annotate(**counts).order_by()}
    empty = {"total": 0, "decided": 0, "stale": 0}
    progress = {}
    for run_id in run_ids:
        m, i = mappings.get(run_id, empty), issues.get(run_id, empty)
        total, done = m["total"] + i["total"], m["decided"] + i["decided"]
        progress[run_id] = {
            "mappings_decided": m["decided"], "mappings_total": m["total"],
            "issues_decided": i["decided"], "issues_total": i["total"],
            "stale": m["stale"] + i["stale"], "decided": done, "total": total,
            "percent": round(100 * done / total) if total else 0,
        }
    return progress


@login_required
@require_GET
def runs_list(request):
    """Every run with its status and how far its decisions are, filtered by status and system."""
    check_role(request.user, READ_RUNS)
    runs = Run.objects.all()
    status, system = request.GET.get("status", ""), request.GET.get("system", "")
    if status in Run.Status.values:
        runs = runs.filter(status=status)
    else:
        status = ""
    if system:
        runs = runs.filter(system__iexact=system)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    progress = _progress_by_run([run.pk for run in page])
    return render(request, "reconcile/runs_list.html", {
        "page": page,
        "rows": [{"run": run, "progress": progress[run.pk]} for run in page],
        "statuses": Run.Status.choices,
        "status": status,
        "system": system,
        "systems": Run.objects.order_by("system").values_list("system", flat=True).distinct(),
        "filter_query": urlencode({k: v for k, v in (("status", status), ("system", system)) if v}),
    })


@login_required
@require_GET
def run_decision_progress(request, run_id: str):
    """The run's decision progress alone: the run page loads it (records does not import reconcile)."""
    run = get_object_or_404(Run, run_id=run_id)
    check_role(request.user, READ_RUNS, run=run, action="read", actor=Actor.for_request(request))
    return render(request, "reconcile/_decision_progress.html", {"run": run, "p": _progress_by_run([run.pk])[run.pk]})


@login_required
@require_GET
def run_reconcile(request, run_id: str):
    run = get_object_or_404(Run, run_id=run_id)
    check_role(request.user, READ_RUNS)
    filters = PageFilterForm(request.GET)
    context = _page_context(request, run, filters)
    if request.htmx and request.htmx.target == "pair-table":
        return render(request, "reconcile/run_reconcile.html#pair-table", context)
    return render(request, "reconcile/run_reconcile.html", context)


def _mapping_row(mapping: Mapping) -> PairRow:
    """The row of one mapping, built the same way as on the page (a few queries, not per page)."""
    run = mapping.run
    mapping = _current_mappings(run).get(pk=mapping.pk)
    record = (Record.objects.filter(run=run, record_id=mapping.source, record_type=Record.Type.DECLARATION,
                                    member_version__member__current_version=F("member_version"))
              .only(*RECORD_COLUMNS).first())
    related = list(_current_mappings(run).filter(Q(source=mapping.source) | Q(target=mapping.target)
                                                  if mapping.target else Q(source=mapping.source)))
    return _pair_row(record, mapping, _canonicals(run), _next_numbers(run), _conflicts(related))


def _issue_row(decision: IssueDecision) -> IssueRow:
    issue = (IntegrationIssue.objects.annotate(member_role=F("member_version__member__role"))
             .select_related("decision").get(pk=decision.issue_id))
    return IssueRow(issue=issue, decision=_decision_of(issue), member_role=issue.member_role)


def _row_response(request, run: Run, partial: str, row, status: int) -> HttpResponse:
    url_name = "reconcile-decide-mapping" if partial == "pair-swap" else "reconcile-decide-issue"
    row.action = _actions(run, url_name, _kept_query(request.GET))(row.mapping.pk if partial == "pair-swap"
                                                                     else row.issue.pk)
    context = {"run": run, "row": row.display() if partial == "pair-swap" else row, "progress": _progress(run),
               "can_decide": True, "csrf_input": _csrf_input(request), "query": _kept_query(request.GET),
               "oob": True}
    return render(request, f"reconcile/run_reconcile.html#{partial}", context, status=status)


@login_required
@require_POST
def decide_mapping(request, run_id: str, mapping_id: int):
    run = get_object_or_404(Run, run_id=run_id)
    check_role(request.user, DECIDE, run=run, action="mapping.decide", actor=Actor.for_request(request))
    mapping = get_object_or_404(Mapping, run=run, pk=mapping_id)
    form = DecisionForm(request.POST)
    status, message, message_class = 200, "", ""
    if not form.is_valid():
        status, message, message_class = 400, form.problem(), "error"
    else:
        try:
            mapping = services.decide_mapping(
                mapping=mapping, decision=form.cleaned_data["decision"], rationale=form.cleaned_data["rationale"],
                actor=Actor.for_request(request), expected_version=form.cleaned_data["version"],
                target=(form.cleaned_data["target"] or None) if form.cleaned_data["decision"] == "accept" else None,
            )
            message, message_class = f"{form.cleaned_data['decision'].capitalize()}ed {mapping}.", "ok"
        except services.StaleVersion as stale:
            mapping = stale.current
            status, message, message_class = 409, STALE_MESSAGE, "stale"
        except services.StateConflict as error:
            status, message, message_class = 409, str(error), "error"
        except services.ProposalError as error:
            status, message, message_class = 400, str(error), "error"
    if not request.htmx:
        messages.add_message(request, messages.SUCCESS if status == 200 else messages.ERROR, message)
        return redirect(_back_to_page(run, request, f"pair-{mapping.pk}"))
    row = _mapping_row(mapping)
    row.message, row.message_class = message if status != 200 else "", message_class
    return _row_response(request, run, "pair-swap", row, status)


@login_required
@require_POST
def decide_issue(request, run_id: str, issue_id: int):
    run = get_object_or_404(Run, run_id=run_id)
    check_role(request.user, DECIDE, run=run, action="issue.decide", actor=Actor.for_request(request))
    decision = get_object_or_404(IssueDecision, run=run, issue_id=issue_id)
    form = DecisionForm(request.POST)
    status, message, message_class = 200, "", ""
    if not form.is_valid():
        status, message, message_class = 400, form.problem(), "error"
    else:
        try:
            decision = services.decide_issue(
                issue_decision=decision, decision=form.cleaned_data["decision"],
                rationale=form.cleaned_data["rationale"], actor=Actor.for_request(request),
                expected_version=form.cleaned_data["version"],
            )
            message, message_class = f"Integration issue {decision.issue_id}: {decision.state}.", "ok"
        except services.StaleVersion as stale:
            decision = stale.current
            status, message, message_class = 409, STALE_MESSAGE, "stale"
        except services.StateConflict as error:
            status, message, message_class = 409, str(error), "error"
        except services.ProposalError as error:
            status, message, message_class = 400, str(error), "error"
    if not request.htmx:
        messages.add_message(request, messages.SUCCESS if status == 200 else messages.ERROR, message)
        return redirect(_back_to_page(run, request, f"issue-{decision.issue_id}"))
    row = _issue_row(decision)
    row.message, row.message_class = message if status != 200 else "", message_class
    return _row_response(request, run, "issue-swap", row, status)


@login_required
@require_POST
def bulk_accept(request, run_id: str):
    run = get_object_or_404(Run, run_id=run_id)
    check_role(request.user, DECIDE, run=run, action="mapping.bulk_accept", actor=Actor.for_request(request))
    form = BulkAcceptForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Bulk accept needs a minimum score between 0 and 1.")
        return redirect(_back_to_page(run, request))
    try:
        accepted = services.bulk_accept_suggestions(
            run=run, min_score=form.cleaned_data["min_score"], actor=Actor.for_request(request),
            rationale=form.rationale_or_default(),
        )
    except (services.StateConflict, services.ProposalError) as error:
        messages.error(request, str(error))
        return redirect(_back_to_page(run, request))
    messages.success(request, f"Accepted {accepted} suggestion{'s' if accepted != 1 else ''} "
                              f"scoring at least {form.cleaned_data['min_score']:.2f}.")
    return redirect(_back_to_page(run, request))

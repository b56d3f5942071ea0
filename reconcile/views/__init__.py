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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, F, Q
from django.http import Http404, HttpResponse
from django_htmx.http import HttpResponseClientRefresh
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.template.defaultfilters import date as format_date
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import template_localtime
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from records.ids import parse_id
from records.models import IntegrationIssue, MemberReport, Record
from records.run_findings import validation_counts
from reviews.access import DECIDE, PROPOSE, READ_RUNS, check_role, has_any_role
from reviews.audit import Actor
from reviews.models import Run

from .. import diffing, dispositions, services
from ..blockers import run_standing
from ..panels import blockers_context, final_notice
from ..word_diffs import stored_diffs
from ..forms import AmendmentDecisionForm, BulkAcceptForm, DecisionForm, PageFilterForm, ProposeForm, RejectCanonicalForm
from ..models import AmendmentDecision, CanonicalRecord, Decidable, IssueDecision, Mapping

STALE_MESSAGE = ("This item changed since the page showed it (another decision, or a new member version); "
                 "here is its current state.")
# The picker entry for mappings whose source is not a record of a current member version.
STATEMENTS = "statements"
# The page filters a decision form carries back to the page it came from.
KEPT_FILTERS = ("member", "kind", "show", "issues")

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
    via: str = ""  # the member record the target names, when it entered the shared set as `canonical`
    settled: str = ""  # what the record's disposition makes of this row (a lost alternative, a rejected record)
    conflict: str = ""
    message: str = ""
    message_class: str = ""
    action: str = ""  # where the row's decision form posts
    propose_action: str = ""  # where "propose another mapping" for the row's record goes
    reject_action: str = ""  # where the rejection of the row's canonical record goes
    # Each form is a link until opened (2,000 rows stay light); a refused one comes back open with the input.
    propose_form: dict | None = None
    propose_message: str = ""
    propose_message_class: str = ""
    reject_form: dict | None = None
    canonical_message: str = ""
    canonical_message_class: str = ""
    oob: bool = False  # swapped out of band, beside the row the reviewer acted on
    diff: tuple | None = None  # the stored word diff (reconcile/word_diffs.py), when the page looked it up

    @property
    def dom_id(self) -> str:
        return f"pair-{self.mapping.pk}" if self.mapping else f"record-{self.record.pk}"

    @property
    def source(self) -> str:
        return self.record.record_id if self.record is not None else self.mapping.source

    @property
    def kind(self) -> str:
        if self.record is not None:
            return self.record.kind
        parsed = parse_id(self.mapping.source) if self.mapping else None
        return parsed[1] if parsed else ""

    @property
    def is_open(self) -> bool:
        return self.mapping is not None and self.mapping.is_open

    @staticmethod
    def _action_html(name: str, form: dict | None, action: str, param: str, value, text: str) -> SafeString | str:
        """A row's propose or reject control: the form when it came back refused, else the link that
        opens it; nothing without an action (the user may not do it). Made here, not in
        `_pair_row.html`: one value per row costs a fraction of the template's lookups."""
        if form is not None:
            return render_to_string(f"reconcile/row_action.html#{name}-form", {name: form, "csrf_input": form["csrf"]})
        if not action:
            return ""
        return _opener(f"{action}{'&' if '?' in action else '?'}{param}={value}", text)

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
            left, right = self.diff or _diff(record.text, canonical.text)
        else:
            left = record.text if record is not None else ""
            right = canonical.text if canonical is not None else ""
        row = {
            "dom_id": self.dom_id,
            "css": f"state-{m.state if m else 'unmapped'}" + (" conflict" if self.conflict else ""),
            "source": self.source,
            "label": record.label if record is not None else "",
            "record": record is not None,
            "left": left,
            "mapping": m is not None,
            "message": self.message,
            "message_class": self.message_class,
            "kind": self.kind,
            "oob": self.oob,
            "propose_html": self._action_html("propose", self.propose_form, self.propose_action, "row", self.dom_id,
                                              f"Propose {'another' if m else 'a'} mapping…"),
            "propose_message": self.propose_message,
            "propose_message_class": self.propose_message_class,
        }
        if m is None:
            return row
        if canonical is not None:
            side = "canonical"
        elif m.relation == Mapping.Relation.NEW:
            # An open new mapping shows what it would allocate; a rejected one allocated nothing.
            side = "new" if m.is_open else "not-entered"
        elif m.relation == Mapping.Relation.NO_COUNTERPART:
            side = "none"
        else:
            side = "missing"
        decided = ""
        if m.decided_by:
            # A stale mapping keeps who decided it last; the change that made it stale was not theirs.
            stale = m.state == Mapping.State.STALE
            decided = f"{'decided' if stale else m.state} by {m.decided_by}"
            if m.decided_at:
                decided += f", {format_date(template_localtime(m.decided_at), 'Y-m-d H:i')}"
            if m.rationale:
                decided += f": “{m.rationale}”"
            if stale:
                decided += "; the record or its target changed since: decide again"
        is_open = m.is_open
        canonical_rejected = canonical is not None and canonical.state == CanonicalRecord.State.REJECTED
        row.update({
            "side": side,
            "relation": m.relation,
            "mapping_pk": m.pk,
            "canonical_id": canonical.canonical_id if canonical is not None else "",
            "canonical_label": canonical.label if canonical is not None else "",
            "canonical_rejected": canonical_rejected,
            "canonical_rationale": canonical.rationale if canonical_rejected else "",
            "reject_html": self._action_html("reject", self.reject_form, self.reject_action, "mapping", m.pk,
                                             f"Reject {canonical.canonical_id}…")
            if canonical is not None and not canonical_rejected else "",
            "canonical_message": self.canonical_message,
            "canonical_message_class": self.canonical_message_class,
            "right": right,
            "would_be": self.would_be,
            "via": self.via,
            "settled": self.settled,
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


@dataclass
class AmendmentRow:
    """An `Amendment:` or `Unresolved conflict:` paragraph of a current member version and its decision."""

    amendment: AmendmentDecision
    message: str = ""
    message_class: str = ""
    action: str = ""
    oob: bool = False

    @property
    def dom_id(self) -> str:
        return f"amendment-{self.amendment.pk}"

    @property
    def is_open(self) -> bool:
        return self.amendment.is_open

    @property
    def label(self) -> str:
        return self.amendment.label

    @property
    def supersession(self) -> str:
        """The supersedes mapping that decides this amendment, in words ('' when it has none)."""
        return str(self.amendment.mapping) if self.amendment.mapping_id else ""


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
    """key → the URL of an item's action (decide, reject, propose), reversed once per page, not per row."""
    head, tail = reverse(url_name, args=[run.run_id, 0]).rsplit("/0/", 1)
    suffix = f"/{tail}" + (f"?{query}" if query else "")
    return lambda pk: f"{head}/{pk}{suffix}"


def _opener(url: str, text: str) -> SafeString:
    """The link that opens a row's form in place (htmx), or on a page of its own without JavaScript.
    Made here rather than in `_pair_row.html`: one value per row costs a fraction of the template's lookups."""
    return format_html('<a class="row-action" href="{0}" hx-get="{0}" hx-target="this" hx-swap="outerHTML">{1}</a>', url, text)


def _relation_select(selected: str = "") -> SafeString:
    """The relation <select> of the propose form: rendered once per response, or per row after a refusal."""
    options = "".join(
        format_html('<option{}>{}</option>', mark_safe(" selected") if value == selected else "", value)
        for value, _ in ProposeForm.RELATIONS
    )
    return format_html('<select name="relation">{}</select>', mark_safe(options))  # noqa: S308 — built by format_html


def _csrf_input(request) -> SafeString:
    """The hidden CSRF field of every row's form, rendered once per response: `{% csrf_token %}`
    in the row template cost 20 µs a row, a fifth of the row's rendering."""
    return format_html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', get_token(request))


def _would_be_id(mapping: Mapping) -> str:
    """The canonical ID accepting an open `new` mapping would allocate (DESIGN.md §2), when the row can
    know it: an explicit target, or the slug ID the record keeps. A numbered record gets the next free
    number of its kind when it is accepted, in the order accepts come, so no row can promise one: ""."""
    if mapping.target:
        return mapping.target
    parsed = parse_id(mapping.source)
    if parsed is None or parsed[2].isdigit():
        return ""
    return mapping.source


def _settled(mapping: Mapping, disposition) -> str:
    """What a decided row means for its record, from the record's one disposition."""
    if disposition is None or mapping.state != Decidable.State.REJECTED:
        return ""
    if disposition.disposition == dispositions.REJECTED:
        return f"{mapping.source} has no place in the shared set: every mapping of it was rejected."
    if disposition.mapping is not None and disposition.mapping != mapping.pk:
        relation = ("is superseded by" if disposition.relation == "supersedes" else disposition.relation)
        return (f"Alternative not taken: {mapping.source} {relation} {disposition.target}".rstrip()
                + " (accepted).")
    return ""


def _entered_as(standing: dispositions.Standing) -> dict[str, str]:
    """member record → the canonical record it is (an accepted same or new mapping)."""
    return {d.record: d.target for d in standing.dispositions
            if d.target and (d.disposition == dispositions.NEW or d.relation == Mapping.Relation.SAME)}


def _pair_row(record, mapping, canonicals, standing: dispositions.Standing, entered: dict[str, str]) -> PairRow:
    row = PairRow(record=record, mapping=mapping, canonical=None)
    if mapping is None:
        return row
    row.conflict = standing.conflict_of(mapping.pk)
    row.settled = _settled(mapping, standing.by_record.get(mapping.source))
    if mapping.relation == Mapping.Relation.NEW and not (mapping.target and mapping.target in canonicals):
        # A rejected or stale-but-unallocated new mapping allocates nothing: no would-be ID on it.
        row.would_be = _would_be_id(mapping) if mapping.is_open else ""
    elif mapping.target:
        row.canonical = canonicals.get(mapping.target)
        if row.canonical is None and mapping.target in entered:
            # The target is a member record that has entered the shared set since (EPI-OBJ-4 is
            # superseded by MEM-OBJ-2, and MEM-OBJ-2 was accepted as OBJ-8): show OBJ-8.
            row.via, row.canonical = mapping.target, canonicals.get(entered[mapping.target])
    return row


def _current_mappings(run: Run):
    return (Mapping.objects.filter(run=run)
            .annotate(member_role=F("source_record__member_version__member__role"))
            .order_by("source", "id"))


def _canonicals(run: Run) -> dict[str, CanonicalRecord]:
    return {c.canonical_id: c for c in CanonicalRecord.objects.filter(run=run).only(*CANONICAL_COLUMNS)}


def _progress(run: Run) -> dict:
    """The page's counters of what is left to decide, flattened from services.decision_progress."""
    progress = services.decision_progress(run)
    mappings, issues, amendments = progress["mappings"], progress["issues"], progress["amendments"]
    return {
        "amendments_undecided": amendments["undecided"],
        "amendments_total": amendments["total"],
        "mappings_undecided": mappings["undecided"],
        "mappings_stale": mappings["stale"],
        "mappings_total": mappings["total"],
        "issues_undecided": issues["undecided"],
        "issues_total": issues["total"],
    }


def _standing_for(request, run: Run) -> dispositions.Standing:
    """The run's standing, read once per response: the rows, the out-of-band rows and the blockers of
    one answer to a decision all show the same state (read after the decision's service returned)."""
    cached = getattr(request, "_reconcile_standing", None)
    if cached is None or cached[0] != run.pk:
        cached = (run.pk, run_standing(run))
        request._reconcile_standing = cached
    return cached[1]


def _controls(request, run: Run) -> dict:
    """Which controls the page offers: only what the user may do, and nothing on a final run, whose
    decisions are closed for good (DESIGN §3; the services refuse it too, 409 run_final)."""
    final = run.status == Run.Status.FINAL
    return {"can_decide": not final and has_any_role(request.user, DECIDE),
            "can_propose": not final and has_any_role(request.user, PROPOSE),
            "can_revise": final and has_any_role(request.user, DECIDE), "final": final_notice(run)}


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
    pickable = [m for m in members if m.role not in services.SEEDING_ROLES and m.declarations]
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
    standing = run_standing(run)
    builder = _RowBuilder(canonicals=canonicals, standing=standing, run=run, query=_kept_query(request.GET),
                          user=request.user)

    by_source: dict[str, list[Mapping]] = defaultdict(list)
    for m in mappings:
        by_source[m.source].append(m)
    rows = []
    for record in records:
        rows.extend(builder.rows(record, by_source.get(record.record_id, ())))
    if current == STATEMENTS:
        rows.extend(row for mapping in unattached for row in builder.rows(None, [mapping])
                    if not kind or row.kind == kind)
    if show == "undecided":
        rows = [r for r in rows if r.mapping is None or r.is_open]
    elif show == "stale":
        rows = [r for r in rows if r.mapping is not None and r.mapping.state == Decidable.State.STALE]
    elif show == "conflicts":
        rows = [r for r in rows if r.conflict]

    issues_scope = filters.value("issues")
    kinds_present = sorted({c.kind for c in canonicals.values() if c.state == CanonicalRecord.State.ACTIVE})
    shown, more = _rows_page(rows, request.GET.get("offset"))
    diffs = stored_diffs([(r.record.text, r.canonical.text) for r in shown
                          if r.record is not None and r.canonical is not None], _diff)
    for r in shown:
        if r.record is not None and r.canonical is not None:
            r.diff = diffs.get((r.record.text, r.canonical.text))
    return {
        "run": run,
        "members": pickable,
        "selected": selected,
        "current": current,
        "statements": STATEMENTS,
        "unattached_count": len(unattached),
        "kind": kind,
        "show": show,
        "issues_scope": issues_scope,
        "kinds": [k for k, _ in filters.fields["kind"].choices if k],
        "shows": [s for s, _ in PageFilterForm.SHOW],
        # One page of rows (the word diffs of those rows only); the rest arrive as the reviewer
        # scrolls or presses j past the last row (`more`: htmx, or a plain link without JavaScript).
        "rows": _grouped([row.display() for row in shown]),
        "more": more | {"url": _page_url(run, {name: request.GET.get(name, "") for name in KEPT_FILTERS}
                                         | {"member": current, "offset": more["offset"]})} if more else None,
        "rows_total": len(rows),
        **_issues_panel(request, run, members, selected, issues_scope),
        "amendment_rows": _amendment_rows(request, run, services.current_amendment_decisions(run)),
        "targets_by_kind": _targets_by_kind(canonicals, kinds_present),
        "progress": _progress(run),
        **_controls(request, run),
        **blockers_context(run, standing),
        "csrf_input": _csrf_input(request),
        "query": builder.query,
        "bulk_form": BulkAcceptForm(initial={"min_score": 0.9}),
    }


class _RowBuilder:
    """Makes the rows of one member record from data read up front (no query per row)."""

    def __init__(self, *, run: Run, canonicals, standing: dispositions.Standing, query: str, user):
        self.canonicals, self.standing, self.query = canonicals, standing, query
        self.entered = _entered_as(standing)
        self.mapping_action = _actions(run, "reconcile-decide-mapping", query)
        # Rows offer only what the user may do (the views check it again); a final run offers nothing.
        open_run = run.status != Run.Status.FINAL
        self.reject_action = (_actions(run, "reconcile-reject-canonical", query)
                              if open_run and has_any_role(user, DECIDE) else None)
        self.propose_action = (_actions(run, "reconcile-propose-mapping", query)
                               if open_run and has_any_role(user, PROPOSE) else None)

    def rows(self, record: Record | None, mappings) -> list[PairRow]:
        rows = []
        for mapping in mappings or [None]:
            row = _pair_row(record, mapping, self.canonicals, self.standing, self.entered)
            if self.propose_action:
                row.propose_action = self.propose_action(row.source)
            if mapping is not None:
                row.action = self.mapping_action(mapping.pk)
            if row.canonical is not None and self.reject_action:
                row.reject_action = self.reject_action(row.canonical.pk)
            rows.append(row)
        return rows


PAGE_ROWS = 60


def _rows_page(rows: list, offset: str | None) -> tuple[list, dict | None]:
    """The rows from `offset` (a row index) for about PAGE_ROWS rows, never splitting one member record's
    rows across pages; and where the next page starts ({"offset", "left"}), or None at the end."""
    start = int(offset) if offset and offset.isdigit() else 0
    start = min(start, len(rows))
    end = min(start + PAGE_ROWS, len(rows))
    while 0 < end < len(rows) and rows[end].source == rows[end - 1].source:
        end += 1
    return rows[start:end], ({"offset": end, "left": len(rows) - end} if end < len(rows) else None)


def _grouped(rows: list[dict]) -> list[dict]:
    """The rows, each member record's consecutive rows wrapped in one `.record-rows` element (which
    the propose form re-renders): the first row opens it, the last closes it. Flags on flat rows
    rather than a nested loop, which cost a tenth of a 2,000-row page."""
    for n, row in enumerate(rows):
        first = n == 0 or rows[n - 1]["source"] != row["source"]
        last = n == len(rows) - 1 or rows[n + 1]["source"] != row["source"]
        row["open"] = format_html('<div id="rows-{}" class="record-rows">', row["source"]) if first else ""
        row["close"] = mark_safe("</div>") if last else ""
    return rows


def _amendment_rows(request, run: Run, decisions) -> list[AmendmentRow]:
    """Rows of the given amendment decisions, in one query (the supersedes mapping joined in)."""
    decisions = (decisions.annotate(member_role=F("member_version__member__role"))
                 .select_related("mapping").defer("mapping__reason")
                 .order_by("member_role", "index"))
    action = _actions(run, "reconcile-decide-amendment", _kept_query(request.GET))
    return [AmendmentRow(amendment=a, action=action(a.pk)) for a in decisions]


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
    issue_action = _actions(run, "reconcile-decide-issue", _kept_query(request.GET))
    kept = {name: request.GET.get(name, "") for name in KEPT_FILTERS}
    return {
        "issue_rows": [IssueRow(issue=i, decision=_decision_of(i), member_role=i.member_role,
                                action=issue_action(i.pk)) for i in issues],
        "issues_member": scoped.role if scoped else "",
        "issues_total": sum(per_version.values()),
        "issues_of_selected": per_version.get(selected.current_version_id, 0) if selected else 0,
        "issues_all_url": _page_url(run, kept | {"issues": "all"}) + "#issues",
        "issues_member_url": _page_url(run, kept | {"issues": ""}) + "#issues",
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
    """run pk → decided and total mappings, issues and amendments, in three grouped queries for any
    number of runs.

    Issues and amendments count as in `services.current_issue_decisions` and
    `services.current_amendment_decisions`: only those of each member's current version.
    """
    decided = Q(state__in=(Decidable.State.ACCEPTED, Decidable.State.REJECTED, AmendmentDecision.State.CARRIED))
    counts = {"total": Count("id"), "decided": Count("id", filter=decided),
              "stale": Count("id", filter=Q(state=Decidable.State.STALE))}

    def grouped(queryset):
        return {row["run_id"]: row for row in queryset.values("run_id").annotate(**counts).order_by()}

    mappings = grouped(Mapping.objects.filter(run_id__in=run_ids))
    issues = grouped(IssueDecision.objects.filter(
        run_id__in=run_ids, issue__member_version__member__current_version=F("issue__member_version")))
    amendments = grouped(AmendmentDecision.objects.filter(
        run_id__in=run_ids, member_version__member__current_version=F("member_version")))
    empty = {"total": 0, "decided": 0, "stale": 0}
    progress = {}
    for run_id in run_ids:
        m, i, a = mappings.get(run_id, empty), issues.get(run_id, empty), amendments.get(run_id, empty)
        total = m["total"] + i["total"] + a["total"]
        done = m["decided"] + i["decided"] + a["decided"]
        progress[run_id] = {
            "mappings_decided": m["decided"], "mappings_total": m["total"],
            "issues_decided": i["decided"], "issues_total": i["total"],
            "amendments_decided": a["decided"], "amendments_total": a["total"],
            "stale": m["stale"] + i["stale"] + a["stale"], "decided": done, "total": total,
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
        runs = runs.filter(system__icontains=system)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    progress = _progress_by_run([run.pk for run in page])
    findings = validation_counts(page)
    return render(request, "reconcile/runs_list.html", {
        "page": page,
        "rows": [{"run": run, "progress": progress[run.pk], "findings": findings[run.pk]} for run in page],
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
def run_blockers(request, run_id: str):
    """Every blocker of a run in review, on a page of its own: the run page and the reconciliation page
    list the first few and link here for the rest (each links to its row)."""
    run = get_object_or_404(Run, run_id=run_id)
    check_role(request.user, READ_RUNS, run=run, action="read", actor=Actor.for_request(request))
    blockers = list(run_standing(run).blockers) if run.status == Run.Status.IN_REVIEW else []
    return render(request, "reconcile/blockers.html", {"run": run, "blockers": blockers, "blockers_more": 0,
                                                        "blockers_total": len(blockers)})


@login_required
@require_GET
def member_mappings(request, run_id: str, role: str):
    """How many mappings the member's current records have, by state, and their dispositions: the
    member page loads it (records does not import reconcile; its own count is of mapping statements)."""
    run = get_object_or_404(Run, run_id=run_id)
    check_role(request.user, READ_RUNS, run=run, action="read", actor=Actor.for_request(request))
    states = dict(Mapping.objects.filter(
        run=run, source_record__member_version__member__role=role,
        source_record__member_version__member__current_version=F("source_record__member_version"))
        .values_list("state").annotate(n=Count("id")).order_by())
    kinds = Counter(d.disposition for d in run_standing(run).dispositions if d.member == role)
    return render(request, "reconcile/_member_mappings.html", {
        "run": run, "role": role, "total": sum(states.values()),
        "states": [(state, states[state]) for state in Decidable.State.values if states.get(state)],
        "dispositions": [(name, kinds[name]) for name in dispositions.DISPOSITIONS if kinds.get(name)],
    })


@login_required
@require_GET
def run_reconcile(request, run_id: str):
    run = get_object_or_404(Run, run_id=run_id)
    check_role(request.user, READ_RUNS)
    filters = PageFilterForm(request.GET)
    context = _page_context(request, run, filters)
    if request.htmx and request.htmx.target == "pair-table":
        return render(request, "reconcile/run_reconcile.html#pair-table", context)
    if request.htmx and request.GET.get("offset"):  # the next page of rows, as the reviewer scrolls
        return render(request, "reconcile/run_reconcile.html#page-rows", context)
    return render(request, "reconcile/run_reconcile.html", context)


def _rows_of(request, run: Run, *, source: str = "", mapping_pks=()) -> list[PairRow]:
    """The rows of one member record (`source`) or of some mappings, built the way the page builds
    them: a few queries for the items asked for, not for the whole page."""
    wanted = list(_current_mappings(run).filter(Q(source=source) if source else Q(pk__in=mapping_pks)))
    sources = {m.source for m in wanted} | ({source} if source else set())
    standing = _standing_for(request, run)
    entered = _entered_as(standing)
    targets = {m.target for m in wanted if m.target}
    targets |= {entered[t] for t in targets if t in entered}
    records = {r.record_id: r for r in Record.objects.filter(
        run=run, record_id__in=sources, record_type=Record.Type.DECLARATION,
        member_version__member__current_version=F("member_version")).only(*RECORD_COLUMNS)}
    canonicals = {c.canonical_id: c for c in
                  CanonicalRecord.objects.filter(run=run, canonical_id__in=targets).only(*CANONICAL_COLUMNS)}
    builder = _RowBuilder(run=run, canonicals=canonicals, standing=standing, query=_kept_query(request.GET),
                          user=request.user)
    if source:
        return builder.rows(records.get(source), wanted) if wanted or source in records else []
    return [row for m in wanted for row in builder.rows(records.get(m.source), [m])]


def _mapping_row(request, run: Run, mapping: Mapping) -> PairRow:
    return _rows_of(request, run, mapping_pks=[mapping.pk])[0]


def _issue_row(decision: IssueDecision) -> IssueRow:
    issue = (IntegrationIssue.objects.annotate(member_role=F("member_version__member__role"))
             .select_related("decision").get(pk=decision.issue_id))
    return IssueRow(issue=issue, decision=_decision_of(issue), member_role=issue.member_role)


def _swap_context(request, run: Run) -> dict:
    """What every fragment answering a POST needs besides its rows; the counters go out of band."""
    query = _kept_query(request.GET)
    return {"run": run, "progress": _progress(run), **_controls(request, run),
            **blockers_context(run, _standing_for(request, run)),
            "csrf_input": _csrf_input(request), "query": query, "oob": True}


def _following_amendments(run: Run, mapping: Mapping):
    """The current amendments that a decision on `mapping` decides (a supersession follows its
    supersedes mappings): their rows in the amendments panel are redrawn beside the mapping's."""
    if mapping.relation != Mapping.Relation.SUPERSEDES or not mapping.origin_key:
        return AmendmentDecision.objects.none()
    candidates = (services.current_amendment_decisions(run).filter(kind=AmendmentDecision.Kind.AMENDMENT,
                                                                   text__contains=mapping.source)
                  .select_related("member_version__member")
                  .defer("member_version__content", "member_version__parsed", "member_version__front_matter"))
    pks = [a.pk for a in candidates if (mapping.origin, mapping.origin_key)
           in services.supersession_keys(a.member_version.member.role, a.kind, a.text)]
    return AmendmentDecision.objects.filter(pk__in=pks)


def _row_response(request, run: Run, partial: str, row, status: int, oob_rows=(), oob_pairs=()) -> HttpResponse:
    if partial == "issue-swap":
        row.action = _actions(run, "reconcile-decide-issue", _kept_query(request.GET))(row.issue.pk)
    context = _swap_context(request, run) | {"row": row.display() if partial == "pair-swap" else row,
                                             "oob_rows": oob_rows, "oob_pairs": oob_pairs}
    return render(request, f"reconcile/run_reconcile.html#{partial}", context, status=status)


@dataclass
class Outcome:
    """How one decision posted from a row went: the item as it now stands, the status and what to say."""

    item: Any
    status: int = 200
    message: str = ""
    message_class: str = ""

    @property
    def row_message(self) -> str:
        return self.message if self.status != 200 else ""  # success needs no words in the row


def _decide(form, item, decide: Callable[[dict], Any], describe: Callable[[Any, dict], str]) -> Outcome:
    """Run one decision service and report it the way every decision row does (400, 409 stale, 409 state)."""
    if not form.is_valid():
        return Outcome(item, 400, form.problem(), "error")
    try:
        item = decide(form.cleaned_data)
    except services.StaleVersion as stale:
        return Outcome(stale.current, 409, STALE_MESSAGE, "stale")
    except services.StateConflict as error:
        return Outcome(item, 409, str(error), "error")
    except services.ProposalError as error:
        return Outcome(item, 400, str(error), "error")
    return Outcome(item, 200, describe(item, form.cleaned_data), "ok")


def _redirect_after(request, run: Run, outcome: Outcome, anchor: str) -> HttpResponse:
    """Without htmx: POST/redirect/GET back to the row, with the outcome as a message."""
    messages.add_message(request, messages.SUCCESS if outcome.status == 200 else messages.ERROR, outcome.message)
    return redirect(_back_to_page(run, request, anchor))


@login_required
@require_POST
def decide_mapping(request, run_id: str, mapping_id: int):
    run = get_object_or_404(Run, run_id=run_id)
    actor = Actor.for_request(request)
    check_role(request.user, DECIDE, run=run, action="mapping.decide", actor=actor)
    mapping = get_object_or_404(Mapping, run=run, pk=mapping_id)
    outcome = _decide(
        DecisionForm(request.POST), mapping,
        lambda data: services.decide_mapping(
            mapping=mapping, decision=data["decision"], rationale=data["rationale"], actor=actor,
            expected_version=data["version"],
            target=(data["target"] or None) if data["decision"] == "accept" else None),
        lambda item, data: f"{data['decision'].capitalize()}ed {item}.",
    )
    mapping = outcome.item
    if not request.htmx:
        return _redirect_after(request, run, outcome, f"pair-{mapping.pk}")
    row = _mapping_row(request, run, mapping)
    row.message, row.message_class = outcome.row_message, outcome.message_class
    followers = _amendment_rows(request, run, _following_amendments(run, mapping)) if outcome.status == 200 else []
    for follower in followers:
        follower.oob = True
    affected = _affected_rows(request, run, mapping) if outcome.status == 200 else []
    return _row_response(request, run, "pair-swap", row, outcome.status, oob_rows=followers,
                         oob_pairs=affected)


def _affected_rows(request, run: Run, mapping: Mapping) -> list[dict]:
    """Rows of the page another decision on `mapping` changed: the other mappings of its record (an
    accepted one makes them alternatives), and the mappings that name its record or its target
    (a supersession onto MEM-OBJ-2 shows OBJ-8 once MEM-OBJ-2 is accepted as OBJ-8)."""
    names = [name for name in (mapping.source, mapping.target) if name]
    others = list(Mapping.objects.filter(run=run).filter(Q(source=mapping.source) | Q(target__in=names))
                  .exclude(pk=mapping.pk).only("pk", "source"))
    return _mapping_rows_on_page(request, run, others)


@login_required
@require_POST
def decide_issue(request, run_id: str, issue_id: int):
    run = get_object_or_404(Run, run_id=run_id)
    actor = Actor.for_request(request)
    check_role(request.user, DECIDE, run=run, action="issue.decide", actor=actor)
    decision = get_object_or_404(IssueDecision, run=run, issue_id=issue_id)
    outcome = _decide(
        DecisionForm(request.POST), decision,
        lambda data: services.decide_issue(
            issue_decision=decision, decision=data["decision"], rationale=data["rationale"], actor=actor,
            expected_version=data["version"]),
        lambda item, data: f"Integration issue {item.issue_id}: {item.state}.",
    )
    if not request.htmx:
        return _redirect_after(request, run, outcome, f"issue-{outcome.item.issue_id}")
    row = _issue_row(outcome.item)
    row.message, row.message_class = outcome.row_message, outcome.message_class
    return _row_response(request, run, "issue-swap", row, outcome.status)


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


def _proposal_words(mapping: Mapping) -> str:
    source, target = mapping.source, mapping.target
    if mapping.relation == Mapping.Relation.SAME:
        return f"{source} is the same as {target}"
    if mapping.relation == Mapping.Relation.PART_OF:
        return f"{source} is part of {target}"
    if mapping.relation == Mapping.Relation.NEW:
        return f"{source} enters the shared set as {target or 'a new record (ID allocated on accept)'}"
    if mapping.relation == Mapping.Relation.NO_COUNTERPART:
        return f"{source} has no counterpart in the shared set"
    return str(mapping)  # supersedes: "X is superseded by Y"


def _refresh_with(request, level: int, message: str) -> HttpResponse:
    """An answer for a row that cannot be drawn (a hand-made request): reload the page, message on top."""
    messages.add_message(request, level, message)
    return HttpResponseClientRefresh()


def _propose_form(request, run: Run, source: str, *, row: str, relation: str = "", target: str = "",
                  inline: bool = True) -> dict:
    """What `reconcile/row_action.html#propose-form` prints; `row` is the row it opens in."""
    parsed = parse_id(source)
    return {"action": _actions(run, "reconcile-propose-mapping", _kept_query(request.GET))(source),
            "source": source, "kind": parsed[1] if parsed else "", "select": _relation_select(relation),
            "target": target, "row": row, "inline": inline, "csrf": _csrf_input(request)}


def _reject_form(request, run: Run, record: CanonicalRecord, mapping_pk, *, inline: bool = True) -> dict:
    """What `reconcile/row_action.html#reject-form` prints."""
    return {"action": _actions(run, "reconcile-reject-canonical", _kept_query(request.GET))(record.pk),
            "canonical_id": record.canonical_id, "mapping": mapping_pk or "", "inline": inline,
            "csrf": _csrf_input(request)}


def _row_action_page(request, run: Run, context: dict) -> HttpResponse:
    """A row's form on its own: the htmx fragment that replaces the row's link, or (without
    JavaScript) a small page holding the form."""
    context = context | {"run": run, "csrf_input": _csrf_input(request), "back_url": _back_to_page(run, request)}
    if request.htmx:
        partial = "propose-form" if "propose" in context else "reject-form"
        return render(request, f"reconcile/row_action.html#{partial}", context)
    for form in ("propose", "reject"):
        if form in context:
            context[form]["inline"] = False
    return render(request, "reconcile/row_action.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def propose_mapping(request, run_id: str, source: str):
    """Another mapping for one member record (GET: the form); the record's rows come back with the new one."""
    run = get_object_or_404(Run, run_id=run_id)
    actor = Actor.for_request(request)
    check_role(request.user, PROPOSE, run=run, action="mapping.propose", actor=actor)
    if parse_id(source) is None:
        raise Http404(f"{source!r} is not a record ID")
    if request.method == "GET":
        kind = parse_id(source)[1]
        targets = _targets_by_kind(_canonicals(run), [kind])[kind]
        row = request.GET.get("row", "")
        return _row_action_page(request, run, {"propose": _propose_form(request, run, source, row=row),
                                               "source": source, "targets": targets})
    form = ProposeForm(request.POST)
    status, message, message_class, mapping = 200, "", "", None
    if not form.is_valid():
        status, message, message_class = 400, form.problem(), "error"
    else:
        try:
            mapping, created = services.propose_mapping(run=run, source=source, relation=form.cleaned_data["relation"],
                                                        target=form.cleaned_data["target"] or None, actor=actor)
            words = _proposal_words(mapping)
            message = f"Proposed: {words}." if created else f"Already proposed and still open: {words}."
            message_class = "ok"
        except services.StateConflict as error:
            status, message, message_class = 409, str(error), "error"
        except services.ProposalError as error:
            status, message, message_class = 400, str(error), "error"
    if not request.htmx:
        messages.add_message(request, messages.SUCCESS if status == 200 else messages.ERROR, message)
        return redirect(_back_to_page(run, request, f"rows-{source}"))
    rows = _rows_of(request, run, source=source)
    if not rows:
        return _refresh_with(request, messages.ERROR, message)
    # The message goes to the new mapping's row, or after a refusal to the row the form was opened in.
    at = f"pair-{mapping.pk}" if mapping is not None else request.POST.get("row", "")
    row = next((r for r in rows if r.dom_id == at), rows[0])
    row.propose_message, row.propose_message_class = message, message_class
    if mapping is None:
        row.propose_form = _propose_form(request, run, source, row=row.dom_id, relation=request.POST.get("relation", ""),
                                         target=request.POST.get("target", ""))
    return render(request, "reconcile/run_reconcile.html#record-swap",
                  _swap_context(request, run) | {"rows": _grouped([r.display() for r in rows])}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def reject_canonical(request, run_id: str, canonical_id: int):
    """Take a canonical record out of the shared set (GET: the form), from a row that shows it; every
    row of the same member pointing at it is redrawn out of band."""
    run = get_object_or_404(Run, run_id=run_id)
    actor = Actor.for_request(request)
    check_role(request.user, DECIDE, run=run, action="canonical.reject", actor=actor)
    record = get_object_or_404(CanonicalRecord, run=run, pk=canonical_id)
    form = RejectCanonicalForm(request.POST if request.method == "POST" else None)
    if request.method == "GET":
        mapping_pk = request.GET.get("mapping", "")
        return _row_action_page(request, run, {"reject": _reject_form(
            request, run, record, mapping_pk if mapping_pk.isdigit() else ""), "record": record})
    status, message = 200, ""
    if not form.is_valid():
        status, message = 400, form.problem()
    else:
        try:
            record = services.reject_canonical_record(record=record, rationale=form.cleaned_data["rationale"],
                                                      actor=actor)
            message = f"Rejected {record.canonical_id}: it is out of the shared set."
        except services.StateConflict as error:
            status, message = 409, str(error)
        except services.ProposalError as error:
            status, message = 400, str(error)
    mapping_pk = form.cleaned_data.get("mapping")
    if not request.htmx:
        messages.add_message(request, messages.SUCCESS if status == 200 else messages.ERROR, message)
        return redirect(_back_to_page(run, request, f"pair-{mapping_pk}" if mapping_pk else ""))
    mapping = Mapping.objects.filter(run=run, pk=mapping_pk, target=record.canonical_id).first() if mapping_pk else None
    if mapping is None:
        return _refresh_with(request, messages.SUCCESS if status == 200 else messages.ERROR, message)
    # The other rows on the same page: mappings onto this record whose source is a record of the same
    # member version (or, for mapping statements, that have none).
    same_page = Mapping.objects.filter(run=run, target=record.canonical_id).exclude(pk=mapping.pk)
    if mapping.source_record_id:
        same_page = same_page.filter(source_record__member_version__records=mapping.source_record_id)
    else:
        same_page = same_page.filter(source_record__isnull=True)
    rows = _rows_of(request, run, mapping_pks=[mapping.pk, *same_page.values_list("pk", flat=True)])
    row = next(r for r in rows if r.mapping.pk == mapping.pk)
    if status != 200:
        row.canonical_message, row.canonical_message_class = message, "error"
        if status == 400:
            row.reject_form = _reject_form(request, run, record, mapping.pk)
    others = [r for r in rows if r is not row]
    for other in others:
        other.oob = True
    context = _swap_context(request, run) | {"row": row.display(), "oob_rows": [r.display() for r in others]}
    return render(request, "reconcile/run_reconcile.html#canonical-swap", context, status=status)


def _shown_member(request, run: Run) -> str:
    """The picker entry the page that sent a request shows (its `member`, or the page's default)."""
    pickable = [m.role for m in _members(run) if m.role not in services.SEEDING_ROLES and m.declarations]
    if Mapping.objects.filter(run=run, source_record__isnull=True).exists():
        pickable.append(STATEMENTS)
    wanted = request.GET.get("member", "")
    return wanted if wanted in pickable else (pickable[0] if pickable else "")


def _mapping_rows_on_page(request, run: Run, mappings: list[Mapping]) -> list[dict]:
    """Rows of `mappings` that the page which sent the request shows, to redraw out of band there
    (an out-of-band swap whose row is not on the page would be an error in the browser)."""
    if not mappings:
        return []
    shown, kind = _shown_member(request, run), request.GET.get("kind", "")
    roles = dict(_current_mappings(run).filter(pk__in=[m.pk for m in mappings]).values_list("pk", "member_role"))
    on_page = [m.pk for m in mappings if (roles.get(m.pk) or STATEMENTS) == shown
               and (not kind or (parse_id(m.source) or ("", ""))[1] == kind)]
    rows = _rows_of(request, run, mapping_pks=on_page) if on_page else []
    for row in rows:
        row.oob = True
    return [row.display() for row in rows]


@login_required
@require_POST
def decide_amendment(request, run_id: str, amendment_id: int):
    """Accept, reject, carry into the Limitations, or reopen an amendment or unresolved conflict. A
    supersession is decided through its mappings: their rows on the page are redrawn too."""
    run = get_object_or_404(Run, run_id=run_id)
    actor = Actor.for_request(request)
    check_role(request.user, DECIDE, run=run, action="amendment.decide", actor=actor)
    amendment = get_object_or_404(AmendmentDecision, run=run, pk=amendment_id)
    outcome = _decide(
        AmendmentDecisionForm(request.POST), amendment,
        lambda data: services.decide_amendment(
            amendment=amendment, decision=data["decision"], rationale=data["rationale"], actor=actor,
            expected_version=data["version"]),
        lambda item, data: f"{item}: {item.state}.",
    )
    amendment = outcome.item
    if not request.htmx:
        return _redirect_after(request, run, outcome, f"amendment-{amendment.pk}")
    row = _amendment_rows(request, run, AmendmentDecision.objects.filter(pk=amendment.pk))[0]
    row.message, row.message_class = outcome.row_message, outcome.message_class
    linked = []
    keys = services.supersession_keys(amendment.member_version.member.role, amendment.kind, amendment.text)
    if outcome.status == 200 and keys:
        linked = list(Mapping.objects.filter(run=run, origin__in={o for o, _ in keys},
                                             origin_key__in={k for _, k in keys}))
    context = _swap_context(request, run) | {"row": row, "oob_rows": _mapping_rows_on_page(request, run, linked)}
    return render(request, "reconcile/run_reconcile.html#amendment-swap", context, status=outcome.status)

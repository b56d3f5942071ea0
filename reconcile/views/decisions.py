"""Decisions posted from a row of the reconciliation page (a mapping, an integration issue, an
amendment). With htmx the row comes back re-rendered from the same fragment
the first paint used, rows it changed out of band beside it, the counters updated; without, POST/redirect/GET."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import F, Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from records.ids import parse_id
from records.models import IntegrationIssue
from reviews.access import DECIDE, route_policy
from reviews.audit import Actor
from reviews.models import Run

from .. import selectors
from .. import services
from ..forms import AmendmentDecisionForm, DecisionForm
from ..models import AmendmentDecision, IssueDecision, Mapping
from ..passes.entering import decides_in_review_pass
from .context import STATEMENTS, back_to_page, kept_query, swap_context
from .rows import IssueRow, PairRow, actions_of, amendment_rows_of, rows_of


STALE_MESSAGE = ("This item changed since the page showed it (another decision, or a new member version); "
                 "here is its current state.")


def _mapping_row(request, run: Run, mapping: Mapping) -> PairRow:
    return rows_of(request, run, mapping_pks=[mapping.pk])[0]


def _issue_row(decision: IssueDecision) -> IssueRow:
    issue = (IntegrationIssue.objects.annotate(member_role=F("member_version__member__role"))
             .select_related("decision").get(pk=decision.issue_id))
    return IssueRow(issue=issue, decision=selectors.decision_of(issue), member_role=issue.member_role)


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
        row.action = actions_of(run, "reconcile-decide-issue", kept_query(request.GET))(row.issue.pk)
    context = swap_context(request, run) | {"row": row.display() if partial == "pair-swap" else row,
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
    return redirect(back_to_page(run, request, anchor))


@login_required
@require_POST
@decides_in_review_pass
@route_policy(DECIDE, action="mapping.decide")
def decide_mapping(request, run_id: str, mapping_id: int):
    run = request.run
    actor = Actor.for_request(request)
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
    followers = amendment_rows_of(request, run, _following_amendments(run, mapping)) if outcome.status == 200 else []
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
@decides_in_review_pass
@route_policy(DECIDE, action="issue.decide")
def decide_issue(request, run_id: str, issue_id: int):
    run = request.run
    actor = Actor.for_request(request)
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


def _shown_member(request, run: Run) -> str:
    """The picker entry the page that sent a request shows (its `member`, or the page's default)."""
    pickable = [m.role for m in selectors.members(run) if m.role not in services.SEEDING_ROLES and m.declarations]
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
    roles = dict(Mapping.objects.filter(run=run, pk__in=[m.pk for m in mappings])
                 .values_list("pk", "source_record__member_version__member__role"))
    on_page = [m.pk for m in mappings if (roles.get(m.pk) or STATEMENTS) == shown
               and (not kind or (parse_id(m.source) or ("", ""))[1] == kind)]
    rows = rows_of(request, run, mapping_pks=on_page) if on_page else []
    for row in rows:
        row.oob = True
    return [row.display() for row in rows]


@login_required
@require_POST
@decides_in_review_pass
@route_policy(DECIDE, action="amendment.decide")
def decide_amendment(request, run_id: str, amendment_id: int):
    """Accept, reject, carry into the Limitations, or reopen an amendment or unresolved conflict. A
    supersession is decided through its mappings: their rows on the page are redrawn too."""
    run = request.run
    actor = Actor.for_request(request)
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
    row = amendment_rows_of(request, run, AmendmentDecision.objects.filter(pk=amendment.pk))[0]
    row.message, row.message_class = outcome.row_message, outcome.message_class
    linked = []
    keys = services.supersession_keys(amendment.member_version.member.role, amendment.kind, amendment.text)
    if outcome.status == 200 and keys:
        linked = list(Mapping.objects.filter(run=run, origin__in={o for o, _ in keys},
                                             origin_key__in={k for _, k in keys}))
    context = swap_context(request, run) | {"row": row, "oob_rows": _mapping_rows_on_page(request, run, linked)}
    return render(request, "reconcile/run_reconcile.html#amendment-swap", context, status=outcome.status)

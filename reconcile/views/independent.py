"""Independent reviews in the browser (DESIGN §5): the run page's panel (how many reviews, the passes,
their agreement), "Submit my review" on the reconciliation page, and the adjudication page."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from reviews.access import DECIDE, has_any_role, may_adjudicate, route_policy, run_for
from reviews.audit import Actor
from reviews.models import MAX_REVIEWS_REQUIRED, Run
from reviews.services import ReviewsRequiredRefused, decisions_taken, set_reviews_required

from ..blind import consensus_made
from ..models import AmendmentDecision, Conflict, IssueDecision, Mapping, ReviewPass
from ..passes import consensus
from ..passes.agreement import agreement
from ..passes.entering import in_review_pass
from ..passes.listing import passes_for
from ..services import ProposalError, StateConflict


def review_banner(request, run: Run) -> dict:
    """The reconciliation page's line about the reviewer's own pass, when the run takes several reviews."""
    if run.reviews_required < 2:
        return {"review": None}
    # Each pass's `decisions` (one entry per item it decided: thousands on a large run) are not the banner's.
    passes = list(ReviewPass.objects.filter(run=run).select_related("reviewer").defer("decisions").order_by("number"))
    mine = next((p for p in passes if p.reviewer_id == request.user.pk), None)
    submitted = [p for p in passes if p.state == ReviewPass.State.SUBMITTED]
    return {"review": {
        "required": run.reviews_required, "mine": mine, "submitted": len(submitted),
        "complete": len(submitted) >= run.reviews_required, "consensus": consensus_made(run),
        "open_conflicts": Conflict.objects.filter(run=run, state=Conflict.State.OPEN).count(),
        "may_review": has_any_role(request.user, DECIDE),
        "taken": mine is None and len(passes) >= run.reviews_required,
    }}


def _panel_context(request, run: Run) -> dict:
    settable = (has_any_role(request.user, DECIDE) and run.status != Run.Status.FINAL
                and not decisions_taken(run))
    return {"run": run, "passes": passes_for(run, request.user), "agreement": agreement(run),
            "settable": settable, "choices": range(1, MAX_REVIEWS_REQUIRED + 1),
            "open_conflicts": Conflict.objects.filter(run=run, state=Conflict.State.OPEN).count(),
            "conflicts": Conflict.objects.filter(run=run).count()}


@login_required
@require_http_methods(["GET", "POST"])
@in_review_pass
@route_policy(DECIDE, action="run.reviews_required")
def run_reviews(request, run_id: str):
    """GET: the run page's independent reviews panel; POST `reviews_required`: change it (reviewer)."""
    if request.method == "POST":
        run = request.run
        try:
            set_reviews_required(run=run, count=int(request.POST.get("reviews_required", "")),
                                 actor=Actor.for_request(request))
        except (ValueError, ReviewsRequiredRefused) as error:
            messages.error(request, str(error) if isinstance(error, ReviewsRequiredRefused)
                           else "reviews_required: a whole number from 1 to 5")
        if not request.htmx:
            return redirect("run-detail", run_id=run.run_id)
    else:
        run = run_for(request, run_id)
    return render(request, "reconcile/_independent_reviews.html", _panel_context(request, run))


@login_required
@require_POST
@route_policy(DECIDE, action="pass.submit")
def submit_review(request, run_id: str):
    run = request.run
    try:
        submitted = consensus.submit_pass(run=run, reviewer=request.user, actor=Actor.for_request(request))
    except StateConflict as error:
        messages.error(request, error.message)
    else:
        done = ReviewPass.objects.filter(run=run, state=ReviewPass.State.SUBMITTED).count()
        messages.success(request, f"Your review (pass {submitted.number}) is submitted"
                         + (": the reviews are complete." if done >= run.reviews_required and consensus_made(run)
                            else ": the reviews are complete, and a worker is making their consensus."
                            if done >= run.reviews_required
                            else f"; {run.reviews_required - done} more to come."))
        if done >= run.reviews_required and Conflict.objects.filter(run=run).exists():
            return redirect("run-conflicts", run_id=run.run_id)
    return redirect("run-reconcile", run_id=run.run_id)


def _item_links(run: Run, conflicts: list[Conflict]) -> dict[tuple[str, str], str]:
    """Where each conflict's item is read on the reconciliation page (its member's page, at its row)."""
    base = reverse("run-reconcile", args=[run.run_id])
    def keys(model: str) -> list[int]:
        return [int(c.key) for c in conflicts if c.model == model]

    links = {}
    for m in Mapping.objects.filter(run=run, pk__in=keys("mapping"), source_record__isnull=False).values(
            "pk", "source_record__member_version__member__role"):
        links[("mapping", str(m["pk"]))] = (f"?member={m['source_record__member_version__member__role']}"
                                            f"#pair-{m['pk']}")
    for d in IssueDecision.objects.filter(run=run, pk__in=keys("issue")).values(
            "pk", "issue_id", "issue__member_version__member__role"):
        links[("issue", str(d["pk"]))] = f"?member={d['issue__member_version__member__role']}#issue-{d['issue_id']}"
    for a in AmendmentDecision.objects.filter(run=run, pk__in=keys("amendment")).values(
            "pk", "member_version__member__role"):
        links[("amendment", str(a["pk"]))] = f"?member={a['member_version__member__role']}#amendment-{a['pk']}"
    return {key: base + link for key, link in links.items()}


@login_required
@in_review_pass
def run_conflicts(request, run_id: str):
    """The adjudication page: each conflict with every pass's decision and rationale side by side."""
    run = run_for(request, run_id)
    conflicts = list(Conflict.objects.filter(run=run))
    links = _item_links(run, conflicts)
    for conflict in conflicts:
        conflict.choices = consensus.ADJUDICATIONS[conflict.model]
        conflict.link = links.get((conflict.model, conflict.key), "")
    authors = set(ReviewPass.objects.filter(run=run).values_list("reviewer__username", flat=True))
    can_settle = may_adjudicate(request.user) and request.user.get_username() not in authors
    return render(request, "reconcile/conflicts.html", {
        "run": run, "conflicts": conflicts, "agreement": agreement(run), "can_settle": can_settle,
        "wrote_one": request.user.get_username() in authors,
        "open_count": sum(1 for c in conflicts if c.state == Conflict.State.OPEN),
    })


@login_required
@require_POST
@route_policy(DECIDE, action="conflict.settle")
def settle_conflict(request, run_id: str, conflict_id: int):
    run = request.run
    conflict = get_object_or_404(Conflict, run=run, pk=conflict_id)
    try:
        consensus.settle_conflict(conflict=conflict, decision=request.POST.get("decision", ""),
                                  rationale=request.POST.get("rationale", ""), reviewer=request.user,
                                  actor=Actor.for_request(request),
                                  expected_version=int(request.POST.get("version") or 0) or None)
    except (StateConflict, ProposalError) as error:
        messages.error(request, f"{conflict.name}: {error.message}")
    else:
        messages.success(request, f"Settled: {conflict.name}.")
    return redirect(reverse("run-conflicts", args=[run.run_id]) + f"#conflict-{conflict.pk}")

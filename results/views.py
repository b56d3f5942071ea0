"""Reviewer pages for the final result and for approving, reopening and retrying (DESIGN §5, §7)."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reconcile import services as reconcile_services
from reconcile.models import CorrectionRequest
from reconcile.panels import blockers_context, final_notice
from reconcile.passes.entering import in_review_pass
from reviews.access import DECIDE, READ_RUNS, has_any_role, route_policy, run_for
from reviews.audit import Actor
from reviews.models import Run

from . import services
from .models import Result
from .summary import REVIEWERS_SECTIONS, section_links, summarize
from .toc import render_with_contents


def split_front_matter(markdown: str) -> tuple[str, str]:
    """(front matter text, body) of a result; the JSON front matter sits between two `---` lines."""
    if markdown.startswith("---\n"):
        end = markdown.find("\n---\n", 4)
        if end != -1:
            return markdown[4:end], markdown[end + 5:]
    return "", markdown


def approve_panel_context(request, run: Run) -> dict:
    """What `results/_approve_panel.html` needs; other pages merge it into theirs to include the panel."""
    failed_in_finalizing = services.finalization_failed(run)
    return {
        "run": run,
        "can_decide": has_any_role(request.user, DECIDE),
        **blockers_context(run),
        "final": final_notice(run),
        "can_revise": has_any_role(request.user, DECIDE),
        "approval": services.current_approval(run),
        "can_reopen": run.status == Run.Status.APPROVED or failed_in_finalizing,
        "can_retry": failed_in_finalizing,
        "has_result": Result.objects.filter(run=run).exists(),
        # Where the forms send the reviewer back: the page the panel sits on.
        "next": (request.htmx.current_url_abs_path or "") if request.htmx else request.get_full_path(),
    }


def _back(request, run: Run):
    """Back to the page the form was on (when it is ours), else the run page."""
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        target = reverse("run-detail", args=[run.run_id])
    return redirect(target)


@login_required
@require_GET
@in_review_pass
def result_detail(request, run_id: str):
    run = run_for(request, run_id, allowed=READ_RUNS, action="read result")
    result = Result.objects.filter(run=run).first()
    context = approve_panel_context(request, run) | {"result": result}
    if result is not None:
        front_matter, body = split_front_matter(result.markdown)
        # Headings get anchors and the reviewer's own sections, which result.md puts after the members'
        # prose (31,000 px down a 34,000 px page, issue 22), are shown first; the stored bytes do not change.
        html, contents = render_with_contents(body, first=REVIEWERS_SECTIONS)
        states = CorrectionRequest.objects.filter(run=run).values_list("state", flat=True)
        context |= {"front_matter": front_matter, "result_html": mark_safe(html),  # noqa: S308 — nh3-sanitised
                    "contents": contents, "links": section_links(contents), "summary": summarize(result.data, states),
                    "result_approval": result.approval}
    return render(request, "results/result_detail.html", context)


@login_required
@require_http_methods(["GET", "POST"])
@in_review_pass
@route_policy(DECIDE, action="approve")
def approve(request, run_id: str):
    """GET: the approval panel (for htmx or a plain include). POST: sign the run off."""
    if request.method == "GET":
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        return render(request, "results/_approve_panel.html", approve_panel_context(request, run))
    run = request.run
    try:
        services.approve_run(run=run, note=request.POST.get("note", ""), actor=Actor.for_request(request))
    except services.NoteRequired as error:
        messages.error(request, f"Not approved: {error}")
    except services.ApprovalBlocked as error:
        count = len(error.reasons)
        messages.error(request, f"Not approved: {count} blocker{'s' if count != 1 else ''} (the list is on this page): "
                                + " ".join(error.reasons[:3]) + (" …" if count > 3 else ""))
    else:
        run.refresh_from_db(fields=["status"])
        if run.status == Run.Status.FINAL:
            messages.success(request, "Approved; the final result is ready.")
        else:
            messages.success(request, "Approved; a worker is rendering the final result.")
    return _back(request, run)


@login_required
@require_POST
@route_policy(DECIDE, action="reopen")
def reopen(request, run_id: str):
    run = request.run
    try:
        services.reopen_run(run=run, reason=request.POST.get("reason", ""), actor=Actor.for_request(request))
    except services.NoteRequired as error:
        messages.error(request, f"Not reopened: {error}")
    except services.ApprovalBlocked as error:
        messages.error(request, "Not reopened: " + " ".join(error.reasons))
    else:
        messages.success(request, "Reopened: the run is back in review and its approval withdrawn.")
    return _back(request, run)


@login_required
@require_POST
@route_policy(DECIDE, action="revise")
def revise(request, run_id: str):
    """Start the final run's successor and go to it."""
    run = request.run
    try:
        successor = reconcile_services.revise_run(run=run, actor=Actor.for_request(request), user=request.user)
    except reconcile_services.StateConflict as error:
        messages.error(request, f"Not revised: {error.message}")
        return redirect("run-detail", run.run_id)
    messages.success(request, f"{successor.run_id} revises {run.run_id}: same boundary, current member versions, "
                              f"decisions carried over. {run.run_id} and its result stay as they are.")
    return redirect("run-detail", successor.run_id)


@login_required
@require_POST
@route_policy(DECIDE, action="retry finalization")
def retry_finalize(request, run_id: str):
    run = request.run
    try:
        services.retry_finalize(run=run, actor=Actor.for_request(request))
    except services.ApprovalBlocked as error:
        messages.error(request, "Not retried: " + " ".join(error.reasons))
    else:
        messages.success(request, "Finalization queued again.")
    return _back(request, run)

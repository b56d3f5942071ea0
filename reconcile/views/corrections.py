"""Sending work back (DESIGN §5): the corrections page and panel, the forms that raise and settle
requests, and the diff of two member versions."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from records.models import MemberReport, Role
from reviews.access import (DECIDE, PROPOSE, READ_RUNS, RoutePolicy, has_any_role, route_policies, route_policy,
                             run_for)
from reviews.audit import Actor

from .. import services
from ..models import CorrectionRequest
from ..passes.entering import in_review_pass
from ..services import corrections
from ..diffs import NoSuchVersion, record_changes, version_diff, version_numbers, versions_to_compare
from .rows import word_diff_html

VERBS = {"resolve", "reopen", "withdraw", "reply"}
# Reviewers and admins reply on any run; an agent on the runs it is a participant of (DESIGN §9).
REPLY = RoutePolicy(PROPOSE, "correction.reply", participant=True)


def corrections_context(request, run, *, member: str = "") -> dict:
    """What `reconcile/_corrections.html` needs: the requests (of one member, or all) with their threads."""
    found = (CorrectionRequest.objects.filter(run=run).select_related("answered_in", "answered_against")
             .prefetch_related("replies").order_by("raised_at", "id"))
    if member:
        found = found.filter(member=member)
    members = list(MemberReport.objects.filter(run=run, current_version__isnull=False)
                   .order_by("role").values_list("role", flat=True))
    return {"run": run, "requests": list(found), "member": member, "members": members,
            "can_decide": has_any_role(request.user, DECIDE) and run.status not in services.LOCKED_STATUSES,
            "can_reply": REPLY.admits(request.user, run) and run.status not in services.LOCKED_STATUSES,
            "prefill": {"member": request.GET.get("member", member), "record": request.GET.get("record", ""),
                        "line": request.GET.get("line", "")},
            "actor_label": Actor.for_request(request).label}


@login_required
@require_http_methods(["GET", "POST"])
@in_review_pass
@route_policy(DECIDE, action="correction.request")
def run_corrections(request, run_id: str):
    """GET: the run's correction requests (the member page loads one member's as a fragment, `?member=`).
    POST: raise one (reviewer)."""
    if request.method == "GET":
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        member = request.GET.get("member", "")
        if member and member not in Role.values:
            raise Http404("no such member")
        context = corrections_context(request, run, member=member if request.htmx else "")
        template = "reconcile/corrections.html#corrections-list" if request.htmx else "reconcile/corrections.html"
        return render(request, template, context)
    run = request.run
    line = request.POST.get("line", "").strip()
    try:
        made = corrections.raise_correction(
            run=run, member=request.POST.get("member", ""), record_id=request.POST.get("record", ""),
            line=int(line) if line.isdigit() else None, text=request.POST.get("text", ""),
            actor=Actor.for_request(request))
    except (services.StateConflict, services.ProposalError) as error:
        messages.error(request, f"Not sent: {error.message}")
        return redirect(reverse("run-corrections", args=[run.run_id]) + "#raise")
    messages.success(request, f"Correction request #{made.pk} sent to the {made.member} analyst.")
    return redirect(reverse("run-corrections", args=[run.run_id]) + f"#correction-{made.pk}")


@login_required
@require_POST
@route_policies("verb", reply=REPLY,
                **{verb: RoutePolicy(DECIDE, f"correction.{verb}") for verb in sorted(VERBS - {"reply"})})
def correction_action(request, run_id: str, correction_id: int, verb: str):
    run = request.run
    item = get_object_or_404(CorrectionRequest, run=run, pk=correction_id)
    actor = Actor.for_request(request)
    version = request.POST.get("version", "")
    expected = int(version) if version.isdigit() else None
    try:
        if verb == "resolve":
            corrections.resolve_correction(request=item, actor=actor, expected_version=expected)
        elif verb == "reopen":
            corrections.reopen_correction(request=item, reason=request.POST.get("reason", ""), actor=actor,
                                          expected_version=expected)
        elif verb == "withdraw":
            corrections.withdraw_correction(request=item, reason=request.POST.get("reason", ""), actor=actor,
                                            expected_version=expected)
        else:
            corrections.reply_to_correction(request=item, text=request.POST.get("text", ""), actor=actor)
    except services.StaleVersion as error:
        messages.error(request, f"Not saved: request #{item.pk} changed meanwhile (it is {error.current.state} now); "
                                "here it is as it is.")
    except (services.StateConflict, services.ProposalError) as error:
        messages.error(request, f"Not saved: {error.message}")
    else:
        messages.success(request, {"resolve": f"Request #{item.pk} resolved.", "reopen": f"Request #{item.pk} reopened.",
                                   "withdraw": f"Request #{item.pk} withdrawn.", "reply": "Reply added."}[verb])
    if request.htmx:
        return render(request, "reconcile/corrections.html#corrections-list", corrections_context(request, run))
    return redirect(reverse("run-corrections", args=[run.run_id]) + f"#correction-{item.pk}")


@login_required
@require_GET
@in_review_pass
def member_diff(request, run_id: str, role: str):
    """Two versions of a member side by side: records added, removed and changed, findings, answers."""
    run = run_for(request, run_id, allowed=READ_RUNS, action="read")
    numbers = version_numbers(request.GET)
    try:
        old, new = versions_to_compare(get_object_or_404(MemberReport, run=run, role=role),
                                       numbers["from"], numbers["to"])
    except NoSuchVersion as missing:
        raise Http404(str(missing)) from None
    changes = record_changes(old, new)
    data = version_diff(run=run, old=old, new=new, changes=changes)
    changed = [(c, word_diff_html(c.old_label, c.new_label), word_diff_html(c.old_body, c.new_body))
               for c in changes]
    return render(request, "reconcile/member_diff.html", {"run": run, "role": role, "old": old, "new": new,
                                                          "diff": data, "changes": changed})

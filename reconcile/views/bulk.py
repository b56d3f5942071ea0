"""Bulk accept of the app's confident suggestions: a preview listing the rows, a confirmation, and an
undo of exactly those decisions as one step (DESIGN §5 "Words, not codes")."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from reviews.access import DECIDE, route_policy
from reviews.audit import Actor

from .. import services
from ..dispositions import mapping_name
from ..forms import BulkAcceptForm
from ..passes.entering import decides_in_review_pass
from .context import back_to_page

# How many names a message lists before it says how many more.
NAMED = 5


def undo_key(run) -> str:
    """Where the session keeps the reviewer's last bulk accept on `run`, for its Undo."""
    return f"bulk-accept:{run.run_id}"


def _names(mappings) -> str:
    names = [mapping_name(m.source, m.relation, m.target) for m in mappings]
    return ", ".join(names[:NAMED]) + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")


@login_required
@require_POST
@decides_in_review_pass
@route_policy(DECIDE, action="mapping.bulk_accept")
def bulk_accept(request, run_id: str):
    """Without `confirm`: the preview, how many and which rows it would accept. With it: accept exactly
    the previewed rows (those still open), and keep them in the session for the Undo."""
    run = request.run
    form = BulkAcceptForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Bulk accept needs a minimum score between 0 and 1.")
        return redirect(back_to_page(run, request))
    min_score = form.cleaned_data["min_score"]
    if not request.POST.get("confirm"):
        if run.status in services.LOCKED_STATUSES:
            # The same refusal the acceptance would give, before the reviewer checks a list for nothing.
            messages.error(request, f"run {run.run_id} is {run.status}: reopen it before changing its "
                                    f"reconciliation")
            return redirect(back_to_page(run, request))
        candidates = list(services.bulk_accept_candidates(run, min_score))
        rows = [{"pk": m.pk, "name": mapping_name(m.source, m.relation, m.target), "score": f"{m.score:.2f}",
                 "member": m.source_record.member_version.member.role if m.source_record else "statements",
                 "label": m.source_record.label if m.source_record else ""} for m in candidates]
        return render(request, "reconcile/bulk_preview.html", {
            "run": run, "rows": rows, "min_score": f"{min_score:.2f}", "rationale": form.cleaned_data["rationale"],
            "back": back_to_page(run, request), "query": request.GET.urlencode()})
    only = [int(pk) for pk in request.POST.getlist("mapping") if pk.isdigit()]
    try:
        accepted = services.bulk_accept(run=run, min_score=min_score, actor=Actor.for_request(request),
                                        rationale=form.rationale_or_default(), only=only)
    except (services.StateConflict, services.ProposalError) as error:
        messages.error(request, str(error))
        return redirect(back_to_page(run, request))
    count = len(accepted)
    if accepted:
        request.session[undo_key(run)] = {"decisions": [[m.pk, m.version] for m in accepted],
                                          "names": _names(accepted), "min_score": f"{min_score:.2f}"}
    skipped = len(only) - count
    messages.success(request, f"Accepted {count} suggestion{'s' if count != 1 else ''} scoring at least "
                              f"{min_score:.2f}" + (f": {_names(accepted)}" if accepted else "") + "."
                     + (f" {skipped} of the previewed rows had changed meanwhile and were left as they are."
                        if skipped > 0 else ""))
    return redirect(back_to_page(run, request))


@login_required
@require_POST
@decides_in_review_pass
@route_policy(DECIDE, action="mapping.bulk_accept")
def undo_bulk_accept(request, run_id: str):
    """Reopen exactly the decisions of the reviewer's last bulk accept on the run, as one step."""
    run = request.run
    last = request.session.get(undo_key(run))
    if not last:
        messages.error(request, "There is no bulk accept of yours on this run to undo.")
        return redirect(back_to_page(run, request))
    try:
        reopened = services.undo_bulk_accept(
            run=run, decisions=[(pk, version) for pk, version in last["decisions"]], actor=Actor.for_request(request),
            rationale=f"Undo of the bulk accept of suggestions scoring at least {last['min_score']}.")
    except services.StaleVersion as error:
        messages.error(request, f"Not undone: {error}. Reopen the others row by row.")
        request.session.pop(undo_key(run), None)
        return redirect(back_to_page(run, request))
    except services.StateConflict as error:
        messages.error(request, f"Not undone: {error}")
        return redirect(back_to_page(run, request))
    request.session.pop(undo_key(run), None)
    messages.success(request, f"Undone: reopened {len(reopened)} suggestion{'s' if len(reopened) != 1 else ''} "
                              f"({_names(reopened)}).")
    return redirect(back_to_page(run, request))

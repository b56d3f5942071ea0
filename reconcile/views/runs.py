"""The runs list with each run's decision progress, and the run-level summaries other pages show or
load: the decision progress, the blockers page, the member-mappings fragment of the member page."""
from __future__ import annotations

from collections import Counter
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, F, Q
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from records.run_findings import validation_counts
from reviews.access import READ_RUNS, check_role, run_for
from reviews.models import Run
from reviews.polling import poll

from .. import dispositions, selectors
from ..blockers import kept_for_head, kept_for_heads, kept_standing
from ..services import corrections
from .context import progress_of
from ..models import AmendmentDecision, Decidable, IssueDecision, Mapping
from ..passes.entering import in_review_pass


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
    pending = corrections.pending_counts(run_ids)
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
            "corrections_open": pending.get(run_id, {}).get("open", 0),
            "corrections_answered": pending.get(run_id, {}).get("answered", 0),
        }
    return progress


def _rows(runs: list[Run], progress: dict[int, dict]) -> dict[int, str]:
    """run pk → its row of the runs list, rendered."""
    findings = validation_counts(runs)
    return {run.pk: render_to_string("reconcile/_run_row.html", {"run": run, "p": progress[run.pk], "f": findings[run.pk]})
            for run in runs}


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
    # Each run's progress and row, made again only for a run whose chain head has moved: everything a row
    # shows (the run's fields, its validation, its decisions and corrections) changes with an event.
    progress = kept_for_heads(page, lambda moved: _progress_by_run([run.pk for run in moved]))
    rows = kept_for_heads(page, lambda moved: _rows(moved, progress), name="row")
    # The list refreshes itself while a listed run is in the pipeline or waits for a correction's answer.
    pending = any(run.status in (Run.Status.VALIDATING, Run.Status.FINALIZING) or progress[run.pk]["corrections_open"]
                  for run in page)
    live = poll(request, pending=pending, cap=30.0)
    kept = {k: v for k, v in request.GET.items() if k != "poll"}
    template = "reconcile/runs_list.html#runs-table" if request.htmx else "reconcile/runs_list.html"
    return render(request, template, {
        "poll": live,
        "poll_url": f"?{urlencode(dict(kept, poll=live['next']))}" if live else "",
        "page": page,
        "rows": [rows[run.pk] for run in page],
        "statuses": Run.Status.choices,
        "status": status,
        "system": system,
        "systems": Run.objects.order_by("system").values_list("system", flat=True).distinct(),
        "filter_query": urlencode({k: v for k, v in (("status", status), ("system", system)) if v}),
    })


@login_required
@require_GET
@in_review_pass
def run_decision_progress(request, run_id: str):
    """The run's decision progress alone: the run page loads it (records does not import reconcile)."""
    run = run_for(request, run_id, allowed=READ_RUNS, action="read")
    return render(request, "reconcile/_decision_progress.html", {"run": run, "p": _progress_by_run([run.pk])[run.pk]})


def counters_context(request, run: Run, *, kept: bool = False) -> dict:
    """The counters with their polling: on while the pipeline runs or a correction waits for its answer.
    `kept`: the counters of the run's chain head as `run` was read, computed once per process
    (`blockers.kept_for_head`), for a view that changes nothing."""
    pending = run.status == Run.Status.VALIDATING or selectors.awaits_answers(run)
    progress = kept_for_head(run, "progress", progress_of) if kept else progress_of(run)
    return {"run": run, "progress": progress, "poll": poll(request, pending=pending, cap=30.0)}


@login_required
@require_GET
@in_review_pass
def run_counters(request, run_id: str):
    """The reconciliation page's counters alone, polled while the run's pipeline runs or a correction
    request waits for its answer (a sync after validation moves them)."""
    run = run_for(request, run_id, allowed=READ_RUNS, action="read")
    return render(request, "reconcile/_counters.html", counters_context(request, run))


@login_required
@require_GET
@in_review_pass
def run_blockers(request, run_id: str):
    """Every blocker of a run in review, on a page of its own: the run page and the reconciliation page
    list the first few and link here for the rest (each links to its row)."""
    run = run_for(request, run_id, allowed=READ_RUNS, action="read")
    blockers = list(kept_standing(run).blockers) if run.status == Run.Status.IN_REVIEW else []
    return render(request, "reconcile/blockers.html", {"run": run, "blockers": blockers, "blockers_more": 0,
                                                        "blockers_total": len(blockers)})


@login_required
@require_GET
@in_review_pass
def member_mappings(request, run_id: str, role: str):
    """How many mappings the member's current records have, by state, and their dispositions: the
    member page loads it (records does not import reconcile; its own count is of mapping statements)."""
    run = run_for(request, run_id, allowed=READ_RUNS, action="read")
    states = dict(Mapping.objects.filter(
        run=run, source_record__member_version__member__role=role,
        source_record__member_version__member__current_version=F("source_record__member_version"))
        .values_list("state").annotate(n=Count("id")).order_by())
    kinds = Counter(d.disposition for d in kept_standing(run).dispositions if d.member == role)
    return render(request, "reconcile/_member_mappings.html", {
        "run": run, "role": role, "total": sum(states.values()),
        "states": [(state, states[state]) for state in Decidable.State.values if states.get(state)],
        "dispositions": [(name, kinds[name]) for name in dispositions.DISPOSITIONS if kinds.get(name)],
    })

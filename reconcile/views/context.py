"""What the reconciliation page and the fragments answering its POSTs share around their rows: the
filters a request carries back to the page, the member picker, the counters of what is left to decide, the
controls the user may use, the blockers and the CSRF input rendered once per response."""
from __future__ import annotations

from html import escape
from urllib.parse import urlencode

from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from reviews.access import DECIDE, PROPOSE, has_any_role
from reviews.models import Run

from .. import dispositions, services
from ..blockers import kept_for_head, kept_standing
from ..panels import blockers_context, final_notice


# The picker entry for mappings whose source is not a record of a current member version.
STATEMENTS = "statements"
# The page filters a decision form carries back to the page it came from.
KEPT_FILTERS = ("member", "kind", "show", "issues")


def csrf_input_tag(request) -> SafeString:
    """The hidden CSRF field of every row's form, rendered once per response: `{% csrf_token %}`
    in the row template cost 20 µs a row, a fifth of the row's rendering."""
    return format_html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', get_token(request))


def progress_of(run: Run) -> dict:
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


def _run_now(request, run: Run) -> Run:
    """`run` read again once per response, after the decision's service returned: its chain head names the
    state the answer shows."""
    now = getattr(request, "_reconcile_run_now", None)
    if now is None or now.pk != run.pk:
        now = request._reconcile_run_now = Run.objects.get(pk=run.pk)
    return now


def standing_for(request, run: Run) -> dispositions.Standing:
    """The run's standing, read once per response: the rows, the out-of-band rows and the blockers of
    one answer to a decision all show the same state (read after the decision's service returned). Kept
    for the chain head the decision left (`blockers.kept_standing`), so the page view that follows the
    answer reads it instead of building it again."""
    cached = getattr(request, "_reconcile_standing", None)
    if cached is None or cached[0] != run.pk:
        cached = (run.pk, kept_standing(_run_now(request, run)))
        request._reconcile_standing = cached
    return cached[1]


def controls_of(request, run: Run) -> dict:
    """Which controls the page offers: only what the user may do, and nothing on a final run, whose
    decisions are closed for good (DESIGN §3; the services refuse it too, 409 run_final)."""
    final = run.status == Run.Status.FINAL
    may_decide = not final and has_any_role(request.user, DECIDE)
    return {"can_decide": may_decide,
            # Each record row's "Request a correction": the corrections page's form, prefilled.
            "correction_base": (reverse("run-corrections", args=[run.run_id]) + "?"
                                + urlencode({"member": request.GET.get("member", "")}) + "&record=")
            if may_decide else "",
            "can_propose": not final and has_any_role(request.user, PROPOSE),
            "can_revise": final and has_any_role(request.user, DECIDE), "final": final_notice(run)}




def targets_by_kind(active, kinds: list[str]) -> dict[str, list[tuple[str, str]]]:
    """kind → [(canonical ID, label)] of the active canonical records (`selectors.active_targets`): a
    target choice names both."""
    targets = {k: [] for k in kinds}
    for canonical_id, kind, label in active:
        if kind in targets:
            targets[kind].append((canonical_id, label))
    return targets


def target_options(targets) -> SafeString:
    """The <option>s of a target field's datalist, from (canonical ID, label) pairs: the ID, and the label
    after a dash when there is one. Made here rather than in the templates: the page's datalists hold up
    to 50 options of each kind, and three template lookups per option were a fifth of what the page at
    2,000 records costs more than at 20."""
    return mark_safe("".join(  # noqa: S308 — each value escaped as the template engine would
        f'<option value="{escape(i)}">{escape(i)}{f" — {escape(label)}" if label else ""}</option>'
        for i, label in targets))


def kept_query(params) -> str:
    kept = {name: params.get(name) for name in KEPT_FILTERS if params.get(name)}
    return urlencode(kept)


def back_to_page(run: Run, request, anchor: str = "") -> str:
    url = reverse("run-reconcile", args=[run.run_id])
    query = kept_query(request.GET)
    return url + (f"?{query}" if query else "") + (f"#{anchor}" if anchor else "")


def swap_context(request, run: Run) -> dict:
    """What every fragment answering a POST needs besides its rows; the counters go out of band."""
    query = kept_query(request.GET)
    return {"run": run, "progress": kept_for_head(_run_now(request, run), "progress", progress_of),
            **controls_of(request, run),
            **blockers_context(run, standing_for(request, run)),
            "csrf_input": csrf_input_tag(request), "query": query, "oob": True}

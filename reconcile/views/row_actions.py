"""The forms a row opens in place (`reconcile/row_action.html`): propose another mapping for a member
record, reject a canonical record out of the shared set. Each answers GET with its form (a fragment with
htmx, a small page without JavaScript) and redraws the rows it changed after a POST."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django_htmx.http import HttpResponseClientRefresh
from django.urls import reverse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_http_methods

from records.ids import parse_id
from reviews.access import DECIDE, PROPOSE, route_policy
from reviews.audit import Actor
from reviews.models import Run

from .. import selectors
from .. import services
from ..dispositions import mapping_name
from ..forms import ProposeForm, RejectCanonicalForm
from ..models import CanonicalRecord, Mapping
from ..passes.entering import decides_in_review_pass, in_review_pass
from .context import back_to_page, csrf_input_tag, kept_query, swap_context, targets_by_kind, target_options
from .rows import actions_of, grouped, rows_of


def _relation_select(selected: str = "") -> SafeString:
    """The relation <select> of the propose form: rendered once per response, or per row after a refusal."""
    options = "".join(
        format_html('<option{}>{}</option>', mark_safe(" selected") if value == selected else "", value)
        for value, _ in ProposeForm.RELATIONS
    )
    return format_html('<select name="relation">{}</select>', mark_safe(options))  # noqa: S308 — built by format_html


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
    return {"action": actions_of(run, "reconcile-propose-mapping", kept_query(request.GET))(source),
            "source": source, "kind": parsed[1] if parsed else "", "select": _relation_select(relation),
            "target": target, "row": row, "inline": inline, "csrf": csrf_input_tag(request),
            "targets_url": reverse("run-reconcile-targets", args=[run.run_id])}


def _reject_form(request, run: Run, record: CanonicalRecord, mapping_pk, *, inline: bool = True) -> dict:
    """What `reconcile/row_action.html#reject-form` prints, with the warning that names the accepted
    decisions pointing at the record, before the rejection is saved (DESIGN §5)."""
    dependents = services.accepted_decisions_on(record)
    return {"action": actions_of(run, "reconcile-reject-canonical", kept_query(request.GET))(record.pk),
            "canonical_id": record.canonical_id, "mapping": mapping_pk or "", "inline": inline,
            "csrf": csrf_input_tag(request),
            "dependents": [mapping_name(m.source, m.relation, m.target) for m in dependents],
            "acknowledged": ",".join(str(m.pk) for m in dependents)}


def _row_action_page(request, run: Run, context: dict) -> HttpResponse:
    """A row's form on its own: the htmx fragment that replaces the row's link, or (without
    JavaScript) a small page holding the form."""
    context = context | {"run": run, "csrf_input": csrf_input_tag(request), "back_url": back_to_page(run, request)}
    if request.htmx:
        partial = "propose-form" if "propose" in context else "reject-form"
        return render(request, f"reconcile/row_action.html#{partial}", context)
    for form in ("propose", "reject"):
        if form in context:
            context[form]["inline"] = False
    return render(request, "reconcile/row_action.html", context)


@login_required
@require_http_methods(["GET", "POST"])
@in_review_pass
@route_policy(PROPOSE, action="mapping.propose", participant=True, form=True)
def propose_mapping(request, run_id: str, source: str):
    """Another mapping for one member record (GET: the form); the record's rows come back with the new one."""
    run = request.run
    actor = Actor.for_request(request)
    if parse_id(source) is None:
        raise Http404(f"{source!r} is not a record ID")
    if request.method == "GET":
        kind = parse_id(source)[1]
        targets = targets_by_kind(selectors.active_targets(run), [kind])[kind]
        row = request.GET.get("row", "")
        return _row_action_page(request, run, {"propose": _propose_form(request, run, source, row=row),
                                               "source": source, "target_options": target_options(targets)})
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
        return redirect(back_to_page(run, request, f"rows-{source}"))
    rows = rows_of(request, run, source=source)
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
                  swap_context(request, run) | {"rows": grouped([r.display() for r in rows])}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
@decides_in_review_pass
@route_policy(DECIDE, action="canonical.reject", form=True)
def reject_canonical(request, run_id: str, canonical_id: int):
    """Take a canonical record out of the shared set (GET: the form), from a row that shows it; every
    row of the same member pointing at it is redrawn out of band."""
    run = request.run
    actor = Actor.for_request(request)
    record = get_object_or_404(CanonicalRecord, run=run, pk=canonical_id)
    form = RejectCanonicalForm(request.POST if request.method == "POST" else None)
    if request.method == "GET":
        mapping_pk = request.GET.get("mapping", "")
        return _row_action_page(request, run, {"reject": _reject_form(
            request, run, record, mapping_pk if mapping_pk.isdigit() else ""), "record": record})
    status, message, warned = 200, "", False
    if not form.is_valid():
        status, message = 400, form.problem()
    else:
        try:
            record = services.reject_canonical_record(record=record, rationale=form.cleaned_data["rationale"],
                                                      actor=actor, acknowledged=form.acknowledged_pks())
            message = f"Rejected {record.canonical_id}: it is out of the shared set."
        except services.DecisionsPointAtIt as error:
            # Decisions the form did not warn about (made since it was shown): warn again, save nothing.
            status, message, warned = 409, str(error), True
            if not request.htmx:
                return _row_action_page(request, run, {"reject": _reject_form(
                    request, run, record, form.cleaned_data.get("mapping") or "", inline=False) | {
                    "message": message}, "record": record})
        except services.StateConflict as error:
            status, message = 409, str(error)
        except services.ProposalError as error:
            status, message = 400, str(error)
    mapping_pk = form.cleaned_data.get("mapping")
    if not request.htmx:
        messages.add_message(request, messages.SUCCESS if status == 200 else messages.ERROR, message)
        return redirect(back_to_page(run, request, f"pair-{mapping_pk}" if mapping_pk else ""))
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
    rows = rows_of(request, run, mapping_pks=[mapping.pk, *same_page.values_list("pk", flat=True)])
    row = next(r for r in rows if r.mapping.pk == mapping.pk)
    if status != 200:
        row.canonical_message, row.canonical_message_class = message, "error"
        if status == 400 or warned:
            row.reject_form = _reject_form(request, run, record, mapping.pk)
    others = [r for r in rows if r is not row]
    for other in others:
        other.oob = True
    context = swap_context(request, run) | {"row": row.display(), "oob_rows": [r.display() for r in others]}
    return render(request, "reconcile/run_reconcile.html#canonical-swap", context, status=status)

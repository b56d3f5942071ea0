"""The run page and the member page (DESIGN §5): members, hashes, pipeline progress, findings, records."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from reviews.access import run_for
from reviews.polling import poll, run_is_pending
from reviews.models import Run

from . import member_page, run_page, services
from .models import ImportedManifest, MemberReport, MemberVersion, Role
from .serializers import full_counts
from .templatetags.quotations import page_quotations

PIPELINE_STEPS = ("received", "parsing", "parsed", "validated")


def _pipeline(version: MemberVersion | None) -> list[dict]:
    status = version.status if version else ""
    reached = PIPELINE_STEPS.index(status) if status in PIPELINE_STEPS else -1
    if status == MemberVersion.Status.FAILED:
        reached = 1  # it failed while parsing
    return [{"name": step, "done": i <= reached, "current": i == reached} for i, step in enumerate(PIPELINE_STEPS)]


def pipeline_context(run: Run) -> dict:
    members = list(MemberReport.objects.filter(run=run).select_related("current_version")
                   .defer("current_version__content", "current_version__parsed").order_by("role"))
    rows = []
    for member in members:
        version = member.current_version
        rows.append({"member": member, "version": version, "counts": full_counts(version.counts if version else None),
                     "steps": _pipeline(version),
                     "failed": bool(version and version.status == MemberVersion.Status.FAILED)})
    busy = run.status == Run.Status.VALIDATING or any(
        row["version"] and row["version"].status not in (MemberVersion.Status.VALIDATED, MemberVersion.Status.FAILED)
        for row in rows)
    return {"run": run, "rows": rows, "polling": busy}


@login_required
@require_GET
def run_detail(request, run_id: str):
    run = run_for(request, run_id)
    context = pipeline_context(run)
    # The pipeline polls fast; a run that waits for answers to correction requests polls slowly.
    context["poll"] = poll(request, pending=context["polling"] or run_is_pending(run),
                           cap=5.0 if context["polling"] else 30.0)
    if request.htmx:
        return render(request, "records/run_detail.html#pipeline", context)
    validation = run_page.kept_validation(run)
    context |= {"report": validation.report, "finding_groups": validation.finding_groups,
                "quotation_summary": validation.quotations, "member_roles": Role.values,
                # Its fields alone: through `run.imported_manifest` a run without one paid a query and an exception.
                "imported_manifest": ImportedManifest.objects.filter(run=run).values_list("fields", flat=True).first()}
    return render(request, "records/run_detail.html", context)


FINDINGS_SHOWN = 200


@login_required
@require_GET
def member_detail(request, run_id: str, member_id: str):
    run = run_for(request, run_id)
    member = get_object_or_404(MemberReport, run=run, role=member_id)
    wanted = request.GET.get("version", "")
    shown = Q(version=int(wanted)) if wanted.isdigit() else Q(pk=member.current_version_id)
    # The shown version's text comes with the list, its head only (member_page.full_text).
    versions = list(member.versions.defer("content", "parsed").annotate(head=member_page.text_head(shown))
                    .order_by("version"))
    if wanted:
        version = next((v for v in versions if str(v.version) == wanted), None)
        if version is None:
            raise Http404(f"{member_id} has no version {wanted}")
    else:
        version = next((v for v in versions if v.pk == member.current_version_id), None)
    if version is None:
        raise Http404(f"{member_id} has no uploaded version")
    totals = member_page.kind_totals(version)
    start = member_page.start_ordinal(version, request.GET, totals)
    groups, following = member_page.records_page(version, start, totals)
    page_records = [entry["record"] for group in groups for entry in group.entries]
    base = reverse("member-detail", args=[run.run_id, member.role]) + (f"?version={wanted}&" if wanted else "?")
    context = {
        "run": run, "member": member, "version": version, "groups": groups,
        "quotation_index": page_quotations(run, page_records),
        "more": {"url": f"{base}from={following}",
                 "left": member_page.records_from(totals, following)} if following is not None else None,
    }
    if request.htmx and request.GET.get("from"):  # the next records, as the reviewer scrolls
        return render(request, "records/member_detail.html#page-records", context)
    report = services.latest_validation(run)
    findings = list(report.findings.filter(member_version=version).order_by("line", "code")[:FINDINGS_SHOWN + 1]
                    if report else [])
    issues = list(version.integration_issues.order_by("index"))
    paged = start > member_page.first_ordinal(totals) or following is not None
    return render(request, "records/member_detail.html", context | {
        "versions": versions, "kinds": member_page.kinds_nav(totals), "base": base, "paged": paged,
        "issues": issues, "findings": findings[:FINDINGS_SHOWN], "findings_more": len(findings) > FINDINGS_SHOWN,
        "full_text": member_page.full_text(version, request.GET, groups, paged=paged),
        # The parser's `mappings` are the mapping statements this report writes; the mappings of its
        # records (reconcile's) are loaded beside them on the page.
        "counts": [("mapping statements" if name == "mappings" else name.replace("_", " "), value)
                   for name, value in full_counts(version.counts).items()],
    })

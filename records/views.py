"""The run page and the member page (DESIGN §5): members, hashes, pipeline progress, findings, records."""
from __future__ import annotations

from collections import defaultdict

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from reviews.access import run_for
from reviews.polling import poll, run_is_pending
from reviews.models import Run

from . import services
from .finding_groups import group_findings
from .ids import KINDS
from .models import MemberReport, MemberVersion, Record, Role
from .serializers import full_counts
from .validation import KIND_HEADINGS

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
    report = services.latest_validation(run)
    findings = report.findings.only("code", "severity", "member", "record_id", "line", "message") if report else []
    context |= {"report": report, "finding_groups": group_findings(findings), "member_roles": Role.values}
    return render(request, "records/run_detail.html", context)


def _numbered(text: str, first: int) -> list[tuple[int, str]]:
    return [(first + i, line) for i, line in enumerate(text.splitlines())]


@login_required
@require_GET
def member_detail(request, run_id: str, member_id: str):
    run = run_for(request, run_id)
    member = get_object_or_404(MemberReport, run=run, role=member_id)
    versions = list(member.versions.defer("content", "parsed").order_by("version"))
    wanted = request.GET.get("version", "")
    if wanted:
        version = next((v for v in versions if str(v.version) == wanted), None)
        if version is None:
            raise Http404(f"{member_id} has no version {wanted}")
    else:
        version = next((v for v in versions if v.pk == member.current_version_id), None)
    if version is None:
        raise Http404(f"{member_id} has no uploaded version")
    records = list(Record.objects.filter(member_version=version).order_by("ordinal"))
    covered: set[int] = set()
    by_kind: dict[str, list] = defaultdict(list)
    annotations = []
    for record in records:
        entry = {"record": record, "lines": _numbered(record.text, record.line_start)}
        covered.update(n for n, _ in entry["lines"])
        if record.record_type == Record.Type.ANNOTATION:
            annotations.append(entry)
        else:
            by_kind[record.kind].append(entry)
    groups = [{"kind": kind, "name": KIND_HEADINGS[kind], "records": by_kind[kind]} for kind in KINDS if by_kind[kind]]
    groups += [{"kind": kind, "name": kind or "Other", "records": entries}
               for kind, entries in by_kind.items() if kind not in KINDS]
    content = bytes(MemberVersion.objects.values_list("content", flat=True).get(pk=version.pk))
    full_text = [(n, line, n not in covered) for n, line in _numbered(content.decode("utf-8"), 1)]
    report = services.latest_validation(run)
    findings = list(report.findings.filter(member_version=version).order_by("line", "code")) if report else []
    issues = list(version.integration_issues.order_by("index"))
    return render(request, "records/member_detail.html", {
        "run": run, "member": member, "version": version, "versions": versions, "groups": groups,
        "annotations": annotations, "issues": issues, "findings": findings, "full_text": full_text,
        # The parser's `mappings` are the mapping statements this report writes; the mappings of its
        # records (reconcile's) are loaded beside them on the page.
        "counts": [("mapping statements" if name == "mappings" else name.replace("_", " "), value)
                   for name, value in full_counts(version.counts).items()],
    })

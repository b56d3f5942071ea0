"""REST API for approval, the final result and the export bundle (DESIGN §4, §7): one view per operation."""
from __future__ import annotations

from django.http import HttpResponse, HttpResponseNotModified
from django.urls import reverse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from reconcile import services as reconcile_services
from records.api import BundleImportView
from reviews.access import DECIDE, READ_AUDIT, READ_RUNS, route_policy, run_for
from reviews.api_errors import ApiError, Conflict
from reviews.api_input import TextLimit
from reviews.audit import Actor
from reviews.models import AuditEvent
from reviews.withheld import PASS_DECIDED, withheld_events

from . import services
from .attestation import MEDIA_TYPE
from .models import Approval, Attestation, Result


class ApprovalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    note = serializers.CharField()
    approved_by = serializers.CharField()
    approved_at = serializers.DateTimeField()
    manifest_sha256 = serializers.CharField()
    withdrawn_at = serializers.DateTimeField(allow_null=True)
    withdrawn_reason = serializers.CharField(allow_blank=True)


class ApprovalReplySerializer(serializers.Serializer):
    run_id = serializers.CharField()
    status = serializers.CharField()
    approval = ApprovalSerializer()


class ApproveSerializer(serializers.Serializer):
    note = serializers.CharField(
        allow_blank=False, trim_whitespace=True, validators=[TextLimit()],
        help_text="What the reviewer checked and how; carried into the result's Semantic verification.",
    )


class ReopenSerializer(serializers.Serializer):
    reason = serializers.CharField(allow_blank=False, trim_whitespace=True, validators=[TextLimit()])


def approval_data(approval: Approval) -> dict:
    return {
        "id": approval.pk,
        "note": approval.note,
        "approved_by": approval.approved_by,
        "approved_at": approval.approved_at,
        "manifest_sha256": approval.manifest_sha256,
        "withdrawn_at": approval.withdrawn_at,
        "withdrawn_reason": approval.withdrawn_reason,
    }


def blocked(error: services.ApprovalBlocked, *, code: str) -> Conflict:
    """409 naming each blocker as `{code, record, message, link}` (approval's come from
    `reconcile.blockers`; a refused reopening or retry has one, about the run's state)."""
    items = [b.as_dict() for b in error.blockers] or [
        {"code": code, "record": "", "message": reason, "link": ""} for reason in error.reasons]
    code = error.code or code
    shown = " ".join(item["message"] for item in items[:5])
    return Conflict(shown + (f" (and {len(items) - 5} more)" if len(items) > 5 else ""), code=code,
                    details={"blockers": items})


class ReviseView(APIView):
    @extend_schema(summary="Revise a final run: the next run ID, same boundary, current members, decisions kept",
                   request=None, responses={201: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT})
    @route_policy(DECIDE, action="revise")
    def post(self, request, run_id: str):
        run = request.run
        try:
            successor = reconcile_services.revise_run(run=run, actor=Actor.for_request(request), user=request.user)
        except reconcile_services.StateConflict as error:
            raise Conflict(error.message, code=error.code, details={"status": run.status}) from None
        return Response({"run_id": successor.run_id, "status": successor.status, "revises": run.run_id,
                         "url": reverse("api-run-detail", args=[successor.run_id])}, status=status.HTTP_201_CREATED)


class NegotiationTolerant:
    """Views that answer with their own media type (Markdown, zip) whatever the Accept header asks;
    their errors still come back as JSON instead of a 406."""

    def perform_content_negotiation(self, request, force=False):
        return super().perform_content_negotiation(request, force=True)


def _result_for(request, run_id: str) -> Result:
    run = run_for(request, run_id, allowed=READ_RUNS, action="read result")
    result = Result.objects.filter(run=run).select_related("run").first()
    if result is None:
        raise ApiError(f"Run {run.run_id} has no final result yet (status: {run.status}).", code="no_result",
                       status_code=404, details={"status": run.status})
    return result


def _etag_matches(request, etag: str) -> bool:
    header = request.headers.get("If-None-Match", "")
    candidates = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    return etag in candidates or "*" in candidates


STATUS_REPLY = inline_serializer("RunStatusReply", {
    "run_id": serializers.CharField(), "status": serializers.CharField(),
    "status_reason": serializers.CharField(),
})


class ApproveView(APIView):
    @extend_schema(summary="Reviewer sign-off on the run's current manifest; queues finalization",
                   request=ApproveSerializer, responses={201: ApprovalReplySerializer, 409: OpenApiTypes.OBJECT})
    @route_policy(DECIDE, action="approve")
    def post(self, request, run_id: str):
        run = request.run
        serializer = ApproveSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            approval = services.approve_run(run=run, note=serializer.validated_data["note"],
                                            actor=Actor.for_request(request))
        except services.NoteRequired as error:
            raise ApiError(str(error), code="invalid", details={"field": "note"}) from None
        except services.ApprovalBlocked as error:
            raise blocked(error, code="approval_blocked") from None
        run.refresh_from_db(fields=["status", "status_reason"])
        return Response({"run_id": run.run_id, "status": run.status, "approval": approval_data(approval)},
                        status=status.HTTP_201_CREATED)


class ReopenView(APIView):
    @extend_schema(summary="Move an approved (not final) run back to review, with a reason",
                   request=ReopenSerializer, responses={200: STATUS_REPLY, 409: OpenApiTypes.OBJECT})
    @route_policy(DECIDE, action="reopen")
    def post(self, request, run_id: str):
        run = request.run
        serializer = ReopenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            run = services.reopen_run(run=run, reason=serializer.validated_data["reason"],
                                      actor=Actor.for_request(request))
        except services.NoteRequired as error:
            raise ApiError(str(error), code="invalid", details={"field": "reason"}) from None
        except services.ApprovalBlocked as error:
            raise blocked(error, code="invalid_state") from None
        return Response({"run_id": run.run_id, "status": run.status, "status_reason": run.status_reason})


class FinalizeRetryView(APIView):
    @extend_schema(summary="Retry a failed finalization (after the cause is fixed)", request=None,
                   responses={202: STATUS_REPLY, 409: OpenApiTypes.OBJECT})
    @route_policy(DECIDE, action="retry finalization")
    def post(self, request, run_id: str):
        run = request.run
        try:
            run = services.retry_finalize(run=run, actor=Actor.for_request(request))
        except services.ApprovalBlocked as error:
            raise blocked(error, code="invalid_state") from None
        run.refresh_from_db(fields=["status", "status_reason"])
        return Response({"run_id": run.run_id, "status": run.status, "status_reason": run.status_reason},
                        status=status.HTTP_202_ACCEPTED)


class ResultView(NegotiationTolerant, APIView):
    @extend_schema(summary="The final result as Markdown; ETag is its SHA-256",
                   responses={(200, "text/markdown"): OpenApiTypes.STR, 304: None, 404: OpenApiTypes.OBJECT})
    def get(self, request, run_id: str):
        result = _result_for(request, run_id)
        etag = f'"{result.sha256}"'
        if _etag_matches(request, etag):
            return HttpResponseNotModified(headers={"ETag": etag})
        response = HttpResponse(result.markdown.encode("utf-8"), content_type="text/markdown; charset=utf-8")
        response["ETag"] = etag
        response["Content-Disposition"] = content_disposition_header(False, f"{result.run.run_id}-result.md")
        return response


class ResultJsonView(APIView):
    @extend_schema(summary="The final result as data, with its SHA-256 and the manifest's",
                   responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})
    def get(self, request, run_id: str):
        result = _result_for(request, run_id)
        etag = f'"{result.sha256}"'
        if _etag_matches(request, etag):
            return HttpResponseNotModified(headers={"ETag": etag})
        data = dict(result.data)
        data.update({"sha256": result.sha256, "manifest_sha256": result.manifest_sha256,
                     "created_at": result.created_at})
        return Response(data, headers={"ETag": etag})


class AttestationView(NegotiationTolerant, APIView):
    @extend_schema(summary="The final result's signed statement: an in-toto Statement v1 in a DSSE envelope",
                   responses={(200, MEDIA_TYPE): OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})
    def get(self, request, run_id: str):
        result = _result_for(request, run_id)
        attestation = Attestation.objects.filter(result=result).first()
        if attestation is None:  # a result finalized before results were signed
            raise ApiError(f"The result of run {result.run.run_id} is not signed.", code="no_attestation",
                           status_code=404)
        response = HttpResponse(attestation.envelope.encode("utf-8"), content_type=MEDIA_TYPE)
        response["Content-Disposition"] = content_disposition_header(
            False, f"{result.run.run_id}.attestation.dsse.json")
        return response


class BundleView(BundleImportView):
    """GET exports the run (same path as records' POST import, which this class inherits)."""

    @extend_schema(summary="Export the run: ARTIFACT.yaml pins, current members, result.md, result.json, "
                           "audit.json, attestation.dsse.json, public-key.pem, MANIFEST.json", responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_AUDIT, action="export bundle")
        blind = AuditEvent.objects.filter(run=run, action=PASS_DECIDED)
        if blind.exists() and withheld_events(run, request.user, blind):
            raise Conflict("The bundle carries the whole audit trail, with the decisions of other reviewers' "
                           "independent reviews: it is exported once your own review is submitted, or every review "
                           "is", code="reviews_blind")
        data = services.export_bundle(run=run)
        response = HttpResponse(data, content_type="application/zip")
        response["Content-Disposition"] = content_disposition_header(True, f"{run.run_id}.zip")
        return response

    def perform_content_negotiation(self, request, force=False):
        # Only the GET answers with its own media type; the inherited POST negotiates as usual.
        return super().perform_content_negotiation(request, force=force or request.method == "GET")

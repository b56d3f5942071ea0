"""REST API for the run's source snapshot and its checked quotations (DESIGN §4): one view per operation."""
from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from reviews.access import READ_RUNS, UPLOAD, route_policy
from reviews.access import run_for
from reviews.api_errors import ApiError
from reviews.audit import Actor
from reviews.parsers import FormParser, MultiPartParser

from . import services
from .services import quotations, snapshots
from .api import bad_parameter
from .models import QuotationCheck, Role, SourceSnapshot

SOURCE_UPLOAD = {
    "type": "object",
    "properties": {
        "file": {"type": "string", "format": "binary",
                 "description": "tar.gz or zip of the repository at the run's reviewed boundary, or of just the "
                                "files the reports cite"},
        "commit": {"type": "string", "description": "must equal the run's reviewed_boundary"},
    },
    "required": ["file"],
}
SOURCE_FILE = inline_serializer("SourceFileEntry", fields={
    "path": serializers.CharField(), "size": serializers.IntegerField(), "sha256": serializers.CharField()})
SNAPSHOT = inline_serializer("SourceSnapshot", fields={
    "archive_sha256": serializers.CharField(), "commit": serializers.CharField(),
    "file_count": serializers.IntegerField(), "total_bytes": serializers.IntegerField(),
    "uploaded_by": serializers.CharField(), "uploaded_at": serializers.DateTimeField(),
    "created": serializers.BooleanField(required=False),
    "files": SOURCE_FILE.__class__(many=True, required=False),
})
QUOTATION = inline_serializer("QuotationCheck", fields={
    "member": serializers.CharField(), "kind": serializers.ChoiceField(choices=QuotationCheck.Kind.values),
    "line": serializers.IntegerField(), "path": serializers.CharField(), "lines": serializers.CharField(),
    "commit": serializers.CharField(), "status": serializers.ChoiceField(choices=QuotationCheck.Status.values),
    "message": serializers.CharField(), "text": serializers.CharField(),
    "source_lines": serializers.ListField(child=serializers.ListField()),
    "candidates": serializers.ListField(child=serializers.CharField()),
})


def _refusal(error: services.UploadRefused) -> ApiError:
    """413 for an archive file over the limit, 409 for a closed run, else 400 naming the problem."""
    status_code = 413 if isinstance(error, snapshots.SourceTooLarge) else (
        409 if isinstance(error, services.RunClosed) else 400)
    return ApiError(error.message, code=error.code, status_code=status_code, details=error.details)


def _snapshot_data(snapshot: SourceSnapshot) -> dict:
    return {"archive_sha256": snapshot.archive_sha256, "commit": snapshot.commit, "file_count": snapshot.file_count,
            "total_bytes": snapshot.total_bytes, "uploaded_by": snapshot.uploaded_by,
            "uploaded_at": snapshot.created_at}


class SourceView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(summary="Upload the frozen source snapshot (tar.gz or zip); the same archive again: 200",
                   request={"multipart/form-data": SOURCE_UPLOAD},
                   responses={201: SNAPSHOT, 200: SNAPSHOT, 400: OpenApiResponse(description="refused, naming the entry"),
                              409: OpenApiResponse(description="the run no longer takes uploads"),
                              413: OpenApiResponse(description="the archive file is over MAX_SOURCE_BYTES")})
    @route_policy(UPLOAD, action="upload source", participant=True)
    def post(self, request, run_id: str):
        run = request.run
        upload = request.FILES.get("file")
        if upload is None:
            raise ApiError("file: required, a tar.gz or zip of the source at the reviewed commit", code="invalid",
                           details={"field": "file"})
        commit = request.data.get("commit") or None
        if commit is not None and not isinstance(commit, str):
            raise ApiError("commit: must be a string", code="invalid", details={"field": "commit"})
        if upload.size > settings.MAX_SOURCE_BYTES:
            raise _refusal(snapshots.SourceTooLarge(
                f"file: {upload.size} bytes; the limit is {settings.MAX_SOURCE_BYTES} bytes",
                details={"size": upload.size, "limit": settings.MAX_SOURCE_BYTES}))
        try:
            snapshot, created = snapshots.upload_source_snapshot(run=run, archive=upload.open("rb"),
                                                                 commit=commit.strip() if commit else None,
                                                                 actor=Actor.for_request(request))
        except services.UploadRefused as error:
            raise _refusal(error) from None
        return Response(_snapshot_data(snapshot) | {"created": created},
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(summary="The run's current source snapshot and its files with size and SHA-256",
                   responses={200: SNAPSHOT, 404: OpenApiResponse(description="no snapshot uploaded yet")})
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        snapshot = quotations.current_snapshot(run)
        if snapshot is None:
            raise ApiError(f"run {run.run_id} has no source snapshot; upload one with POST …/source/",
                           code="not_found", status_code=404)
        files = [{"path": path, "size": size, "sha256": sha256}
                 for path, size, sha256 in snapshot.files.order_by("path").values_list("path", "size", "sha256")]
        return Response(_snapshot_data(snapshot) | {"files": files})


class QuotationListView(APIView):
    @extend_schema(summary="Every quotation (and prose anchor) of every current member, checked against the snapshot",
                   parameters=[OpenApiParameter("member", str), OpenApiParameter("kind", str, enum=QuotationCheck.Kind.values),
                               OpenApiParameter("status", str, enum=QuotationCheck.Status.values)],
                   responses={200: inline_serializer("QuotationList", fields={
                       "snapshot_sha256": serializers.CharField(allow_null=True),
                       "totals": serializers.DictField(child=serializers.IntegerField()),
                       "quotations": QUOTATION.__class__(many=True)})})
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        checks = QuotationCheck.objects.filter(run=run, member_version__in=services.current_versions(run)) \
            .select_related("member_version__member").defer("member_version__content", "member_version__parsed")
        params = request.query_params
        if (member := params.get("member")) is not None:
            if member not in Role.values:
                raise bad_parameter("member", f"unknown member {member!r}; use one of {', '.join(Role.values)}")
            checks = checks.filter(member_version__member__role=member)
        if (kind := params.get("kind")) is not None:
            if kind not in QuotationCheck.Kind.values:
                raise bad_parameter("kind", f"use one of {', '.join(QuotationCheck.Kind.values)}")
            checks = checks.filter(kind=kind)
        if (wanted := params.get("status")) is not None:
            if wanted not in QuotationCheck.Status.values:
                raise bad_parameter("status", f"use one of {', '.join(QuotationCheck.Status.values)}")
            checks = checks.filter(status=wanted)
        rows = [{"member": c.member_version.member.role, "kind": c.kind, "line": c.line, "path": c.path,
                 "lines": c.lines, "commit": c.commit, "status": c.status, "message": c.message, "text": c.text,
                 "source_lines": c.source_lines, "candidates": c.candidates}
                for c in checks.order_by("member_version__member__role", "kind", "line", "ordinal")]
        summary = quotations.quotation_summary(run)
        return Response({"snapshot_sha256": summary["snapshot_sha256"], "totals": summary["totals"],
                         "quotations": rows})


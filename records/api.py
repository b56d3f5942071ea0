"""REST API for member reports, records, issues and validation (DESIGN §4): one view per operation."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpResponse, HttpResponseNotModified
from django.shortcuts import get_object_or_404
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import APIView

from celery import current_app as celery_app
from reviews.access import DECIDE, READ_RUNS, UPLOAD, check_participant, participant_refusal, route_policy, run_for
from reviews.api import RunSerializer
from reviews.api_errors import ApiError
from reviews.audit import Actor
from reviews.models import Run
# JSON nested too deep, and a form field sent twice, are refused with a 400
from reviews.parsers import FormParser, JSONParser, MultiPartParser
from reviews.services import ParticipantsRefused, ReviewsRequiredRefused, change_run

from . import parsed, services
from .api_schema import (
    BundleImportReplySerializer,
    BundleUploadSerializer,
    MemberDetailSerializer,
    ParticipantsSerializer,
    RunDetailSerializer,
    UploadFileSerializer,
    UploadJsonSerializer,
    ValidationReplySerializer,
)
from .ids import KINDS, PREFIXES
from .models import Finding, MemberReport, MemberVersion, Record, Role
from .serializers import (
    COUNT_KEYS,
    FindingSerializer,
    MemberVersionSerializer,
    RecordSerializer,
    VersionSummarySerializer,
    full_counts,
    member_version_data,
)
from .verification import VERIFICATION_ROLES, verification_data

REFUSAL_STATUS = {
    services.ReportTooLarge: 413,
    services.BundleTooLarge: 413,
    services.NotText: 415,
    services.RunClosed: 409,
}


def refusal(error: services.UploadRefused) -> ApiError:
    status_code = next((code for cls, code in REFUSAL_STATUS.items() if isinstance(error, cls)), 400)
    return ApiError(error.message, code=error.code, status_code=status_code, details=error.details)


def bad_parameter(name: str, message: str) -> ApiError:
    return ApiError(f"{name}: {message}", code="invalid_parameter", details={"parameter": name})


def _members_with_current_version():
    """Members with their current version, without its bytes or parser output (no summary shows them)."""
    return MemberReport.objects.select_related("current_version").defer("current_version__content",
                                                                         "current_version__parsed")


def _member_for(run, member_id: str) -> MemberReport:
    """The member with its current version; 404 when the run has no such member."""
    return get_object_or_404(_members_with_current_version(), run=run, role=member_id)


def _member_summary(member: MemberReport) -> dict:
    version = member.current_version
    return {
        "member_id": member.role, "role": member.role,
        "filename": version.filename if version else "",
        "version": version.version if version else None,
        "sha256": version.sha256 if version else "",
        "status": version.status if version else "",
        "size": version.size if version else 0,
        "counts": full_counts(version.counts if version else None),
    }


def run_detail_data(run) -> dict:
    members = [
        _member_summary(member)
        for member in _members_with_current_version().filter(run=run).order_by("role")
    ]
    totals = {key: sum(m["counts"][key] for m in members) for key in COUNT_KEYS}
    report = services.latest_validation(run)
    validation = ({"manifest_sha256": report.manifest_sha256, "errors": report.errors, "warnings": report.warnings,
                   "current": report.manifest_sha256 == run.manifest_sha256} if report else None)
    # The revision chain both ways (DESIGN §3), so an agent can follow a revision (issue 22).
    revision = {"revises": run.revises.run_id if run.revises_id else None,
                "revised_by": type(run).objects.filter(revises=run).values_list("run_id", flat=True).first()}
    return RunSerializer(run).data | {"members": members, "counts": totals, "validation": validation} | revision


class RunDetailView(APIView):
    @extend_schema(summary="A run with its members, counts, manifest hash and latest validation summary",
                   responses={200: RunDetailSerializer})
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        return Response(run_detail_data(run))

    @extend_schema(summary="Change the run's participants (the agents, besides its creator, that may upload to "
                           "it and answer its correction requests) and/or `reviews_required` (1-5, until the "
                           "first decision); reviewer or admin",
                   request=ParticipantsSerializer, responses={200: ParticipantsSerializer})
    @route_policy(DECIDE, action="change the run")
    def patch(self, request, run_id: str):
        run = request.run
        body = ParticipantsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            change_run(run=run, actor=Actor.for_request(request), **body.validated_data)
        except (ParticipantsRefused, ReviewsRequiredRefused) as error:
            raise ApiError(str(error), code="invalid", details={"field": error.field}) from None
        run.refresh_from_db()
        return Response({"participants": run.participant_names(),
                         "created_by": run.created_by.get_username() if run.created_by else None}
                        | ({"reviews_required": run.reviews_required} if "reviews_required" in body.validated_data
                           else {}))


class MemberUploadView(APIView):
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    @extend_schema(summary="Upload a member report (multipart file+role, or JSON role+content)",
                   request={"multipart/form-data": UploadFileSerializer, "application/json": UploadJsonSerializer},
                   responses={201: MemberVersionSerializer, 200: MemberVersionSerializer, 413: None, 415: None})
    # Uploads, and the answers to correction requests they carry, only by the run's participants (§9). The
    # role is checked before the view; whether the caller is a participant, on the run the upload reads once,
    # under its lock (a run read here as well cost every upload a statement). Every refusal says 404, then
    # 403, then what is wrong with the body, as when the run was read first.
    @route_policy(UPLOAD, action="upload", participant=True, lookup=False)
    def post(self, request, run_id: str):
        try:
            # A file part is the report (multipart); without one, `content` is (JSON, or a form's field).
            body = (UploadFileSerializer if "file" in request.FILES else UploadJsonSerializer)(data=request.data)
            body.is_valid(raise_exception=True)
            version, created = services.ingest_member_report(run=run_id, **body.validated_data,
                                                             actor=Actor.for_request(request), uploader=request.user)
        except Run.DoesNotExist:
            raise Http404 from None
        except services.NotParticipant:
            run = check_participant(request, run_id, action="upload")  # audits the denial and raises
            raise PermissionDenied(participant_refusal(run)) from None  # added between the two reads
        except (APIException, services.UploadRefused) as error:
            # The body is judged before the run is read; a run that does not exist, or that the caller may not
            # upload to, is the first thing to say.
            check_participant(request, run_id, action="upload")
            raise (refusal(error) if isinstance(error, services.UploadRefused) else error) from None
        if celery_app.conf.task_always_eager:  # the parse ran in process on commit: show its outcome
            version.refresh_from_db(fields=["status", "status_reason", "counts"])
        return Response(member_version_data(version),
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class MemberDetailView(APIView):
    @extend_schema(summary="One member: current version, status, counts, every version, findings",
                   responses={200: MemberDetailSerializer})
    def get(self, request, run_id: str, member_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        member = _member_for(run, member_id)
        versions = list(member.versions.defer("content", "parsed", "front_matter").order_by("version"))
        data = _member_summary(member)
        current = member.current_version
        report = services.latest_validation(run)
        found = (report.findings.filter(member=member.role).aggregate(
            errors=Count("pk", filter=Q(severity=Finding.Severity.ERROR)),
            warnings=Count("pk", filter=Q(severity=Finding.Severity.WARNING)))
            if report else {"errors": 0, "warnings": 0})
        data |= {
            "status_reason": current.status_reason if current else "",
            "doc_type": current.doc_type if current else "",
            "generation": current.generation if current else "",
            "front_matter": current.front_matter if current else {},
            "versions": VersionSummarySerializer(versions, many=True).data,
            "findings": found,
        }
        if current and member.role in VERIFICATION_ROLES:
            data |= verification_data(parsed.version_report(current), author=f"{member.role} v{current.version}")
        return Response(data)


class MemberRawView(APIView):
    @extend_schema(summary="The exact uploaded bytes (current version, or ?version=N)",
                   parameters=[OpenApiParameter("version", int)], responses={(200, "text/plain"): OpenApiTypes.BINARY})
    def get(self, request, run_id: str, member_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        member = _member_for(run, member_id)
        wanted = request.query_params.get("version")
        if wanted is None:
            version = MemberVersion.objects.filter(pk=member.current_version_id).first()
        elif not wanted.isdigit():
            raise bad_parameter("version", f"{wanted!r} is not a version number")
        else:
            version = member.versions.filter(version=int(wanted)).first()
        if version is None:
            raise Http404
        etag = f'"{version.sha256}"'
        if etag in request.headers.get("If-None-Match", ""):
            return HttpResponseNotModified(headers={"ETag": etag})
        response = HttpResponse(bytes(version.content), content_type="text/plain; charset=utf-8")
        response["ETag"] = etag
        response["Content-Disposition"] = content_disposition_header(False, version.filename)
        return response


class RecordListView(generics.ListAPIView):
    serializer_class = RecordSerializer

    @extend_schema(summary="Records of the run (current versions unless ?version=)", parameters=[
        OpenApiParameter("member", str), OpenApiParameter("kind", str), OpenApiParameter("prefix", str),
        OpenApiParameter("type", str, enum=list(Record.Type.values)), OpenApiParameter("version", int)])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        run = run_for(self.request, self.kwargs["run_id"], allowed=READ_RUNS, action="read")
        params = self.request.query_params
        records = Record.objects.filter(run=run).select_related("member_version__member") \
            .defer("member_version__content", "member_version__parsed", "member_version__front_matter")
        member = params.get("member")
        if member is not None:
            if member not in Role.values:
                raise bad_parameter("member", f"unknown member {member!r}; use one of {', '.join(Role.values)}")
            records = records.filter(member_version__member__role=member)
        version = params.get("version")
        if version is None:
            records = records.filter(member_version__in=services.current_versions(run))
        elif not version.isdigit():
            raise bad_parameter("version", f"{version!r} is not a version number")
        elif member is None:
            raise bad_parameter("version", "needs ?member= (versions are numbered per member)")
        else:
            records = records.filter(member_version__version=int(version))
        kind = params.get("kind")
        if kind is not None:
            if kind not in KINDS:
                raise bad_parameter("kind", f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")
            records = records.filter(kind=kind)
        prefix = params.get("prefix")
        if prefix is not None:
            if prefix not in (*PREFIXES, ""):
                raise bad_parameter("prefix", f"unknown prefix {prefix!r}; use one of {', '.join(PREFIXES)} "
                                              "or an empty value for bare IDs")
            records = records.filter(prefix=prefix)
        record_type = params.get("type")
        if record_type is not None:
            if record_type not in Record.Type.values:
                raise bad_parameter("type", f"use one of {', '.join(Record.Type.values)}")
            records = records.filter(record_type=record_type)
        return records.order_by("member_version__member__role", "ordinal")


class ValidationView(APIView):
    @extend_schema(summary="The latest validation of the run's member set", parameters=[
        OpenApiParameter("severity", str, enum=list(Finding.Severity.values)), OpenApiParameter("member", str)],
        responses={200: ValidationReplySerializer})
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        report = services.latest_validation(run)
        if report is None:
            return Response({"manifest_sha256": run.manifest_sha256 or None, "current": False,
                             "counts": {"errors": 0, "warnings": 0}, "validated_at": None, "findings": []})
        findings = report.findings.all()
        severity = request.query_params.get("severity")
        if severity is not None:
            if severity not in Finding.Severity.values:
                raise bad_parameter("severity", f"use one of {', '.join(Finding.Severity.values)}")
            findings = findings.filter(severity=severity)
        member = request.query_params.get("member")
        if member is not None:
            findings = findings.filter(member=member)
        return Response({
            "manifest_sha256": report.manifest_sha256,
            "current": report.manifest_sha256 == run.manifest_sha256,
            "counts": {"errors": report.errors, "warnings": report.warnings},
            "validated_at": report.created_at,
            "findings": FindingSerializer(findings, many=True).data,
        })


class BundleImportView(APIView):
    """POST imports a run directory (zip or tar.gz); results.api.BundleView serves the path, adding the GET export."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(summary="Import a run directory: ARTIFACT.yaml plus member files, all pins checked",
                   request={"multipart/form-data": BundleUploadSerializer},
                   responses={201: BundleImportReplySerializer, 200: BundleImportReplySerializer, 413: None, 415: None})
    @route_policy(UPLOAD, action="import bundle", participant=True)
    def post(self, request, run_id: str):
        run = request.run
        archive = run_directory_archive(request)
        try:
            results = services.import_bundle(run=run, archive=archive, actor=Actor.for_request(request))
        except services.UploadRefused as error:
            raise refusal(error) from None
        created = sum(1 for _, was_created in results if was_created)
        return Response({"members": imported_members(results), "created": created},
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def run_directory_archive(request) -> bytes:
    """The bytes of a run directory archive posted as multipart `file`: 400 without one, 413 over the limit."""
    upload = request.FILES.get("file")
    if upload is None:
        raise ApiError("file: required, a zip or tar.gz of the run directory", code="invalid",
                       details={"field": "file"})
    if upload.size > settings.MAX_BUNDLE_BYTES:
        raise refusal(services.BundleTooLarge(
            f"{upload.name}: {upload.size} bytes; the limit is {settings.MAX_BUNDLE_BYTES} bytes",
            details={"size": upload.size, "limit": settings.MAX_BUNDLE_BYTES}))
    return b"".join(upload.chunks())


def imported_members(results) -> list[dict]:
    """Each imported member version as the API shows it, with whether this import created it."""
    members = []
    for version, was_created in results:
        version.refresh_from_db(fields=["status", "status_reason", "counts"])
        members.append(member_version_data(version) | {"created": was_created})
    return members

"""Serializers of the records API's request bodies and replies: the bodies' validate them (reviews/api_input.py)
and, with the replies', document them in the OpenAPI schema for a generated client and a fuzzer.
"""
from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from reviews.api import RunSerializer
from reviews.api_errors import ApiError
from reviews.api_input import AsSent, InputSerializer, ListField, TextField, WholeNumberField
from reviews.models import MAX_REVIEWS_REQUIRED

from .models import MemberVersion, Role
from .serializers import CountsSerializer, FindingSerializer, MemberVersionSerializer, VersionSummarySerializer
from .services import NotText, ReportTooLarge, known_role


class RoleField(AsSent, serializers.ChoiceField):
    """A member's role, documented with its choices; a string here, an unknown one refused by the upload's
    validate() as the upload service refuses it (`unknown_role`), once the rest of the body is judged."""

    def to_internal_value(self, data):
        if not isinstance(data, str) or not data:
            self.fail("invalid_choice", input=data)
        return data


ANSWER = {"type": "object", "required": ["answer"], "properties": {
    "request": {"type": "integer", "nullable": True, "description": "the correction request it answers"},
    "answer": {"type": "string", "enum": ["corrected", "declined"]},
    "text": {"type": "string", "description": "what changed, or why not"}}}
ANSWERS_HELP = ("The answers to the member's open correction requests, one per request, oldest first: the "
                "upstream `- corrected: …` / `- declined: …` list")


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "array", "items": ANSWER}],
                      "description": ANSWERS_HELP + ", or a list of {request, answer, text}."})
class AnswersField(AsSent, serializers.Field):
    """The answers as sent (JSON: a string or a list, its entries judged by the upload service); a file part's
    bytes as UTF-8 text."""

    default_error_messages = {"not_text": "not UTF-8 text",
                              "invalid": "a `- corrected: …` / `- declined: …` list, or a JSON list of "
                                         "{{request, answer, text}}"}  # braces doubled: DRF formats the message

    def to_internal_value(self, data):
        if isinstance(data, UploadedFile):
            try:
                return b"".join(data.chunks()).decode("utf-8")
            except UnicodeDecodeError:
                self.fail("not_text")
        if not isinstance(data, (str, list)):
            self.fail("invalid")
        return data


@extend_schema_field(OpenApiTypes.STR)
class AnswersPartField(AnswersField):
    """A multipart upload's answers: a form field, or a file part read as UTF-8 text."""


class UploadSerializer(InputSerializer):
    """An upload's body (`role` first); its validated data are the upload service's arguments."""

    not_an_object = "the body must be a JSON object with `role` and `content`, or multipart `file` and `role`"
    checked_first = ("role",)

    def refusal(self, name: str, detail) -> ApiError:
        if name == "role":
            return ApiError("role: required, one of " + ", ".join(Role.values), code="invalid",
                            details={"field": "role", "roles": list(Role.values)})
        return super().refusal(name, detail)

    def validate(self, data):
        known_role(data["role"])
        return data


class UploadFileSerializer(UploadSerializer):
    """multipart/form-data: the report file and its role."""

    file = serializers.FileField(allow_empty_file=True,  # an empty report is the upload service's to refuse
                                 help_text="The report, UTF-8 text (Markdown or plain), at most MAX_UPLOAD_BYTES.")
    role = RoleField(choices=Role.choices)
    answers = AnswersPartField(required=False, help_text=ANSWERS_HELP + ", as a field or a file part (UTF-8).")

    def validate_file(self, upload):
        if upload.size > settings.MAX_UPLOAD_BYTES:
            raise ReportTooLarge(f"file: {upload.size} bytes; the limit is {settings.MAX_UPLOAD_BYTES} bytes",
                                 details={"size": upload.size, "limit": settings.MAX_UPLOAD_BYTES})
        return upload

    def validate(self, data):
        upload = data.pop("file")
        return super().validate(data | {"filename": upload.name, "content": b"".join(upload.chunks())})


class UploadJsonSerializer(UploadSerializer):
    """application/json: the report's text and its role."""

    role = RoleField(choices=Role.choices)
    content = TextField(allow_blank=True, help_text="The report's text.",
                        error_messages={"invalid": "must be a string holding the report's text, not {type}"})
    filename = TextField(required=False, allow_blank=True, allow_null=True,
                         help_text="Stored name; defaults to the role's file name.")
    answers = AnswersField(required=False, allow_null=True)

    def validate_content(self, content: str) -> bytes:
        try:
            return content.encode("utf-8")
        except UnicodeEncodeError as error:
            raise NotText(f"content: not encodable as UTF-8 (a lone surrogate at character {error.start})",
                          details={"field": "content"}) from None

    def refusal(self, name: str, detail) -> ApiError:
        if name == "content" and detail[0].code in ("required", "null"):
            return ApiError("file: required (multipart), or `content` as a string (JSON)", code="invalid",
                            details={"field": "file"})
        return super().refusal(name, detail)

    def validate(self, data):
        return super().validate({"filename": None} | data)


class BundleUploadSerializer(serializers.Serializer):
    """multipart/form-data: a run directory as zip or tar.gz."""

    file = serializers.FileField(help_text="ARTIFACT.yaml plus the member files, every member pinned by SHA-256.")


class MemberSummarySerializer(serializers.Serializer):
    member_id = serializers.ChoiceField(choices=Role.choices)
    role = serializers.ChoiceField(choices=Role.choices)
    filename = serializers.CharField()
    version = serializers.IntegerField(allow_null=True, min_value=1)
    sha256 = serializers.CharField()
    status = serializers.CharField(help_text="received, parsing, parsed, validated or failed ('' before any upload)")
    size = serializers.IntegerField(min_value=0)
    counts = CountsSerializer()


class ValidationSummarySerializer(serializers.Serializer):
    manifest_sha256 = serializers.CharField()
    errors = serializers.IntegerField(min_value=0)
    warnings = serializers.IntegerField(min_value=0)
    current = serializers.BooleanField()


class RunDetailSerializer(RunSerializer):
    members = MemberSummarySerializer(many=True)
    counts = CountsSerializer()
    validation = ValidationSummarySerializer(allow_null=True)
    revises = serializers.CharField(allow_null=True, help_text="the final run this one revises")
    revised_by = serializers.CharField(allow_null=True, help_text="the run that revises this one")

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "members", "counts", "validation", "revises", "revised_by"]


class ParticipantsSerializer(InputSerializer):
    # The run's PATCH: its participants and/or `reviews_required`, nothing else; the reply adds `created_by`.
    messages = {"participants": "required, a list of agents' user names",
                "reviews_required": f"a whole number from 1 to {MAX_REVIEWS_REQUIRED}"}
    checked_first = ("reviews_required",)
    participants = ListField(child=TextField(), help_text="agents' user names", required=False)
    reviews_required = WholeNumberField(min_value=1, max_value=MAX_REVIEWS_REQUIRED, required=False,
                                        help_text="independent review passes the run needs (DESIGN §5)")
    created_by = serializers.CharField(read_only=True, allow_null=True)

    def run_validation(self, data=serializers.empty):
        return super().run_validation(data if isinstance(data, Mapping) else {})  # not an object: nothing changeable

    def to_internal_value(self, data):
        others = sorted(set(data) - {"participants", "reviews_required"})
        if others or not data:
            raise ApiError(f"{', '.join(others) or 'nothing'}: not changeable here; send `participants` and/or "
                           "`reviews_required`", code="invalid", details={"fields": others})
        return super().to_internal_value(data)


class FindingCountsSerializer(serializers.Serializer):
    errors = serializers.IntegerField(min_value=0)
    warnings = serializers.IntegerField(min_value=0)


class BlockerRequestSerializer(serializers.Serializer):
    addressee = serializers.CharField(allow_blank=True)
    record_id = serializers.CharField(allow_blank=True)
    line = serializers.IntegerField()
    text = serializers.CharField()
    author = serializers.CharField()
    source = serializers.CharField()


class LimitSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    text = serializers.CharField()
    references = serializers.ListField(child=serializers.CharField())


class MemberDetailSerializer(MemberSummarySerializer):
    status_reason = serializers.CharField(allow_blank=True)
    doc_type = serializers.CharField(allow_blank=True)
    generation = serializers.CharField(allow_blank=True)
    front_matter = serializers.JSONField()
    versions = VersionSummarySerializer(many=True)
    findings = FindingCountsSerializer()
    # On verification members only: their Blockers, as the correction requests they raise, and their Limits.
    blockers = BlockerRequestSerializer(many=True, required=False)
    limits = LimitSerializer(many=True, required=False)


class ValidationReplySerializer(serializers.Serializer):
    manifest_sha256 = serializers.CharField(allow_null=True)
    current = serializers.BooleanField()
    counts = FindingCountsSerializer()
    validated_at = serializers.DateTimeField(allow_null=True)
    findings = FindingSerializer(many=True)


class ImportedMemberSerializer(MemberVersionSerializer):
    created = serializers.BooleanField()

    class Meta(MemberVersionSerializer.Meta):
        model = MemberVersion
        fields = [*MemberVersionSerializer.Meta.fields, "created"]


class BundleImportReplySerializer(serializers.Serializer):
    members = ImportedMemberSerializer(many=True)
    created = serializers.IntegerField(min_value=0, help_text="How many members got a new version")

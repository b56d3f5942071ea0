"""Serializers that document the records API's request bodies and replies in the OpenAPI schema.

The views read their input by hand (multipart or JSON, checked with errors that name the problem,
records/api.py); these describe the same shapes so that a generated client and a fuzzer can use them.
"""
from __future__ import annotations

from rest_framework import serializers

from reviews.api import RunSerializer

from .models import MemberVersion, Role
from .serializers import CountsSerializer, FindingSerializer, MemberVersionSerializer, VersionSummarySerializer


class UploadFileSerializer(serializers.Serializer):
    """multipart/form-data: the report file and its role."""

    file = serializers.FileField(help_text="The report, UTF-8 text (Markdown or plain), at most MAX_UPLOAD_BYTES.")
    role = serializers.ChoiceField(choices=Role.choices)


class UploadJsonSerializer(serializers.Serializer):
    """application/json: the report's text and its role."""

    role = serializers.ChoiceField(choices=Role.choices)
    content = serializers.CharField(trim_whitespace=False, help_text="The report's text.")
    filename = serializers.CharField(required=False, help_text="Stored name; defaults to the role's file name.")


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


class ParticipantsSerializer(serializers.Serializer):
    participants = serializers.ListField(child=serializers.CharField(), help_text="agents' user names",
                                         required=False)
    reviews_required = serializers.IntegerField(min_value=1, max_value=5, required=False,
                                                help_text="independent review passes the run needs (DESIGN §5)")
    created_by = serializers.CharField(read_only=True, allow_null=True)


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

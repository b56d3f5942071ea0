"""How member reports, records, issues and findings look over the API (DESIGN §4)."""
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .models import Finding, IntegrationIssue, MemberVersion, Record

COUNT_KEYS = ("declarations", "annotations", "integration_issues", "sources", "mappings", "quotations", "references",
              "citations", "mentions", "blockers", "limits")


def full_counts(counts: dict | None) -> dict[str, int]:
    counts = counts or {}
    return {key: int(counts.get(key, 0)) for key in COUNT_KEYS}


class CountsSerializer(serializers.Serializer):
    """What the parser found in one version (or, summed, in a run): every key, always an integer."""

    declarations = serializers.IntegerField(min_value=0)
    annotations = serializers.IntegerField(min_value=0)
    integration_issues = serializers.IntegerField(min_value=0)
    sources = serializers.IntegerField(min_value=0)
    mappings = serializers.IntegerField(min_value=0)
    quotations = serializers.IntegerField(min_value=0)
    references = serializers.IntegerField(min_value=0)  # in the links form: its citations
    # The links form only (0 in older generations): citations, bare-ID mentions, a verification's entries.
    citations = serializers.IntegerField(min_value=0)
    mentions = serializers.IntegerField(min_value=0)
    blockers = serializers.IntegerField(min_value=0)
    limits = serializers.IntegerField(min_value=0)


class MemberVersionSerializer(serializers.ModelSerializer):
    """One uploaded version; what an upload returns."""

    member_id = serializers.CharField(source="member.role")
    role = serializers.CharField(source="member.role")
    counts = serializers.SerializerMethodField()

    class Meta:
        model = MemberVersion
        fields = ["member_id", "role", "version", "sha256", "status", "status_reason", "size", "filename",
                  "counts", "created_at", "uploaded_by"]

    @extend_schema_field(CountsSerializer)
    def get_counts(self, version) -> dict:
        return full_counts(version.counts)


_CREATED_AT = serializers.DateTimeField()  # the API's one date format, from DRF's settings


def member_version_data(version: MemberVersion) -> dict:
    """`MemberVersionSerializer(version).data`, key for key, without building a serializer's fields per call
    (an upload answers with this; tests/records hold the two equal)."""
    role = version.member.role
    return {
        "member_id": role, "role": role, "version": version.version, "sha256": version.sha256,
        "status": version.status, "status_reason": version.status_reason, "size": version.size,
        "filename": version.filename, "counts": full_counts(version.counts),
        "created_at": _CREATED_AT.to_representation(version.created_at), "uploaded_by": version.uploaded_by,
    }


class VersionSummarySerializer(serializers.ModelSerializer):
    class Meta:
        model = MemberVersion
        fields = ["version", "sha256", "size", "status", "status_reason", "filename", "created_at", "uploaded_by",
                  "parsed_at"]


class RecordSerializer(serializers.ModelSerializer):
    member = serializers.CharField(source="member_version.member.role")
    version = serializers.IntegerField(source="member_version.version")

    class Meta:
        model = Record
        fields = ["id", "record_id", "record_type", "kind", "prefix", "label", "member", "version", "fields",
                  "references", "line_start", "line_end", "form", "content_sha256", "text"]


class IntegrationIssueSerializer(serializers.ModelSerializer):
    """Reconcile extends this with the issue's decision state."""

    member = serializers.CharField(source="member_version.member.role")
    version = serializers.IntegerField(source="member_version.version")

    class Meta:
        model = IntegrationIssue
        fields = ["id", "member", "version", "index", "text", "references", "line", "content_sha256"]


class FindingSerializer(serializers.ModelSerializer):
    class Meta:
        model = Finding
        fields = ["code", "severity", "member", "record_id", "line", "message"]

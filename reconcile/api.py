"""REST API for the reconciliation (DESIGN §4): one DRF view per operation, each calling a service."""
from __future__ import annotations

from collections import defaultdict

from django.db.models import F
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from records.models import Role
from reviews.access import DECIDE, PROPOSE, READ_RUNS, route_policy, run_for
from reviews.api_errors import ApiError, Conflict
from reviews.api_input import TextLimit
from reviews.audit import Actor

from . import services
from .api_schema import ProgressSerializer
from .blockers import run_standing
from .models import AmendmentDecision, CanonicalRecord, IssueDecision, Mapping
from .passes.entering import decides_in_review_pass, in_review_pass


# --- serializers ---------------------------------------------------------------------------------

class MappingSerializer(serializers.ModelSerializer):
    member = serializers.SerializerMethodField()

    class Meta:
        model = Mapping
        fields = ["id", "source", "member", "relation", "target", "state", "origin", "score", "reason", "version",
                  "rationale", "decided_by", "decided_at", "decided_member_sha256", "decided_content_sha256",
                  "proposed_by", "created_at"]

    def get_member(self, mapping: Mapping) -> str | None:
        record = mapping.source_record
        return record.member_version.member.role if record is not None else None


class IssueDecisionSerializer(serializers.ModelSerializer):
    """One integration issue of a current member version, with its decision."""

    issue_id = serializers.IntegerField(source="issue.id")
    member = serializers.CharField(source="issue.member_version.member.role")
    member_version = serializers.IntegerField(source="issue.member_version.version")
    index = serializers.IntegerField(source="issue.index")
    text = serializers.CharField(source="issue.text")
    references = serializers.JSONField(source="issue.references")
    line = serializers.IntegerField(source="issue.line")
    content_sha256 = serializers.CharField(source="issue.content_sha256")

    class Meta:
        model = IssueDecision
        fields = ["id", "issue_id", "member", "member_version", "index", "text", "references", "line",
                  "content_sha256", "state", "version", "rationale", "decided_by", "decided_at",
                  "decided_member_sha256", "decided_content_sha256"]


class AmendmentDecisionSerializer(serializers.ModelSerializer):
    """One amendment or unresolved conflict of a current member version, with its decision. `mapping` is
    the supersedes mapping that decides a supersession (the amendment follows it), else null."""

    member = serializers.CharField(source="member_version.member.role")
    member_version = serializers.IntegerField(source="member_version.version")
    mapping = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)

    class Meta:
        model = AmendmentDecision
        fields = ["id", "kind", "member", "member_version", "index", "line", "text", "references", "content_sha256",
                  "mapping", "state", "version", "rationale", "decided_by", "decided_at",
                  "decided_member_sha256", "decided_content_sha256"]


class CanonicalRecordSerializer(serializers.ModelSerializer):
    members = serializers.SerializerMethodField()

    class Meta:
        model = CanonicalRecord
        fields = ["canonical_id", "kind", "number", "label", "origin", "state", "source_record_id", "rationale",
                  "version", "members"]

    def get_members(self, record: CanonicalRecord) -> list[dict]:
        return self.context.get("members", {}).get(record.canonical_id, [])


class ProposalSerializer(serializers.Serializer):
    source = serializers.CharField(max_length=120)
    relation = serializers.ChoiceField(choices=Mapping.Relation.values)
    target = serializers.CharField(max_length=120, allow_blank=True, allow_null=True, required=False, default=None)


class DecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=services.DECISIONS)
    rationale = serializers.CharField(allow_blank=True, required=False, default="", validators=[TextLimit()])
    # Required: a decision names the version it was made on (a missing one is bad input, 400 naming
    # `version`; an older one is a stale read, 409 with the item as it is now).
    version = serializers.IntegerField(min_value=1)
    target = serializers.CharField(max_length=120, allow_blank=True, allow_null=True, required=False, default=None)

    def validate(self, data):
        no_target = self.context.get("no_target")  # why the item decided takes none (its view says)
        if no_target and data["target"]:
            raise ApiError(f"target: {no_target}", code="invalid", details={"field": "target"})
        return data


class AmendmentDecisionRequestSerializer(DecisionSerializer):
    decision = serializers.ChoiceField(choices=services.AMENDMENT_DECISIONS)


# --- helpers -------------------------------------------------------------------------------------

def _choice(request, name: str, values) -> str | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    if value not in values:
        raise ApiError(f"{name}: unknown value {value!r}; use one of {', '.join(values)}", code="invalid_filter",
                       details={"parameter": name, "allowed": list(values)})
    return value


def _filtered(request, query, filters: dict[str, tuple[list[str], str]]):
    """`query` narrowed by each query parameter given: {parameter: (allowed values, field lookup)}."""
    for name, (values, lookup) in filters.items():
        value = _choice(request, name, values)
        if value:
            query = query.filter(**{lookup: value})
    return query


def _refusal(error: services.ProposalError | services.StateConflict, serializer_class=None) -> ApiError:
    """A service's refusal as the API error: a state conflict is 409 (a stale version hands back the
    item as it is now), bad input 400."""
    details = {"field": error.field} if error.field else None
    if isinstance(error, services.StaleVersion):
        return Conflict(error.message, code=error.code, details={"current": serializer_class(error.current).data})
    if isinstance(error, services.StateConflict):
        return Conflict(error.message, code=error.code, details=details)
    return ApiError(error.message, code="invalid", details=details)


def _mappings(run):
    return (Mapping.objects.filter(run=run)
            .select_related("source_record__member_version__member")
            .defer("source_record__member_version__content", "source_record__text", "source_record__body",
                   "source_record__fields", "source_record__references",
                   "source_record__member_version__parsed", "source_record__member_version__front_matter"))


def _issue_decisions(run):
    return (services.current_issue_decisions(run)
            .select_related("issue__member_version__member")
            .defer("issue__member_version__content", "issue__member_version__parsed",
                   "issue__member_version__front_matter"))


def _amendment_decisions(run):
    return (services.current_amendment_decisions(run)
            .select_related("member_version__member")
            .defer("member_version__content", "member_version__parsed", "member_version__front_matter"))


# --- views ---------------------------------------------------------------------------------------

class CanonicalRecordListView(generics.ListAPIView):
    """The run's shared set, each with the member records mapped to it by accepted mappings."""

    serializer_class = CanonicalRecordSerializer

    @extend_schema(summary="Canonical records of the run", parameters=[
        OpenApiParameter("kind", str), OpenApiParameter("state", str, enum=list(CanonicalRecord.State.values)),
        OpenApiParameter("origin", str, enum=list(CanonicalRecord.Origin.values))])
    @in_review_pass
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        self.run = run_for(self.request, self.kwargs["run_id"], allowed=READ_RUNS, action="read")
        records = CanonicalRecord.objects.filter(run=self.run).defer("text")
        kind = self.request.query_params.get("kind")
        if kind:
            records = records.filter(kind=kind)
        records = _filtered(self.request, records, {"state": (CanonicalRecord.State.values, "state"),
                                                    "origin": (CanonicalRecord.Origin.values, "origin")})
        return records.order_by("kind", F("number").asc(nulls_last=True), "canonical_id")

    def get_serializer_context(self):
        context = super().get_serializer_context()
        run = getattr(self, "run", None)
        if run is None:
            return context
        members: dict[str, list[dict]] = defaultdict(list)
        for mapping in _mappings(run).filter(state=Mapping.State.ACCEPTED).exclude(target="").order_by("source", "id"):
            record = mapping.source_record
            members[mapping.target].append({
                "source": mapping.source, "relation": mapping.relation, "mapping": mapping.pk,
                "member": record.member_version.member.role if record is not None else None,
            })
        return context | {"members": members}


class MappingListCreateView(generics.ListCreateAPIView):
    serializer_class = MappingSerializer

    @extend_schema(summary="Mappings of the run", parameters=[
        OpenApiParameter("state", str, enum=list(Mapping.State.values)),
        OpenApiParameter("origin", str, enum=list(Mapping.Origin.values)),
        OpenApiParameter("member", str, enum=list(Role.values))])
    @in_review_pass
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        run = run_for(self.request, self.kwargs["run_id"], allowed=READ_RUNS, action="read")
        mappings = _filtered(self.request, _mappings(run), {
            "state": (Mapping.State.values, "state"), "origin": (Mapping.Origin.values, "origin"),
            "member": (Role.values, "source_record__member_version__member__role")})
        return mappings.order_by("source", "id")

    @extend_schema(summary="Propose a mapping (an identical open proposal is answered 200, not made twice)",
                   request=ProposalSerializer, responses={201: MappingSerializer, 200: MappingSerializer})
    @route_policy(PROPOSE, action="mapping.propose", participant=True)
    def post(self, request, run_id: str):
        run = request.run
        proposal = ProposalSerializer(data=request.data)
        proposal.is_valid(raise_exception=True)
        try:
            mapping, created = services.propose_mapping(run=run, actor=Actor.for_request(request),
                                                        **proposal.validated_data)
        except (services.StateConflict, services.ProposalError) as error:
            raise _refusal(error) from None
        return Response(MappingSerializer(_mappings(run).get(pk=mapping.pk)).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class _DecisionView(APIView):
    """Decide one item: the body is a `request_serializer`, a refusal carries the item as an `item_serializer`."""

    no_target = ""  # why the items decided here take no target, when they take none
    item_serializer: type[serializers.Serializer]
    request_serializer: type[serializers.Serializer] = DecisionSerializer

    def decide(self, request, call):
        decision = self.request_serializer(data=request.data, context={"no_target": self.no_target})
        decision.is_valid(raise_exception=True)
        try:
            return call(decision.validated_data, Actor.for_request(request))
        except (services.StateConflict, services.ProposalError) as error:
            raise _refusal(error, self.item_serializer) from None


class MappingDecisionView(_DecisionView):
    item_serializer = MappingSerializer

    @extend_schema(summary="Accept, reject or reopen a mapping (reviewers)", request=DecisionSerializer,
                   responses={200: MappingSerializer, 409: OpenApiTypes.OBJECT})
    @decides_in_review_pass
    @route_policy(DECIDE, action="mapping.decide")
    def post(self, request, run_id: str, mapping_id: int):
        run = request.run
        mapping = get_object_or_404(Mapping.objects.select_related("run"), run=run, pk=mapping_id)
        mapping = self.decide(request, lambda data, actor: services.decide_mapping(
            mapping=mapping, decision=data["decision"], rationale=data["rationale"], actor=actor,
            expected_version=data["version"], target=data["target"] if data["decision"] == services.ACCEPT else None,
        ))
        return Response(MappingSerializer(_mappings(run).get(pk=mapping.pk)).data)


class IssueListView(generics.ListAPIView):
    """Integration issues of the current member versions with their decision state."""

    serializer_class = IssueDecisionSerializer

    @extend_schema(summary="Integration issues with their decision state", parameters=[
        OpenApiParameter("state", str, enum=list(IssueDecision.State.values)),
        OpenApiParameter("member", str, enum=list(Role.values))])
    @in_review_pass
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        run = run_for(self.request, self.kwargs["run_id"], allowed=READ_RUNS, action="read")
        decisions = _filtered(self.request, _issue_decisions(run), {
            "state": (IssueDecision.State.values, "state"),
            "member": (Role.values, "issue__member_version__member__role")})
        return decisions.order_by("issue__member_version__member__role", "issue__index")


class IssueDecisionView(_DecisionView):
    item_serializer = IssueDecisionSerializer
    no_target = "an integration issue has no target"

    @extend_schema(summary="Accept, reject or reopen an integration issue (reviewers)", request=DecisionSerializer,
                   responses={200: IssueDecisionSerializer, 409: OpenApiTypes.OBJECT})
    @decides_in_review_pass
    @route_policy(DECIDE, action="issue.decide")
    def post(self, request, run_id: str, decision_id: int):
        run = request.run
        item = get_object_or_404(IssueDecision.objects.select_related("run"), run=run, pk=decision_id)
        item = self.decide(request, lambda data, actor: services.decide_issue(
            issue_decision=item, decision=data["decision"], rationale=data["rationale"], actor=actor,
            expected_version=data["version"]))
        return Response(IssueDecisionSerializer(item).data)


class AmendmentListView(generics.ListAPIView):
    """Amendments and unresolved conflicts of the current member versions with their decision state."""

    serializer_class = AmendmentDecisionSerializer

    @extend_schema(summary="Amendments and unresolved conflicts with their decision state", parameters=[
        OpenApiParameter("state", str, enum=list(AmendmentDecision.State.values)),
        OpenApiParameter("kind", str, enum=list(AmendmentDecision.Kind.values)),
        OpenApiParameter("member", str, enum=list(Role.values))])
    @in_review_pass
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        run = run_for(self.request, self.kwargs["run_id"], allowed=READ_RUNS, action="read")
        decisions = _filtered(self.request, _amendment_decisions(run), {
            "state": (AmendmentDecision.State.values, "state"), "kind": (AmendmentDecision.Kind.values, "kind"),
            "member": (Role.values, "member_version__member__role")})
        return decisions.order_by("member_version__member__role", "index")


class AmendmentDecisionView(_DecisionView):
    item_serializer = AmendmentDecisionSerializer
    request_serializer = AmendmentDecisionRequestSerializer
    no_target = "an amendment has no target; a supersession's target is its mapping's"

    @extend_schema(summary="Accept, reject, carry into Limitations or reopen an amendment or unresolved conflict "
                           "(reviewers; a supersession is decided through its mapping)",
                   request=AmendmentDecisionRequestSerializer,
                   responses={200: AmendmentDecisionSerializer, 409: OpenApiTypes.OBJECT})
    @decides_in_review_pass
    @route_policy(DECIDE, action="amendment.decide")
    def post(self, request, run_id: str, amendment_id: int):
        run = request.run
        item = get_object_or_404(AmendmentDecision.objects.select_related("run"), run=run, pk=amendment_id)
        item = self.decide(request, lambda data, actor: services.decide_amendment(
            amendment=item, decision=data["decision"], rationale=data["rationale"], actor=actor,
            expected_version=data["version"]))
        return Response(AmendmentDecisionSerializer(_amendment_decisions(run).get(pk=item.pk)).data)


class ProgressView(APIView):
    @extend_schema(summary="Counts of decided and open mappings, integration issues and amendments",
                   responses={200: ProgressSerializer})
    @in_review_pass
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        return Response(services.decision_progress(run))


class BlockersView(APIView):
    @extend_schema(summary="What stands between the run and approval: each {code, record, message, link}",
                   responses={200: OpenApiTypes.OBJECT})
    @in_review_pass
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        standing = run_standing(run)
        return Response({"run_id": run.run_id, "status": run.status, "approvable": not standing.blockers,
                         "blockers": [b.as_dict() for b in standing.blockers]})

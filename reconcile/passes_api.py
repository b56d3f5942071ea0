"""REST API of independent reviews (DESIGN §4): the passes, their agreement, their conflicts."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from reviews.access import DECIDE, READ_RUNS, route_policy, run_for
from reviews.api_errors import ApiError, Conflict as ConflictError
from reviews.api_input import TextLimit
from reviews.audit import Actor

from .models import Conflict
from .passes import consensus
from .passes.agreement import agreement
from .passes.entering import in_review_pass
from .passes.listing import conflict_data, passes_for
from .services import ProposalError, StaleVersion, StateConflict


class FiguresSerializer(serializers.Serializer):
    name = serializers.CharField(required=False)
    items = serializers.IntegerField()
    agreements = serializers.IntegerField()
    percent_agreement = serializers.FloatField(allow_null=True)
    cohens_kappa = serializers.FloatField(allow_null=True, help_text="two passes only")
    krippendorffs_alpha = serializers.FloatField(allow_null=True, help_text="nominal")


class AgreementSerializer(serializers.Serializer):
    reviews_required = serializers.IntegerField()
    complete = serializers.BooleanField()
    passes = serializers.ListField(child=serializers.DictField())
    kinds = serializers.DictField(child=FiguresSerializer(), help_text="mapping, issue, amendment, canonical")
    overall = FiguresSerializer(allow_null=True)


class PassSerializer(serializers.Serializer):
    reviews_required = serializers.IntegerField()
    complete = serializers.BooleanField(allow_null=True, help_text="null for a run that takes one review")
    passes = serializers.ListField(child=serializers.DictField(), help_text="each pass's reviewer, state and "
                                   "count; `decisions` null while the caller may not see them yet")


class ConflictSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    item = serializers.CharField()
    kind = serializers.CharField()
    name = serializers.CharField()
    state = serializers.CharField()
    version = serializers.IntegerField()
    note = serializers.CharField(allow_blank=True)
    decisions = serializers.ListField(child=serializers.DictField())
    decision = serializers.CharField(allow_null=True)
    rationale = serializers.CharField(allow_blank=True)
    settled_by = serializers.CharField(allow_null=True)
    settled_at = serializers.DateTimeField(allow_null=True)


class ConflictListSerializer(serializers.Serializer):
    conflicts = ConflictSerializer(many=True)


def _refusal(error: StateConflict | ProposalError) -> ApiError:
    if isinstance(error, StaleVersion):
        return ConflictError(error.message, code=error.code, details={"current": conflict_data(error.current)})
    if isinstance(error, StateConflict):
        blockers = getattr(error, "blockers", None)
        return ConflictError(error.message, code=error.code,
                             details={"blockers": [b.as_dict() for b in blockers]} if blockers else None)
    return ApiError(error.message, code="invalid", details={"field": error.field} if error.field else None)


class PassesView(APIView):
    @extend_schema(summary="The run's review passes: reviewers, state, counts; the decisions of others only "
                           "once the caller's own pass is submitted",
                   responses={200: PassSerializer})
    @in_review_pass
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        return Response(passes_for(run, request.user))


class SubmitPassView(APIView):
    @extend_schema(summary="Submit the caller's own review pass (reviewer); 409 naming what is still open in it",
                   request=None, responses={200: PassSerializer})
    @route_policy(DECIDE, action="pass.submit")
    def post(self, request, run_id: str):
        run = request.run
        try:
            submitted = consensus.submit_pass(run=run, reviewer=request.user, actor=Actor.for_request(request))
        except StateConflict as error:
            raise _refusal(error) from None
        return Response(passes_for(run, request.user) | {"pass": submitted.number, "state": submitted.state})


class AgreementView(APIView):
    @extend_schema(summary="Agreement between the submitted passes per item kind and overall: items, agreements, "
                           "percent, Cohen's kappa (two passes), Krippendorff's alpha (nominal)",
                   responses={200: AgreementSerializer})
    @in_review_pass
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        return Response(agreement(run))


class ConflictsView(APIView):
    @extend_schema(summary="Items the submitted passes decided differently, each pass's decision and rationale "
                           "side by side", responses={200: ConflictListSerializer})
    @in_review_pass
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        return Response({"conflicts": [conflict_data(c) for c in Conflict.objects.filter(run=run)]})


class AdjudicationSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["accept", "reject", "carry", "keep"])
    rationale = serializers.CharField(allow_blank=True, default="", validators=[TextLimit()])
    version = serializers.IntegerField(min_value=1)
    target = serializers.CharField(required=False, allow_blank=True, default="")


class ConflictDecisionView(APIView):
    @extend_schema(summary="Settle a conflict (a reviewer with the adjudicate permission who wrote none of its "
                           "passes); refused when it would leave the decisions incoherent",
                   request=AdjudicationSerializer, responses={200: ConflictSerializer})
    @route_policy(DECIDE, action="conflict.settle")
    def post(self, request, run_id: str, conflict_id: int):
        run = request.run
        conflict = get_object_or_404(Conflict, run=run, pk=conflict_id)
        body = AdjudicationSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            settled = consensus.settle_conflict(conflict=conflict, decision=data["decision"],
                                                rationale=data["rationale"], target=data["target"] or None,
                                                reviewer=request.user, actor=Actor.for_request(request),
                                                expected_version=data["version"])
        except (StateConflict, ProposalError) as error:
            raise _refusal(error) from None
        return Response(conflict_data(settled))

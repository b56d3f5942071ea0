"""REST API of independent reviews (DESIGN §4): the passes, their agreement, their conflicts."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from reviews.access import DECIDE, READ_RUNS, run_for
from reviews.api_errors import ApiError, Conflict as ConflictError
from reviews.audit import Actor

from .models import Conflict
from .passes import consensus
from .passes.agreement import agreement
from .passes.listing import conflict_data, passes_for
from .services import ProposalError, StaleVersion, StateConflict


def _refusal(error: StateConflict | ProposalError) -> ApiError:
    if isinstance(error, StaleVersion):
        return ConflictError(error.message, code=error.code, details={"current": conflict_data(error.current)})
    if isinstance(error, StateConflict):
        return ConflictError(error.message, code=error.code,
                             details={"blockers": [b.as_dict() for b in getattr(error, "blockers", [])]} or None)
    return ApiError(error.message, code="invalid", details={"field": error.field} if error.field else None)


class PassesView(APIView):
    @extend_schema(summary="The run's review passes: reviewers, state, counts; the decisions of others only "
                           "once the caller's own pass is submitted",
                   responses={200: inline_serializer("ReviewPasses", {"reviews_required": serializers.IntegerField(),
                                                                      "complete": serializers.BooleanField(),
                                                                      "passes": serializers.ListField()})})
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        return Response(passes_for(run, request.user))


class SubmitPassView(APIView):
    @extend_schema(summary="Submit the caller's own review pass (reviewer); 409 naming what is still open in it",
                   request=None, responses={200: inline_serializer("SubmittedPass", {
                       "pass": serializers.IntegerField(), "state": serializers.CharField()})})
    def post(self, request, run_id: str):
        run = run_for(request, run_id, allowed=DECIDE, action="pass.submit")
        try:
            submitted = consensus.submit_pass(run=run, reviewer=request.user, actor=Actor.for_request(request))
        except StateConflict as error:
            raise _refusal(error) from None
        return Response(passes_for(run, request.user) | {"pass": submitted.number, "state": submitted.state})


class AgreementView(APIView):
    @extend_schema(summary="Agreement between the submitted passes per item kind and overall: items, agreements, "
                           "percent, Cohen's kappa (two passes), Krippendorff's alpha (nominal)",
                   responses={200: inline_serializer("Agreement", {"complete": serializers.BooleanField(),
                                                                   "kinds": serializers.DictField(),
                                                                   "overall": serializers.DictField()})})
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        return Response(agreement(run))


class ConflictsView(APIView):
    @extend_schema(summary="Items the submitted passes decided differently, each pass's decision and rationale "
                           "side by side", responses={200: inline_serializer("Conflicts", {
                               "conflicts": serializers.ListField()})})
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        return Response({"conflicts": [conflict_data(c) for c in Conflict.objects.filter(run=run)]})


class AdjudicationSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["accept", "reject", "carry", "keep"])
    rationale = serializers.CharField(allow_blank=True, default="")
    version = serializers.IntegerField(min_value=1)
    target = serializers.CharField(required=False, allow_blank=True, default="")


class ConflictDecisionView(APIView):
    @extend_schema(summary="Settle a conflict (a reviewer with the adjudicate permission who wrote none of its "
                           "passes); refused when it would leave the decisions incoherent",
                   request=AdjudicationSerializer, responses={200: inline_serializer("SettledConflict", {
                       "id": serializers.IntegerField(), "state": serializers.CharField()})})
    def post(self, request, run_id: str, conflict_id: int):
        run = run_for(request, run_id, allowed=DECIDE, action="conflict.settle")
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

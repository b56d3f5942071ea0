"""REST API of correction requests (DESIGN §4): list and raise, settle, withdraw, reply."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from drf_spectacular.types import OpenApiTypes

from records.models import MemberReport, Role
from reviews.access import DECIDE, PROPOSE, READ_RUNS, actor_labels_of, route_policy, run_for
from reviews.api_errors import ApiError, Conflict
from reviews.api_input import TextLimit
from reviews.audit import Actor

from .services import corrections
from .models import CorrectionReply, CorrectionRequest
from .passes.entering import in_review_pass
from .diffs import NoSuchVersion, version_diff, version_numbers, versions_to_compare
from .services import ProposalError, StaleVersion, StateConflict


class ReplySerializer(serializers.ModelSerializer):
    class Meta:
        model = CorrectionReply
        fields = ["author", "text", "created_at"]


class CorrectionSerializer(serializers.ModelSerializer):
    record = serializers.CharField(source="record_id")
    answered_in_version = serializers.SerializerMethodField()
    thread = ReplySerializer(source="replies", many=True, read_only=True)
    answer = serializers.SerializerMethodField()

    class Meta:
        model = CorrectionRequest
        fields = ["id", "member", "record", "line", "text", "state", "version", "source", "author", "raised_at",
                  "answer", "answered_in_version", "reason", "settled_by", "settled_at", "thread"]

    def get_answered_in_version(self, request: CorrectionRequest) -> int | None:
        return request.answered_in.version if request.answered_in_id else None

    def get_answer(self, request: CorrectionRequest) -> dict | None:
        return {"kind": request.answer, "text": request.answer_text} if request.answer else None


class RaiseSerializer(serializers.Serializer):
    member = serializers.ChoiceField(choices=Role.values)
    record = serializers.CharField(required=False, allow_blank=True, default="")
    line = serializers.IntegerField(required=False, allow_null=True, min_value=1, default=None)
    text = serializers.CharField(allow_blank=False, trim_whitespace=True, validators=[TextLimit()])


class VersionSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1)


class ReasonSerializer(VersionSerializer):
    reason = serializers.CharField(allow_blank=False, trim_whitespace=True, validators=[TextLimit()])


class WithdrawSerializer(VersionSerializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", validators=[TextLimit()])


class ReplyRequestSerializer(serializers.Serializer):
    text = serializers.CharField(allow_blank=False, trim_whitespace=True, validators=[TextLimit()])


def _refusal(error: StateConflict | ProposalError) -> ApiError:
    if isinstance(error, StaleVersion):
        return Conflict(error.message, code=error.code, details={"current": CorrectionSerializer(error.current).data})
    if isinstance(error, StateConflict):
        return Conflict(error.message, code=error.code)
    return ApiError(error.message, code="invalid", details={"field": error.field} if error.field else None)


def _requests(run):
    return CorrectionRequest.objects.filter(run=run).select_related("answered_in").prefetch_related("replies")


class CorrectionListView(generics.ListCreateAPIView):
    serializer_class = CorrectionSerializer

    @extend_schema(summary="Correction requests of the run", parameters=[
        OpenApiParameter("member", str, enum=list(Role.values)),
        OpenApiParameter("state", str, enum=list(CorrectionRequest.State.values)),
        OpenApiParameter("addressed_to_me", bool, description="Only the open requests to members the caller "
                                                               "uploaded: what it must answer")])
    @in_review_pass
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        run = run_for(self.request, self.kwargs["run_id"], allowed=READ_RUNS, action="read")
        found = _requests(run).order_by("raised_at", "id")
        params = self.request.query_params
        for name, values, lookup in (("member", Role.values, "member"),
                                     ("state", CorrectionRequest.State.values, "state")):
            value = params.get(name)
            if value:
                if value not in values:
                    raise ApiError(f"{name}: unknown value {value!r}; use one of {', '.join(values)}",
                                   code="invalid_filter", details={"parameter": name})
                found = found.filter(**{lookup: value})
        if params.get("addressed_to_me") in ("1", "true", "yes"):
            found = found.filter(state=CorrectionRequest.State.OPEN,
                                 member__in=corrections.members_uploaded_by(run, actor_labels_of(self.request.user)))
        return found

    @extend_schema(summary="Raise a correction request (reviewer)", request=RaiseSerializer,
                   responses={201: CorrectionSerializer})
    @route_policy(DECIDE, action="correction.request")
    def post(self, request, run_id: str):
        run = request.run
        body = RaiseSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            made = corrections.raise_correction(run=run, member=data["member"], record_id=data["record"],
                                                line=data["line"], text=data["text"],
                                                actor=Actor.for_request(request))
        except (StateConflict, ProposalError) as error:
            raise _refusal(error) from None
        return Response(CorrectionSerializer(made).data, status=status.HTTP_201_CREATED)


class _Settle(APIView):
    """POST …/corrections/{id}/<verb>/ with `version` (409 when stale)."""

    body = VersionSerializer
    verb = ""

    def act(self, item, data, actor):
        raise NotImplementedError

    def post(self, request, run_id: str, correction_id: int):
        run = request.run  # the subclass's handler declares the route's policy
        item = get_object_or_404(CorrectionRequest, run=run, pk=correction_id)
        body = self.body(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            self.act(item, body.validated_data, Actor.for_request(request))
        except (StateConflict, ProposalError) as error:
            raise _refusal(error) from None
        return Response(CorrectionSerializer(_requests(run).get(pk=item.pk)).data)


class ResolveView(_Settle):
    verb = "resolve"

    @extend_schema(summary="Accept a request's answer (reviewer)", request=VersionSerializer,
                   responses={200: CorrectionSerializer})
    @route_policy(DECIDE, action="correction.resolve")
    def post(self, request, run_id: str, correction_id: int):
        return super().post(request, run_id, correction_id)

    def act(self, item, data, actor):
        corrections.resolve_correction(request=item, actor=actor, expected_version=data["version"])


class ReopenView(_Settle):
    verb = "reopen"
    body = ReasonSerializer

    @extend_schema(summary="Reopen an answered or resolved request, with a reason (reviewer)",
                   request=ReasonSerializer, responses={200: CorrectionSerializer})
    @route_policy(DECIDE, action="correction.reopen")
    def post(self, request, run_id: str, correction_id: int):
        return super().post(request, run_id, correction_id)

    def act(self, item, data, actor):
        corrections.reopen_correction(request=item, reason=data["reason"], actor=actor,
                                      expected_version=data["version"])


class WithdrawView(_Settle):
    verb = "withdraw"
    body = WithdrawSerializer

    @extend_schema(summary="Withdraw a request (its author)", request=WithdrawSerializer,
                   responses={200: CorrectionSerializer})
    @route_policy(DECIDE, action="correction.withdraw")
    def post(self, request, run_id: str, correction_id: int):
        return super().post(request, run_id, correction_id)

    def act(self, item, data, actor):
        corrections.withdraw_correction(request=item, reason=data["reason"], actor=actor,
                                        expected_version=data["version"])


class ReplyView(APIView):
    @extend_schema(summary="Reply in a request's thread (reviewers, the run's agents)",
                   request=ReplyRequestSerializer, responses={201: CorrectionSerializer})
    @route_policy(PROPOSE, action="correction.reply", participant=True)
    def post(self, request, run_id: str, correction_id: int):
        run = request.run
        item = get_object_or_404(CorrectionRequest, run=run, pk=correction_id)
        body = ReplyRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            corrections.reply_to_correction(request=item, text=body.validated_data["text"],
                                            actor=Actor.for_request(request))
        except (StateConflict, ProposalError) as error:
            raise _refusal(error) from None
        return Response(CorrectionSerializer(_requests(run).get(pk=item.pk)).data, status=status.HTTP_201_CREATED)


class MemberDiffView(APIView):
    @extend_schema(summary="What changed between two versions of a member (?from=N&to=M; default: the last two)",
                   parameters=[OpenApiParameter("from", int), OpenApiParameter("to", int)],
                   responses={200: OpenApiTypes.OBJECT})
    @in_review_pass
    def get(self, request, run_id: str, member_id: str):
        run = run_for(request, run_id, allowed=READ_RUNS, action="read")
        member = get_object_or_404(MemberReport, run=run, role=member_id)
        for name in ("from", "to"):
            value = request.query_params.get(name)
            if value is not None and not value.isdigit():
                raise ApiError(f"{name}: a version number", code="invalid_parameter", details={"parameter": name})
        numbers = version_numbers(request.query_params)
        try:
            old, new = versions_to_compare(member, numbers["from"], numbers["to"])
        except NoSuchVersion as missing:
            raise ApiError(str(missing), code="not_found", status_code=404) from None
        return Response(version_diff(run=run, old=old, new=new))

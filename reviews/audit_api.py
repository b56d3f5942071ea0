"""REST API of the audit trail (DESIGN.md §4, §8): the events of a run, and the chain's check."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from .access import TRAIL_READERS, run_for
from .audit import hashed_created_at, verify_chain
from .models import AuditEvent
from .withheld import shown, withheld_chain, withheld_events


class AuditEventSerializer(serializers.ModelSerializer):
    # Exactly the string the chain hashed, so a client can recompute every hash.
    created_at = serializers.SerializerMethodField()

    class Meta:
        model = AuditEvent
        fields = ["id", "seq", "actor", "action", "object_type", "object_id", "before", "after",
                  "created_at", "prev_hash", "hash", "salt", "signature"]

    def get_created_at(self, event: AuditEvent) -> str:
        return hashed_created_at(event)

    def to_representation(self, event: AuditEvent) -> dict:
        data = super().to_representation(event)
        withheld = self.context.get("withheld") or set()
        data["before"], data["after"] = shown(event, withheld)
        if event.pk in withheld:
            data["salt"] = None  # withheld with the content: the hash confirms no guess of it
        for name in self.context.get("withheld_chain", {}).get(event.pk, ()):
            data[name] = None
        return data


class AuditEventListView(generics.ListAPIView):
    """A run's audit events, oldest first, with their chain hashes."""

    serializer_class = AuditEventSerializer

    @extend_schema(
        summary="Audit events of a run",
        description=(
            "Oldest first (seq ascending). hash = SHA-256(prev_hash + RFC 8785 JSON of "
            "{run, seq, actor, action, object_type, object_id, before, after, created_at, prev_hash, salt}), "
            "where run is the run_id and created_at is the string returned here; an event with an empty salt "
            "(written before salts) has no salt key. signature: base64 Ed25519 of hash by the audit key. "
            "Another reviewer's withheld decision shows salt null (and, if unsalted, no hashes)."
        ),
        parameters=[
            OpenApiParameter("actor", str, description="only events by this actor, e.g. token:agent-1"),
            OpenApiParameter("action", str, description="only events of this action, e.g. run.created"),
            OpenApiParameter("pass", int, description="only the events of this independent review pass"),
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_serializer(self, *args, **kwargs):
        if args and self.request is not None:
            kwargs.setdefault("context", self.get_serializer_context())
            events = list(args[0])
            withheld = withheld_events(self._run, self.request.user, events)
            kwargs["context"]["withheld"] = withheld
            kwargs["context"]["withheld_chain"] = withheld_chain(self._run, self.request.user, events, withheld)
        return super().get_serializer(*args, **kwargs)

    def get_queryset(self):
        run = self._run = run_for(self.request, self.kwargs["run_id"], allowed=TRAIL_READERS)
        events = AuditEvent.objects.filter(run=run).order_by("seq")
        params = self.request.query_params
        if params.get("actor"):
            events = events.filter(actor=params["actor"])
        if params.get("action"):
            events = events.filter(action=params["action"])
        if params.get("pass", "").isdigit():
            events = events.filter(object_type="review_pass", object_id=params["pass"])
        return events


class AuditVerifyView(APIView):
    """Recompute the run's chain; a report, so 200 whether it holds or not."""

    @extend_schema(
        summary="Verify a run's audit chain",
        responses={200: inline_serializer("AuditVerification", {
            "ok": serializers.BooleanField(),
            "events": serializers.IntegerField(required=False),
            "broken_seq": serializers.IntegerField(required=False),
            "broken_event_id": serializers.IntegerField(required=False),
            "reason": serializers.CharField(required=False),
            "signatures": serializers.JSONField(help_text="{signed, unsigned_history, failures: [{seq, event_id, "
                                                          "reason}]}: each event unsigned or wrongly signed"),
            "recorded_heads": serializers.JSONField(required=False, help_text="[{seq, event_id, reason}]: chain "
                                                    "heads recorded elsewhere (a final run's attestation) that the "
                                                    "trail no longer holds"),
        })},
    )
    def get(self, request, run_id: str):
        run = run_for(request, run_id, allowed=TRAIL_READERS)
        return Response(verify_chain(run).report())

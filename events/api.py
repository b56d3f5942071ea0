"""REST API of events (DESIGN.md §4, §13): the cursor feed, subscriptions, their deliveries."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from reviews.access import CALLER_ROUTE, READ_RUNS, check_role, route_policy
from reviews.api_errors import ApiError
from reviews.audit import Actor
from reviews.pagination import Pagination

from . import services
from .addresses import AddressRefused
from .feed import EVENT_TYPES, Cursor, payloads, read_page, visible_events
from .models import Delivery, DeliveryAttempt, Webhook

FEED_LIMIT, FEED_MAX = 100, 500


class EventFeedView(APIView):
    """The events the caller may see, oldest first; `next` is the cursor to ask with next time."""

    @extend_schema(
        summary="Events for the caller (cursor feed)",
        parameters=[
            OpenApiParameter("after", str, description="the `next` of the previous page; omit to start"),
            OpenApiParameter("run", str, description="only the events of this run"),
            OpenApiParameter("type", str, description="only events of these types (comma-separated)"),
            OpenApiParameter("limit", int, description=f"audit events per page, 1-{FEED_MAX} (default {FEED_LIMIT})"),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        check_role(request.user, READ_RUNS)
        params = request.query_params
        try:
            after = Cursor.parse(params.get("after"))
        except ValueError as error:
            raise ApiError(str(error), code="invalid_cursor") from None
        try:
            limit = int(params.get("limit", FEED_LIMIT))
        except ValueError:
            limit = 0
        if not 1 <= limit <= FEED_MAX:
            raise ApiError(f"limit must be a whole number from 1 to {FEED_MAX}", code="invalid_limit")
        events = visible_events(request.user)
        if params.get("run"):
            events = events.filter(run__run_id=params["run"])
        only = {t.strip() for t in params["type"].split(",") if t.strip()} if params.get("type") else None
        page = read_page(events, after=after, limit=limit)
        return Response({
            "events": payloads([event for _cursor, event in page], only_types=only),
            "next": str(page[-1][0]) if page else str(after),
            "has_more": len(page) == limit,
        })


class WebhookSerializer(serializers.ModelSerializer):
    event_types = serializers.ListField(child=serializers.CharField(), required=False,
                                        help_text=f"any of {', '.join(EVENT_TYPES)}; empty: all of them")
    run_ids = serializers.ListField(child=serializers.CharField(), required=False,
                                    help_text="empty: every run the caller may see")

    class Meta:
        model = Webhook
        fields = ["id", "url", "event_types", "run_ids", "active", "disabled_reason", "consecutive_failures",
                  "created_at", "updated_at"]
        read_only_fields = ["id", "disabled_reason", "consecutive_failures", "created_at", "updated_at"]


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = DeliveryAttempt
        fields = ["number", "started_at", "duration_ms", "status_code", "response_excerpt", "error"]


class DeliverySerializer(serializers.ModelSerializer):
    webhook_id = serializers.CharField(source="message_id", help_text="the `webhook-id` header of every attempt")
    attempt_log = AttemptSerializer(many=True)

    class Meta:
        model = Delivery
        fields = ["id", "webhook_id", "event", "event_type", "state", "attempts", "next_attempt_at", "created_at",
                  "delivered_at", "last_status", "attempt_log"]


def _refused(error: Exception):
    return ApiError(str(error), code="webhook_refused")


def _own_webhook(request, webhook_id: int) -> Webhook:
    check_role(request.user, READ_RUNS)
    return get_object_or_404(Webhook, pk=webhook_id, owner=request.user)  # another's is not there for you


class WebhookListCreateView(APIView):
    @extend_schema(summary="The caller's webhook subscriptions", responses={200: WebhookSerializer(many=True)})
    def get(self, request):
        check_role(request.user, READ_RUNS)
        return Response(WebhookSerializer(Webhook.objects.filter(owner=request.user), many=True).data)

    @extend_schema(summary="Subscribe a URL; the answer's `secret` is shown this once",
                   request=WebhookSerializer, responses={201: OpenApiTypes.OBJECT})
    @route_policy(READ_RUNS, action="webhook.subscribe", scope=CALLER_ROUTE)
    def post(self, request):
        serializer = WebhookSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            webhook, secret = services.create_webhook(
                owner=request.user, url=data["url"], event_types=data.get("event_types", []),
                run_ids=data.get("run_ids", []), actor=Actor.for_request(request))
        except (AddressRefused, services.WebhookRefused) as error:
            raise _refused(error) from None
        return Response(dict(WebhookSerializer(webhook).data, secret=secret), status=status.HTTP_201_CREATED)


class WebhookDetailView(APIView):
    @extend_schema(summary="One subscription", responses={200: WebhookSerializer})
    def get(self, request, webhook_id: int):
        return Response(WebhookSerializer(_own_webhook(request, webhook_id)).data)

    @extend_schema(summary="Change a subscription (`active: true` turns a disabled one back on)",
                   request=WebhookSerializer, responses={200: WebhookSerializer})
    @route_policy(READ_RUNS, action="webhook.change", scope=CALLER_ROUTE, own=True)
    def patch(self, request, webhook_id: int):
        webhook = _own_webhook(request, webhook_id)
        serializer = WebhookSerializer(webhook, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            webhook = services.update_webhook(webhook=webhook, actor=Actor.for_request(request), url=data.get("url"),
                                              event_types=data.get("event_types"), run_ids=data.get("run_ids"),
                                              active=data.get("active"))
        except (AddressRefused, services.WebhookRefused) as error:
            raise _refused(error) from None
        return Response(WebhookSerializer(webhook).data)

    @extend_schema(summary="Delete a subscription", responses={204: None})
    @route_policy(READ_RUNS, action="webhook.delete", scope=CALLER_ROUTE, own=True)
    def delete(self, request, webhook_id: int):
        services.delete_webhook(webhook=_own_webhook(request, webhook_id), actor=Actor.for_request(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeliveryListView(APIView):
    @extend_schema(summary="A subscription's deliveries, newest first, each with its attempt log",
                   responses={200: DeliverySerializer(many=True)})
    def get(self, request, webhook_id: int):
        webhook = _own_webhook(request, webhook_id)
        deliveries = webhook.deliveries.order_by("-pk").prefetch_related("attempt_log")
        if request.query_params.get("state"):
            deliveries = deliveries.filter(state=request.query_params["state"])
        paginator = Pagination()
        page = paginator.paginate_queryset(deliveries, request, view=self)
        return paginator.get_paginated_response(DeliverySerializer(page, many=True).data)


class RedeliverView(APIView):
    @extend_schema(summary="Send a delivery again (same webhook-id, a fresh budget of attempts)", request=None,
                   responses={202: DeliverySerializer})
    @route_policy(READ_RUNS, action="webhook.redeliver", scope=CALLER_ROUTE, own=True)
    def post(self, request, webhook_id: int, delivery_id: int):
        webhook = _own_webhook(request, webhook_id)
        delivery = get_object_or_404(Delivery, pk=delivery_id, webhook=webhook)
        delivery = services.request_redelivery(delivery=delivery, actor=Actor.for_request(request))
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)

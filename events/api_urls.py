from django.urls import path

from . import api

urlpatterns = [
    path("events/", api.EventFeedView.as_view(), name="api-events"),
    path("webhooks/", api.WebhookListCreateView.as_view(), name="api-webhooks"),
    path("webhooks/<int:webhook_id>/", api.WebhookDetailView.as_view(), name="api-webhook"),
    path("webhooks/<int:webhook_id>/deliveries/", api.DeliveryListView.as_view(), name="api-webhook-deliveries"),
    path("webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/redeliver/", api.RedeliverView.as_view(),
         name="api-webhook-redeliver"),
]

"""The events app's services: subscriptions (webhooks.py) and deliveries (deliveries.py)."""
from .deliveries import attempt_delivery, fan_out, retry_delay, sweep_deliveries
from .webhooks import (
    WebhookRefused,
    create_webhook,
    delete_webhook,
    disable_webhook,
    request_redelivery,
    update_webhook,
)

__all__ = ["WebhookRefused", "attempt_delivery", "create_webhook", "delete_webhook", "disable_webhook", "fan_out",
           "request_redelivery", "retry_delay", "sweep_deliveries", "update_webhook"]

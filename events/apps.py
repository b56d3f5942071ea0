from django.apps import AppConfig


class EventsConfig(AppConfig):
    """What the audit trail tells agents, as a cursor feed or as signed webhooks."""

    name = "events"
    verbose_name = "Events for agents"

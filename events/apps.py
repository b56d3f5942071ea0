from django.apps import AppConfig


class EventsConfig(AppConfig):
    """What the audit trail tells agents, as a cursor feed or as signed webhooks."""

    name = "events"
    verbose_name = "Events for agents"

    def ready(self) -> None:
        # Imported here: the tasks import models, which need the app registry.
        from reviews.audit import on_event_committed

        from . import addresses, tasks  # noqa: F401 — addresses registers its deploy check
        from .feed import may_be_delivered
        from .services import jobs

        jobs.FAN_OUT.bind(tasks.fan_out_events)
        jobs.DELIVER.bind(tasks.deliver_webhook)
        on_event_committed(wake_fan_out, wants=may_be_delivered)


def wake_fan_out(event_pk: int) -> None:
    """After the commit of an event some subscription may be owed (events.feed.may_be_delivered): the fan-out
    reads the trail from its mark (the event is in there); one queued fan-out serves every event committed
    before it starts (events/wakes.py)."""
    from . import wakes

    wakes.wake()

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def refuse_to_work_without_keys(**kwargs):
    """A worker writes audit events and signs results: with DEBUG off it does not start without its keys
    (config/keys.py). Celery logs and swallows what a signal handler raises, so this exits."""
    from django.core.exceptions import ImproperlyConfigured

    from .keys import refuse_without_keys

    try:
        refuse_without_keys()
    except ImproperlyConfigured as error:
        raise SystemExit(f"ImproperlyConfigured: {error}") from None

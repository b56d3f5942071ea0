from django.apps import AppConfig


class ReconcileConfig(AppConfig):
    name = "reconcile"
    verbose_name = "Reconciliation and results"

    def ready(self) -> None:
        # Register reconcile's tasks with Celery now: records queues `reconcile.tasks.sync_run` by
        # name (it never imports reconcile), which finds nothing until this module is imported.
        from . import tasks  # noqa: F401
        # The audit timeline's object links for mappings, issue decisions and amendments.
        from .audit_links import register_all

        register_all()

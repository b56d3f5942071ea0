from django.apps import AppConfig


class ReconcileConfig(AppConfig):
    name = "reconcile"
    verbose_name = "Reconciliation and results"

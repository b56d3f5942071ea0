from django.apps import AppConfig


class ResultsConfig(AppConfig):
    """Everything after the decisions: approval, finalization, the final result, its export bundle."""

    name = "results"
    verbose_name = "Approval and results"

    def ready(self) -> None:
        # Imported here, not at the top: a tasks module imports models, which need the app registry.
        from reviews.audit_check import on_recorded_heads

        from . import tasks
        from .services import jobs
        from .services.attest import attested_heads

        jobs.FINALIZE.bind(tasks.finalize_run)
        on_recorded_heads(attested_heads)

from django.apps import AppConfig


class ReconcileConfig(AppConfig):
    """Decisions on mappings, issues and amendments, and the reviewer's pages that take them."""

    name = "reconcile"
    verbose_name = "Reconciliation"

    def ready(self) -> None:
        # Imported here, not at the top: a tasks module imports models, which need the app registry.
        from records.services import jobs as record_jobs
        from records.services.answering import ANSWERS

        from . import tasks
        from .services.corrections import AnswerCheck
        from .audit_links import register_all

        # A validated run's reconciliation is brought up to date: records asks, reconcile does it.
        record_jobs.RUN_VALIDATED.bind(tasks.sync_run)
        # An upload answering correction requests is checked against them before anything is stored.
        ANSWERS.bind(AnswerCheck())
        # The audit timeline's object links for mappings, issue decisions and amendments.
        register_all()
        # Live pages keep polling while a correction request waits for its answer (reviews/polling.py).
        from reviews.polling import register_pending

        from .selectors import awaits_answers

        register_pending(awaits_answers)
        # The last submitted pass asks a worker for the consensus.
        from .passes.consensus import CONSENSUS

        CONSENSUS.bind(tasks.build_consensus)

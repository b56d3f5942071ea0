from django.apps import AppConfig


class RecordsConfig(AppConfig):
    """Member reports: upload, parse, hash and validate."""

    name = "records"
    verbose_name = "Member reports and records"

    def ready(self) -> None:
        # Imported here, not at the top: a tasks module imports models, which need the app registry.
        from . import tasks
        from .services import jobs

        # The tasks import the services, so the services name their work as jobs, bound here.
        jobs.PARSE.bind(tasks.parse_member_version)
        jobs.VALIDATE.bind(tasks.validate_run)

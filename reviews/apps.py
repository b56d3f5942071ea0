from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Runs, roles and audit"

    def ready(self):
        # Django reports a failed login only through this signal; we audit it (DESIGN.md §8).
        from django.contrib.auth.signals import user_login_failed

        from . import checks  # noqa: F401 — registers the system checks
        from .audit import record_login_failure  # imports models: only once the registry is ready

        user_login_failed.connect(record_login_failure, dispatch_uid="reviews.audit.record_login_failure")

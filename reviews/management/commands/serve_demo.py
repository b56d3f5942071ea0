import os
import signal
import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve the app on $PORT (default 8000) and, when REDIS_URL is set, a Celery worker with beat beside it."

    def handle(self, *args, **options):
        port = os.environ.get("PORT", "8000")
        worker = None
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            worker = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", "--beat", "--loglevel=INFO",
                 "--concurrency=2", "-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "--schedule",
                 str(settings.VAR_DIR / "celerybeat-schedule")],
                start_new_session=True,
            )
            self.stdout.write(f"worker started (pid {worker.pid}) on {settings.CELERY_BROKER_URL}")
        else:
            self.stdout.write("no REDIS_URL: tasks run in process")
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        try:
            call_command("runserver", f"127.0.0.1:{port}", use_reloader=False)
        finally:
            if worker is not None and worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                worker.wait(20)

import os
import signal
import subprocess
import sys
import threading
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from reviews.demo import login_banner

# Signals that stop the demo: Ctrl-C (SIGINT) and what `kill`, `timeout` or a service manager send.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _stop(signum, frame):
    """Turn a stop signal into the KeyboardInterrupt runserver already shuts down on."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


class Command(BaseCommand):
    help = "Serve the app on $PORT (default 8000) and, when REDIS_URL is set, a Celery worker with beat beside it."

    def handle(self, *args, **options):
        port = os.environ.get("PORT", "8000")
        worker = None
        # The worker runs in a session of its own (a terminal's Ctrl-C must not reach it half-way);
        # so every way this command stops must stop it too: the handlers below, then `finally`.
        for signum in STOP_SIGNALS:
            signal.signal(signum, _stop)
        try:
            if not settings.CELERY_TASK_ALWAYS_EAGER:
                worker = WorkerSupervisor(self.stdout)
                worker.start()
            else:
                self.stdout.write("no REDIS_URL: tasks run in process")
            settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
            # After runserver's own start-up lines, so the login is the last thing on the screen.
            banner = threading.Timer(1.5, lambda: self.stdout.write(login_banner(f"http://127.0.0.1:{port}/")))
            banner.daemon = True
            banner.start()
            call_command("runserver", f"127.0.0.1:{port}", use_reloader=False)
        except KeyboardInterrupt:
            pass
        finally:
            for signum in STOP_SIGNALS:  # a second signal while the worker winds down is not an error
                signal.signal(signum, signal.SIG_IGN)
            if worker is not None:
                worker.stop()


class WorkerSupervisor:
    """The demo's Celery worker, started again (and saying so) whenever it exits while the demo runs.

    The worker is meant never to exit on a broker fault (config/broker.py); this is the belt to those
    braces for `make run`, where nobody watches a log (issue 23). A service manager does it in production.
    """

    def __init__(self, stdout):
        self.stdout = stdout
        self.process: subprocess.Popen | None = None
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    def start(self) -> None:
        self._spawn()
        threading.Thread(target=self._watch, name="worker-supervisor", daemon=True).start()

    def _spawn(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--beat", "--loglevel=INFO",
             "--concurrency=2", "-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "--schedule",
             str(settings.VAR_DIR / "celerybeat-schedule")],
            start_new_session=True,
        )
        self.stdout.write(f"worker started (pid {self.process.pid}) on {settings.CELERY_BROKER_URL}")

    def _watch(self) -> None:
        while not self.stopping.wait(1.0):
            with self.lock:
                if self.stopping.is_set() or self.process.poll() is None:
                    continue
                self.stdout.write(f"worker (pid {self.process.pid}) exited with code {self.process.returncode}; "
                                  "starting it again")
                self._spawn()

    def stop(self) -> None:
        self.stopping.set()
        with self.lock:
            _stop_worker(self.stdout, self.process)


def _stop_worker(stdout, worker: subprocess.Popen) -> None:
    """SIGTERM to the worker's whole process group (pool and beat processes too): a warm shutdown that
    lets the running task finish. Whatever of the group is left after 30 s gets SIGKILL (acks_late:
    a killed task is redelivered)."""
    stdout.write(f"stopping worker (pid {worker.pid})")
    deadline = time.monotonic() + 30
    try:
        os.killpg(worker.pid, signal.SIGTERM)
        while time.monotonic() < deadline:
            worker.poll()  # reap the main process as soon as it exits
            os.killpg(worker.pid, 0)  # raises ProcessLookupError once no process of the group is left
            time.sleep(0.1)
        os.killpg(worker.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    worker.wait(10)

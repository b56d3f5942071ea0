"""`make run` (serve_demo) stopped by a signal stops its Celery worker too.

The worker runs in a session of its own, so a signal to serve_demo never reaches it by itself:
before, only Ctrl-C stopped it, and `kill`, `timeout` or a service manager left it consuming the
queue with the old settings. serve_demo runs here on SQLite with a private redis-server.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request

import pytest

from tests.conftest import ROOT
from tests.reliability.services import PrivateRedis, free_port, wait_for

pytestmark = pytest.mark.worker


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status < 500
    except OSError:
        return False


@pytest.fixture
def redis():
    server = PrivateRedis()
    server.start()
    yield server
    server.stop()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_serve_demo_stopped_by_a_signal_stops_its_worker(signum, redis, tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")} | {
        "DEBUG": "1", "PORT": str(port), "REDIS_URL": redis.url, "VAR_DIR": str(tmp_path),
        "PYTHONUNBUFFERED": "1", "CELERY_QUEUE": "aas-serve-demo-test"}
    log = tmp_path / "serve_demo.log"
    demo = subprocess.Popen([sys.executable, "manage.py", "serve_demo"], cwd=ROOT, env=env,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    worker_pid = None
    try:
        match = wait_for(lambda: re.search(r"worker started \(pid (\d+)\)", log.read_text()), "the worker to start")
        worker_pid = int(match.group(1))
        wait_for(lambda: answers(f"http://127.0.0.1:{port}/healthz"), "the web server to answer")
        assert group_alive(worker_pid)
        # The worker's pool processes have started: the whole session is what must go.
        wait_for(lambda: "ready" in log.read_text(), "the worker to be ready", timeout=60)

        demo.send_signal(signum)  # to serve_demo only, as `kill PID` or `timeout` would
        demo.wait(60)  # raises TimeoutExpired if serve_demo does not stop

        assert not group_alive(worker_pid), log.read_text()[-2000:]
        assert f"stopping worker (pid {worker_pid})" in log.read_text()
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait(10)
        if worker_pid is not None and group_alive(worker_pid):
            os.killpg(worker_pid, signal.SIGKILL)


def test_serve_demo_starts_a_worker_that_died_again_and_says_so(redis, tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")} | {
        "DEBUG": "1", "PORT": str(port), "REDIS_URL": redis.url, "VAR_DIR": str(tmp_path),
        "PYTHONUNBUFFERED": "1", "CELERY_QUEUE": "aas-serve-demo-test"}
    log = tmp_path / "serve_demo.log"
    demo = subprocess.Popen([sys.executable, "manage.py", "serve_demo"], cwd=ROOT, env=env,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    pids = []
    try:
        first = int(wait_for(lambda: re.search(r"worker started \(pid (\d+)\)", log.read_text()),
                             "the worker to start").group(1))
        pids.append(first)
        wait_for(lambda: "ready" in log.read_text(), "the worker to be ready", timeout=60)
        os.killpg(first, signal.SIGKILL)  # dies however it dies

        again = wait_for(lambda: re.findall(r"worker started \(pid (\d+)\)", log.read_text())[1:],
                         "the worker to be started again", timeout=30)
        pids.append(int(again[0]))
        assert f"worker (pid {first}) exited with code" in log.read_text()
        assert group_alive(pids[1])
        demo.send_signal(signal.SIGTERM)
        demo.wait(60)
        assert not group_alive(pids[1]), log.read_text()[-2000:]
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait(10)
        for pid in pids:
            if group_alive(pid):
                os.killpg(pid, signal.SIGKILL)

"""Private services for fault tests: a redis-server of their own on a free port, and app processes on it.

Never the shared Redis or PostgreSQL server: an outage is made by stopping the private one.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, wait_until


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(predicate, what: str, timeout: float = 60.0, interval: float = 0.1):
    """`tests.conftest.wait_until` with the patience of a process starting or a service coming back."""
    return wait_until(predicate, what, timeout=timeout, interval=interval)


class PrivateRedis:
    """A throwaway redis-server (no persistence) that a test may stop and start again on the same port."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed")
        self.binary = binary
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def answers(self) -> bool:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        try:  # one try: redis-py's default retries take 3.5 s to say a stopped server is gone
            return bool(redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.5,
                                    retry=Retry(NoBackoff(), 0)).ping())
        except redis.exceptions.RedisError:
            return False

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for(self.answers, f"private redis on port {self.port} to answer")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(20)
        self.process = None
        assert not self.answers()


def database_url_of_the_tests() -> str:
    from django.db import connection

    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def app_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    return env | {"DEBUG": "1", "DATABASE_URL": database_url_of_the_tests()} | extra


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def stop_group(process: subprocess.Popen | None) -> None:
    """SIGTERM to the process's group, SIGKILL if it has not gone within 20 s."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


class PrivatePostgres:
    """A throwaway PostgreSQL cluster (initdb, trust auth) on a free port, run as the `postgres` user,
    that a test may stop and start again; never the shared server."""

    def __init__(self, *settings: str) -> None:
        """`settings`: server settings for every start, e.g. "max_connections=30"."""
        import pwd
        import tempfile

        if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
            pytest.skip("initdb/pg_ctl are not installed")
        try:
            self.owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("no postgres user to run a private cluster as")
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="aas-private-pg-"))
        os.chown(self.root, self.owner.pw_uid, self.owner.pw_gid)
        self.data = self.root / "data"
        self.settings = "".join(f" -c {setting}" for setting in settings)

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/aas"

    def _as_owner(self, *args: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=120)

    def create(self) -> None:
        self._as_owner("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        self.start()
        self._as_owner("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "aas")

    def start(self) -> None:
        self._as_owner("pg_ctl", "-D", str(self.data), "-w", "-l", str(self.root / "log"), "-o",
                       f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off{self.settings}", "start")

    def stop(self) -> None:
        self._as_owner("pg_ctl", "-D", str(self.data), "-w", "-m", "fast", "stop")

    def destroy(self) -> None:
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)

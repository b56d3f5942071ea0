"""The broker refuses writes or dies under a running worker: the worker retries and never exits (DESIGN §10).

A private redis-server is filled to its `maxmemory` (noeviction, so every write fails with OOM), set
read-only, or killed with SIGKILL and started again; the Celery worker must still be running afterwards,
and an upload made during the fault is processed once the broker is back, without restarting anything.
"""
from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request

import pytest
import redis as redis_py

from tests.conftest import _token_for, seed_bytes
from tests.reliability.services import wait_for
from tests.reliability.test_redis_outage import private_stack, status_of, upload  # noqa: F401 — the fixture

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def client(private) -> redis_py.Redis:
    return redis_py.Redis(host="127.0.0.1", port=private.port, socket_timeout=2)


def fill(private) -> int:
    """Cap the server at 2 MB with noeviction and write junk until it refuses; the number of junk keys."""
    conn = client(private)
    conn.config_set("maxmemory-policy", "noeviction")
    conn.config_set("maxmemory", "2mb")
    written = 0
    with pytest.raises(redis_py.exceptions.OutOfMemoryError):
        while written < 10_000:
            conn.set(f"junk:{written}", b"x" * 64 * 1024)
            written += 1
    # Well over the cap, not on its edge: client buffers make the used memory wander by some kilobytes.
    conn.config_set("maxmemory", str(conn.info("memory")["used_memory"] // 2))
    return written


def free(private, written: int) -> None:
    conn = client(private)
    conn.delete(*[f"junk:{n}" for n in range(written)])
    conn.config_set("maxmemory", "0")


def health(base: str, key: str | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(f"{base}/healthz", headers={"Authorization": f"Token {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def still_running(worker, seconds: float, logs) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert worker.poll() is None, (logs / "worker.log").read_text()[-4000:]
        time.sleep(0.2)


def assert_processed(run_id: str, role: str) -> None:
    wait_for(lambda: status_of(run_id, role) == "validated", f"{role} to be validated after the fault", timeout=90)


@pytest.fixture
def first_upload_done(private_stack, run_factory):
    from django.db import connection

    run = run_factory(created_by="broker-fault-agent")  # the uploading agent is the run's participant
    key = _token_for("broker-fault-agent", "agent")
    connection.close()
    assert upload(private_stack["base"], key, run.run_id, "result", seed_bytes("000"))[0] == 201
    wait_for(lambda: status_of(run.run_id, "result") == "validated", "the first upload to be validated")
    return run, key


def test_a_redis_out_of_memory_does_not_stop_the_worker(private_stack, first_upload_done):
    run, key = first_upload_done
    redis, base, worker = private_stack["redis"], private_stack["base"], private_stack["worker"]
    written = fill(redis)
    status, body = upload(base, key, run.run_id, "memory", seed_bytes("002"))
    assert status == 201, body  # stored; queueing it failed, the sweep will queue it again
    still_running(worker, 8, private_stack["logs"])
    assert status_of(run.run_id, "memory") == "received"
    # /healthz writes to the broker: it names the failing part, and only an admin reads the error text.
    status, body = health(base)
    assert status == 503 and body["checks"]["broker"] == "refuses writes" and body["failing"] == ["broker"]
    assert "details" not in body and "127.0.0.1" not in json.dumps(body) and "maxmemory" not in json.dumps(body)
    status, body = health(base, _token_for("broker-fault-admin", "admin"))
    assert status == 503 and "maxmemory" in body["details"]["broker"]

    free(redis, written)
    assert_processed(run.run_id, "memory")
    assert worker.poll() is None


def test_a_read_only_redis_does_not_stop_the_worker(private_stack, first_upload_done):
    run, key = first_upload_done
    redis, base, worker = private_stack["redis"], private_stack["base"], private_stack["worker"]
    conn = client(redis)
    conn.replicaof("127.0.0.1", "1")  # a replica of nobody: read-only, as a failed-over primary becomes
    try:
        status, body = upload(base, key, run.run_id, "memory", seed_bytes("002"))
        assert status == 201, body
        still_running(worker, 8, private_stack["logs"])
    finally:
        conn.replicaof("no", "one")
    assert_processed(run.run_id, "memory")
    assert worker.poll() is None


def test_a_killed_and_restarted_redis_does_not_stop_the_worker(private_stack, first_upload_done):
    run, key = first_upload_done
    redis, base, worker = private_stack["redis"], private_stack["base"], private_stack["worker"]
    os.killpg(redis.process.pid, signal.SIGKILL)
    redis.process.wait(10)
    redis.process = None
    status, body = upload(base, key, run.run_id, "memory", seed_bytes("002"))
    assert status == 201, body
    still_running(worker, 3, private_stack["logs"])
    redis.start()
    still_running(worker, 3, private_stack["logs"])
    assert_processed(run.run_id, "memory")
    assert worker.poll() is None

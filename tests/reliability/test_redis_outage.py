"""Redis stops while agents upload: the uploads are accepted, and processed once it is back (DESIGN §10).

The web app (gunicorn) and a Celery worker with beat run as real processes on a private redis-server;
the test stops that server, uploads over HTTP, starts it again on the same port, and waits for the
worker to bring every upload to `validated`. The shared Redis is never touched.
"""
from __future__ import annotations

import hashlib
import json
import urllib.request
import uuid

import pytest

from records.models import MemberVersion
from tests.conftest import _token_for, seed_bytes
from tests.reliability.services import PrivateRedis, app_env, free_port, spawn, stop_group, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def upload(base: str, key: str, run_id: str, role: str, content: bytes) -> tuple[int, dict]:
    body = json.dumps({"role": role, "content": content.decode("utf-8")}).encode()
    request = urllib.request.Request(f"{base}/api/runs/{run_id}/members/", data=body, method="POST", headers={
        "Authorization": f"Token {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, json.loads(response.read())


def healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def status_of(run_id: str, role: str) -> str:
    return MemberVersion.objects.filter(member__run__run_id=run_id, member__role=role).values_list(
        "status", flat=True).first()


@pytest.fixture
def private_stack(tmp_path):
    redis = PrivateRedis()
    redis.start()
    port = free_port()
    env = app_env(REDIS_URL=redis.url, CELERY_QUEUE=f"aas-outage-{uuid.uuid4().hex[:6]}",
                  PIPELINE_SWEEP_EVERY_SECONDS="1", PIPELINE_STUCK_AFTER_SECONDS="1", VAR_DIR=str(tmp_path))
    processes = []
    try:
        processes.append(spawn(["-m", "gunicorn", "config.wsgi", "--workers", "1", "--bind", f"127.0.0.1:{port}",
                                "--log-level", "warning"], env, tmp_path / "web.log"))
        processes.append(spawn(["-m", "celery", "-A", "config", "worker", "--beat", "--concurrency=1",
                                "--pool=solo", "-Q", env["CELERY_QUEUE"], "--schedule", str(tmp_path / "beat"),
                                "--loglevel=INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"],
                               env, tmp_path / "worker.log"))
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: healthy(base), "the web app to answer /healthz")
        yield {"redis": redis, "base": base, "logs": tmp_path, "worker": processes[1]}
    finally:
        for process in processes:
            stop_group(process)
        redis.stop()


def test_uploads_during_a_redis_outage_are_accepted_and_processed_when_it_returns(private_stack, run_factory):
    from django.db import connection

    redis, base = private_stack["redis"], private_stack["base"]
    run = run_factory(created_by="outage-agent")  # the uploading agent is the run's participant
    key = _token_for("outage-agent", "agent")
    connection.close()

    # With Redis up, the pipeline runs end to end.
    assert upload(base, key, run.run_id, "result", seed_bytes("000"))[0] == 201
    wait_for(lambda: status_of(run.run_id, "result") == "validated", "the first upload to be validated")

    redis.stop()
    accepted = {}
    for role, seed in (("memory", "002"), ("workflow", "001")):
        status, body = upload(base, key, run.run_id, role, seed_bytes(seed))
        assert status == 201, body
        assert body["sha256"] == hashlib.sha256(seed_bytes(seed)).hexdigest()
        accepted[role] = body
    # Nothing could have taken them further: no broker, so no worker has seen them.
    assert {status_of(run.run_id, role) for role in accepted} == {"received"}

    redis.start()
    for role in accepted:
        wait_for(lambda: status_of(run.run_id, role) == "validated", f"{role} to be validated after the outage",
                 timeout=90)
    stored = MemberVersion.objects.get(member__run=run, member__role="memory")
    assert hashlib.sha256(bytes(stored.content)).hexdigest() == accepted["memory"]["sha256"]
    assert stored.counts["declarations"] == 18
    connection.close()


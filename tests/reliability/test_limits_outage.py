"""Redis stops while the request and failed-login limits count there (DESIGN §9, §10; reviews/limits.py).

No login and no API call fails: each process counts in its own memory until Redis answers again
(the limits still hold, per process), the outage is logged once, and counting goes back to Redis
when it returns. The limits cache points at a private redis-server the test stops; the shared
Redis is never touched.
"""
from __future__ import annotations

import logging
import socket
import threading

import pytest
from django.test import Client

from reviews import limits
from reviews.models import AuditEvent
from tests.reliability.services import PrivateRedis

pytestmark = pytest.mark.django_db


def limits_cache_on(settings, url: str) -> None:
    """The production limits cache (its options, its key prefix), on another Redis."""
    config = settings.CACHES["limits"]
    if not config["BACKEND"].endswith("RedisCache"):
        pytest.skip("REDIS_URL is not set: `make test` sets it")
    settings.CACHES = settings.CACHES | {"limits": config | {"LOCATION": url}}


@pytest.fixture
def redis(settings):
    server = PrivateRedis()
    server.start()
    limits_cache_on(settings, server.url)
    yield server
    server.stop()


def stored_keys(server: PrivateRedis) -> list[bytes]:
    import redis as redis_py

    client = redis_py.Redis(host="127.0.0.1", port=server.port)
    try:
        return sorted(client.keys("aas-limits:*"))
    finally:
        client.close()


def log_in(client: Client, username: str, password: str) -> int:
    return client.post("/login/", {"username": username, "password": password}).status_code


def test_logins_and_api_calls_go_on_while_redis_is_down_and_still_lock_out_per_process(
        redis, settings, reviewer, agent, caplog):
    settings.LOGIN_FAILURE_LIMIT = 3
    settings.API_THROTTLE_RATE = "3/minute"
    assert log_in(Client(), "reviewer-1", "wrong") == 200
    assert agent.get("/api/whoami/").status_code == 200
    assert len(stored_keys(redis)) == 2  # counted in Redis: the user name's failures and the agent's requests

    redis.stop()
    with caplog.at_level(logging.WARNING, logger="reviews.limits"):
        # Counted afresh in this process: three more failures lock the user name out, no 500 on the way.
        assert [log_in(Client(), "reviewer-1", "wrong") for _ in range(3)] == [200, 200, 200]
        assert log_in(Client(), "reviewer-1", "pw-reviewer-1-123") == 429
        assert AuditEvent.objects.filter(action="login.locked", object_id="reviewer-1").count() == 1
        # Another user logs in; the agent has a fresh budget here, and it holds.
        assert log_in(Client(), "auditor-x", "wrong") == 200
        assert [agent.get("/api/whoami/").status_code for _ in range(4)] == [200, 200, 200, 429]
    outage = [record for record in caplog.records if "unavailable" in record.getMessage()]
    assert len(outage) == 1, [record.getMessage() for record in caplog.records]  # said once, not per request
    assert "ConnectionError" in outage[0].getMessage()


def test_counting_goes_back_to_redis_when_it_answers_again(redis, settings, reviewer, monkeypatch, caplog):
    settings.LOGIN_FAILURE_LIMIT = 3
    monkeypatch.setattr(limits, "RETRY_SECONDS", 0)  # every call tries Redis again
    redis.stop()
    assert log_in(Client(), "reviewer-1", "wrong") == 200  # counted in this process
    redis.start()
    assert stored_keys(redis) == []

    with caplog.at_level(logging.INFO, logger="reviews.limits"):
        assert [log_in(Client(), "reviewer-1", "wrong") for _ in range(3)] == [200, 200, 200]
    assert any("answers again" in record.getMessage() for record in caplog.records)
    assert len(stored_keys(redis)) == 1
    # The failure counted during the outage is forgotten: three in Redis reach the limit now.
    assert log_in(Client(), "reviewer-1", "pw-reviewer-1-123") == 429


def test_a_redis_that_never_answers_times_out_and_the_process_counts_instead(settings, agent):
    """A hung Redis times out (the limits cache's socket timeout) like a stopped one fails: counted in this process."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # the kernel completes connections; nothing ever reads or answers them
    try:
        limits_cache_on(settings, f"redis://127.0.0.1:{silent.getsockname()[1]}/0")
        settings.API_THROTTLE_RATE = "2/minute"
        counted = []
        worker = threading.Thread(target=lambda: counted.append(limits.hit("silent-probe", 60)), daemon=True)
        worker.start()
        worker.join(30)  # a bound on hanging, not a speed test
        assert counted == [1]
        assert [agent.get("/api/whoami/").status_code for _ in range(3)] == [200, 200, 429]
    finally:
        silent.close()

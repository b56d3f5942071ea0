"""Failed-login and API request limits hold across processes (DESIGN §9; reviews/limits.py).

Two gunicorn servers (one worker process each, as two hosts behind a load balancer would be) share
the test database and a private redis-server; a client alternates between them. Counted in each
process's memory, every process would allow the whole budget (N processes, N times the limit);
counted in Redis, the processes share one budget.
"""
from __future__ import annotations

import threading

import pytest
import requests
from django.db import connection

from reviews.models import AuditEvent
from tests.conftest import _token_for
from tests.reliability.services import (
    PrivateRedis,
    app_env,
    free_port,
    spawn,
    stop_group,
    wait_for,
)

LIMIT = 4


def answers(base: str) -> bool:
    try:
        return requests.get(f"{base}/healthz", timeout=2).status_code == 200
    except requests.RequestException:
        return False


@pytest.fixture
def two_servers(tmp_path):
    """Two app servers, one process each, on this test's database and one private Redis."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (make test)")
    redis = PrivateRedis()
    redis.start()
    env = app_env(REDIS_URL=redis.url, VAR_DIR=str(tmp_path), LOGIN_FAILURE_LIMIT=str(LIMIT),
                  API_THROTTLE_RATE=f"{LIMIT}/minute")
    servers, bases = [], []
    try:
        for name in ("a", "b"):
            port = free_port()
            servers.append(spawn(["-m", "gunicorn", "config.wsgi", "--workers", "1", "--bind", f"127.0.0.1:{port}",
                                  "--log-level", "warning"], env, tmp_path / f"web-{name}.log"))
            bases.append(f"http://127.0.0.1:{port}")
        for base in bases:
            wait_for(lambda base=base: answers(base), f"{base} to answer /healthz")
        yield bases
    finally:
        for server in servers:
            stop_group(server)
        redis.stop()


def log_in(session: requests.Session, base: str, username: str, password: str) -> int:
    """The app's login form, as a browser posts it (CSRF cookie and token); the status of the POST."""
    session.get(f"{base}/login/", timeout=30)
    form = {"username": username, "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]}
    return session.post(f"{base}/login/", data=form, allow_redirects=False, timeout=30).status_code


@pytest.mark.django_db(transaction=True)
def test_failed_logins_on_two_servers_count_against_one_limit(two_servers):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    # Hashed as the servers' settings verify it (the tests' own fast hasher is not among theirs).
    hasher = PBKDF2PasswordHasher()
    user = get_user_model().objects.create_user("shared-reviewer")
    user.password = hasher.encode("pw-shared-reviewer-123", hasher.salt(), iterations=1000)
    user.save(update_fields=["password"])
    connection.close()
    a, b = two_servers
    session = requests.Session()
    # Half the limit on each server: each process alone has seen too few to lock anyone out.
    statuses = [log_in(session, base, "shared-reviewer", "wrong") for base in (a, b) * (LIMIT // 2)]
    assert statuses == [200] * LIMIT

    # The right password now, on either server: locked out by the failures both of them saw.
    assert log_in(session, a, "shared-reviewer", "pw-shared-reviewer-123") == 429
    assert log_in(requests.Session(), b, "shared-reviewer", "pw-shared-reviewer-123") == 429
    locked = AuditEvent.objects.filter(run=None, action="login.locked", object_id="shared-reviewer")
    assert [event.after["failures"] for event in locked] == [LIMIT]  # audited once, by whichever saw it happen
    connection.close()


@pytest.mark.django_db(transaction=True)
def test_api_requests_on_two_servers_count_against_one_rate(two_servers):
    key = _token_for("shared-agent", "agent")
    connection.close()
    a, b = two_servers
    headers = {"Authorization": f"Token {key}"}
    statuses = [requests.get(f"{base}/api/whoami/", headers=headers, timeout=30).status_code
                for base in (a, b) * (LIMIT // 2)]
    assert statuses == [200] * LIMIT

    for base in (a, b):
        refused = requests.get(f"{base}/api/whoami/", headers=headers, timeout=30)
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "throttled"
    # Another agent's budget is its own.
    other = _token_for("shared-agent-2", "agent")
    connection.close()
    assert requests.get(f"{a}/api/whoami/", headers={"Authorization": f"Token {other}"}, timeout=30).status_code == 200


def test_concurrent_hits_from_many_connections_are_each_counted_once(settings):
    """Eight threads, each with its own Redis connection, hit one key: every hit gets its own count.

    DRF's throttles read a list of request times and write it back, so overlapping requests keep
    only one of their writes; an atomic increment loses none.
    """
    from reviews import limits

    if not settings.CACHES["limits"]["BACKEND"].endswith("RedisCache"):
        pytest.skip("REDIS_URL is not set: `make test` sets it")
    seen, lock = [], threading.Lock()

    def hit_many():
        counts = [limits.hit("concurrency-probe", 60) for _ in range(50)]
        with lock:
            seen.extend(counts)

    threads = [threading.Thread(target=hit_many) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen) == list(range(1, 401))
    assert limits.counts(["concurrency-probe"]) == {"concurrency-probe": 400}


def test_every_count_in_redis_expires_even_one_that_incr_made_anew(settings):
    """Redis's INCR on a key that expired just after Django's existence check makes it again with no
    expiry; a count that never expired would lock a user name out for good. Such a key is given its window."""
    import redis as redis_py

    from reviews import limits

    config = settings.CACHES["limits"]
    if not config["BACKEND"].endswith("RedisCache"):
        pytest.skip("REDIS_URL is not set: `make test` sets it")
    client = redis_py.Redis.from_url(config["LOCATION"])
    stored = f"{config['KEY_PREFIX']}:1:expiry-probe"
    try:
        assert [limits.hit("expiry-probe", 60) for _ in range(2)] == [1, 2]
        assert 0 < client.ttl(stored) <= 60

        client.set(stored, 0)  # as INCR leaves it, one step before: a count without an expiry
        assert limits.hit("expiry-probe", 60) == 1
        assert 0 < client.ttl(stored) <= 60
    finally:
        client.close()

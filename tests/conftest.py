"""Personas, API clients and a real Celery worker for the tests that need one."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from config.celery import app as celery_app

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SEEDS = SHARED / "seeds"
CORPUS = SHARED / "corpus"


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    """Personas get UI passwords; hashing them at full strength would dominate the suite's time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _nothing_kept_from_another_test():
    """No test starts from what another's pages kept (reconcile.blockers: standings, views, records' facts)."""
    yield
    from reconcile.blockers import forget_kept

    forget_kept()


@pytest.fixture(autouse=True)
def _fresh_limits(monkeypatch):
    """Throttle and failed-login counts (reviews/limits.py) start empty in every test: no test inherits another's.

    With REDIS_URL the limits cache shares the tests' Redis database with Celery's queues, so only
    its own keys are deleted (its clear() would be FLUSHDB). What is cleared is the cache configured
    when the test starts, even if the test points the limits cache at another Redis. A test that
    makes Redis fail leaves nothing behind: the fallback's counts are cleared and its "down" mark
    is restored.
    """
    from django.conf import settings

    from reviews import limits

    config = settings.CACHES["limits"]
    monkeypatch.setattr(limits, "_shared_down_until", 0.0)
    _clear_limits(config)
    yield
    _clear_limits(config)


def _clear_limits(config: dict) -> None:
    from django.core.cache.backends.locmem import LocMemCache

    from reviews import limits

    limits._local.clear()
    if not config["BACKEND"].endswith("RedisCache"):
        LocMemCache(config["LOCATION"], {}).clear()  # every LocMemCache of one LOCATION shares its store
        return
    import redis

    client = redis.Redis.from_url(config["LOCATION"])
    try:
        keys = list(client.scan_iter(match=f"{config['KEY_PREFIX']}:*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture(scope="session", autouse=True)
def _signing_key(tmp_path_factory):
    """Finalization signs (DESIGN §7 "Signed"), and so does every audit event (§8, the audit key): the
    session gets real Ed25519 keys of its own, in a temporary directory, never the developer's var/signing
    keys. The environment carries them too, so the real Celery worker (a subprocess) signs with the same keys."""
    from django.conf import settings

    from results.signing import create_key
    from reviews.audit_keys import ensure_audit_key

    directory = tmp_path_factory.mktemp("signing")
    path, public, audit = directory / "ed25519.pem", directory / "public", directory / "audit-ed25519.pem"
    create_key(path, public)
    ensure_audit_key(audit)
    saved = (settings.SIGNING_KEY_PATH, settings.SIGNING_PUBLIC_KEYS_DIR, settings.AUDIT_KEY_PATH, os.environ.copy())
    settings.SIGNING_KEY_PATH, settings.SIGNING_PUBLIC_KEYS_DIR = str(path), str(public)
    settings.AUDIT_KEY_PATH = str(audit)
    os.environ.update(SIGNING_KEY_PATH=str(path), SIGNING_PUBLIC_KEYS_DIR=str(public), AUDIT_KEY_PATH=str(audit))
    yield path
    settings.SIGNING_KEY_PATH, settings.SIGNING_PUBLIC_KEYS_DIR, settings.AUDIT_KEY_PATH, environ = saved
    os.environ.clear()
    os.environ.update(environ)


@pytest.fixture(autouse=True)
def _tasks_run_in_process():
    """Unless a test asks for the real worker, queued tasks run eagerly in the test process."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


def _token_for(name: str, role: str) -> str:
    from reviews.audit import Actor
    from reviews.services import issue_token

    _, key = issue_token(name=name, role=role, password="pw-" + name + "-123", actor=Actor.command("test"))
    return key


def _persona(name: str, role: str | None):
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    if role is None:
        user = get_user_model().objects.create_user(name, password="pw-" + name + "-123")
        client = APIClient()
        client.force_authenticate(user)
        client.user = user
        return client
    key = _token_for(name, role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    client.user = get_user_model().objects.get(username=name)
    client.token_key = key
    return client


@pytest.fixture
def agent(db):
    return _persona("agent-1", "agent")


@pytest.fixture
def reviewer(db):
    return _persona("reviewer-1", "reviewer")


@pytest.fixture
def second_reviewer(db):
    return _persona("reviewer-2", "reviewer")


@pytest.fixture
def auditor(db):
    return _persona("auditor-1", "auditor")


@pytest.fixture
def outsider(db):
    """Logged in, but holds no role."""
    return _persona("outsider-1", None)


@pytest.fixture
def anonymous():
    from rest_framework.test import APIClient

    return APIClient()


RUN_FIELDS = {
    "system": "Supermemory",
    "title": "Supermemory analysis",
    "run_date": "2026-09-25",
    "target_class": "host integration",
    "boundary_kind": "subsystem-only",
    "reviewed_boundary": "0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f",
    "evidence_tier": "code-grounded",
    "analysis_cutoff": "2026-09-25",
}


@pytest.fixture
def run_factory(db):
    from reviews.audit import Actor
    from reviews.services import create_run

    counter = {"n": 0}

    def make(run_id: str | None = None, created_by: str | None = "agent-1", **overrides):
        """A run created by `created_by` (the `agent` persona's user by default: its participant, DESIGN §9)."""
        from django.contrib.auth import get_user_model

        counter["n"] += 1
        fields = RUN_FIELDS | overrides
        user = get_user_model().objects.get_or_create(username=created_by)[0] if created_by else None
        return create_run(actor=Actor.command("test"), run_id=run_id or f"AAS-2026-09-25-test-{counter['n']:02d}",
                          user=user, **fields)

    return make


def seed_bytes(name: str) -> bytes:
    matches = sorted(SEEDS.glob(f"{name}*"))
    assert matches, f"no seed {name}"
    return matches[0].read_bytes()


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker):
    """A real `celery worker` on Redis, pointed at the test database, on a queue of this session."""
    from django.conf import settings
    from django.db import connection

    if not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set: `make test` sets it")
    queue = f"aas-test-{uuid.uuid4().hex[:8]}"
    db = connection.settings_dict
    database_url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    # Webhook tests deliver to a receiver on loopback, and retry within the test's patience.
    env = dict(os.environ, DATABASE_URL=database_url, CELERY_QUEUE=queue, DEBUG="1", WEBHOOK_ALLOW_PRIVATE="1",
               WEBHOOK_RETRY_BASE_MS="50")
    log = open(ROOT / "var" / "test-worker.log", "wb") if (ROOT / "var").exists() else subprocess.DEVNULL
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue, "-n", f"{queue}@%h", "--concurrency=1",
         "--loglevel=INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            replies = celery_app.control.ping(timeout=1, destination=None)
        except Exception:  # noqa: BLE001 — the broker may still be starting
            replies = []
        if replies:
            break
        if proc.poll() is not None:
            raise RuntimeError("celery worker exited during start-up")
        time.sleep(0.5)
    yield {"process": proc, "queue": queue, "name": f"{queue}@{socket.gethostname()}"}
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture
def worker(celery_worker_process, transactional_db):
    """Send tasks through Redis to the real worker for this test (its effects are committed rows)."""
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_default_queue)
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_default_queue = celery_worker_process["queue"]
    yield celery_worker_process
    celery_app.conf.task_always_eager, celery_app.conf.task_default_queue = previous
    _wait_until_idle(celery_worker_process)


def _wait_until_idle(worker: dict, timeout: float = 30.0) -> None:
    """Until the worker has nothing queued, reserved or running, twice in a row: what a test's tasks queued
    after what it waited for (a finalization's event fan-out, say) must end before the test's flush
    TRUNCATEs the tables, or the two deadlock (a teardown error seen once in CI-like runs)."""
    import redis
    from django.conf import settings

    broker = redis.Redis.from_url(settings.REDIS_URL)
    inspect = celery_app.control.inspect(destination=[worker["name"]], timeout=1, limit=1)  # its one reply
    deadline, quiet = time.monotonic() + timeout, 0
    while quiet < 2 and time.monotonic() < deadline and worker["process"].poll() is None:
        busy = broker.llen(worker["queue"]) or any((inspect.active() or {}).values()) \
            or any((inspect.reserved() or {}).values())
        quiet = 0 if busy else quiet + 1
        if quiet < 2:
            time.sleep(0.1)


def wait_until(predicate, what: str = "the condition", timeout: float = 30.0, interval: float = 0.2):
    """predicate()'s first true value, asked every `interval` seconds; AssertionError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout}s")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database, with TRUNCATE of the audit table allowed (UPDATE and DELETE stay refused).

    Transactional tests (the `worker` fixture, threads) end with Django's flush, which TRUNCATEs
    every table; the append-only trigger would refuse it. Only this test database loses the
    TRUNCATE guard; tests/reviews/test_audit.py switches it back on to show it holds.
    """
    from django.db import connection

    with django_db_blocker.unblock():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ALTER TABLE reviews_auditevent DISABLE TRIGGER reviews_auditevent_no_truncate")


# Debian's chromium, as the browser tests drive it (Playwright cannot download browsers here).
CHROMIUM = shutil.which("chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


@pytest.fixture
def browser():
    """One headless Chromium per test; closed afterwards with the test's own database connection, which
    the ORM opened in Playwright's context (tests marked `browser` also set DJANGO_ALLOW_ASYNC_UNSAFE)."""
    from django.db import connection
    from playwright.sync_api import sync_playwright

    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
        connection.close()

"""Reads under load and slow clients (DESIGN §11 "reads under load", README "What stands before gunicorn").

- reads: gunicorn (4 gevent workers on psycopg's pool, as the README's recipe runs it) on the seed run (the four seeds
  through the real pipeline, tasks in process); 16 client threads read one page at a time in 2-second
  windows alternating with GET /api/whoami/ (same clients, same server): the runs list, the run page,
  the reconciliation page and the findings API (`GET /api/runs/<id>/validation/`). Per page: p50/p95
  and the throughput ratio to the trivial endpoint (target >= 0.3x).
- slow clients: as many connections as workers each send an upload's headers and then its body a byte
  at a time; beside them, GET /api/whoami/ is timed. Under gunicorn's default sync workers each slow
  connection holds a worker; under the README's gevent workers (`--worker-class gevent
  --worker-connections 100`) it waits in the event loop and the other request is answered at once.
"""
from __future__ import annotations

import socket
import threading
import time
import urllib.parse
import urllib.request
import uuid

from bench_common import report, seed_files
from bench_server import GEVENT, alternating, gunicorn, load

READERS = 16
SLOW_SECONDS = 6.0


def _seed_run():
    from django.db import transaction

    from records.services import ingest_member_report
    from reviews.audit import Actor
    from reviews.services import create_run

    actor = Actor.command("bench")
    run = create_run(actor=actor, run_id="AAS-2026-01-05-reads-01", system="Bench", title="reads under load",
                     run_date="2026-01-05", reviewed_boundary="0e12f0b3a65af1cf7b03f48561f20ddf4369bc3f")
    roles = {"000": "result", "001": "workflow", "002": "memory", "003": "memory-b"}
    for path in seed_files():
        role = roles[path.name[:3]]
        if role == "memory-b":
            continue  # two memory reports would be one role twice: the run holds the first three seeds
        with transaction.atomic():
            ingest_member_report(run=run, role=role, filename=path.name, content=path.read_bytes(), actor=actor)
    return run


def _reader(secret_key: str):
    """A reviewer's session cookie (signed with the server's `secret_key`) and an agent's token, made
    straight in the bench database."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore
    from django.test.utils import override_settings

    from reviews.audit import Actor
    from reviews.services import issue_token

    if not get_user_model().objects.filter(username="bench-reader").exists():
        issue_token(name="bench-reader", role="reviewer", password="bench-pass-123", actor=Actor.command("bench"))
    user = get_user_model().objects.get(username="bench-reader")
    with override_settings(SECRET_KEY=secret_key):
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
    _, key = issue_token(name="bench-reader-agent", role="agent", actor=Actor.command("bench"))
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}", key


def bench_reads(database_url: str, redis_url: str):
    run = _seed_run()
    secret_key = "bench-" + uuid.uuid4().hex
    cookie, key = _reader(secret_key)
    pages = [("runs list", "/", {"Cookie": cookie}),
             ("run page", f"/runs/{run.run_id}/", {"Cookie": cookie}),
             ("reconciliation page", f"/runs/{run.run_id}/reconcile/", {"Cookie": cookie}),
             ("findings API", f"/api/runs/{run.run_id}/validation/", {"Authorization": f"Token {key}"})]
    env = {"CONN_MAX_AGE": "0", "SESSION_COOKIE_SECURE": "0", "SECRET_KEY": secret_key}
    with gunicorn(database_url, redis_url, env=env, args=GEVENT) as base:
        def get(path: str, headers: dict):
            def fetch(client):
                request = urllib.request.Request(base + path, headers=headers)
                with urllib.request.urlopen(request, timeout=60) as response:
                    # A session the server refused would be redirected to the login page: not this page.
                    assert response.status == 200 and response.geturl() == base + path, response.geturl()
                    response.read()
            return fetch

        trivial = get("/api/whoami/", {"Authorization": f"Token {key}"})
        for _, path, headers in pages:  # warm every worker on every page
            load(get(path, headers), 1.0, READERS)
        for name, path, headers in pages:
            got = alternating(get(path, headers), trivial, clients=READERS)
            report(f"reads, {READERS} clients: {name} p50 · p95", got["p50"] * 1000, "ms",
                   f"p95 {got['p95'] * 1000:.0f} ms; {got['rate']:.0f} req/s, {got['errors']} errors")
            report(f"reads, {READERS} clients: {name} / trivial endpoint", got["ratio"], "x",
                   f"target >= 0.3; GET /api/whoami/ {got['baseline_rate']:.0f} req/s; pairs "
                   + ", ".join(f"{r:.2f}" for r in got["ratios"]))


def _slow_upload(base: str, key: str, run_id: str, seconds: float, stop: threading.Event) -> None:
    """Send an upload's headers, then its body a byte at a time over `seconds` (then give up)."""
    address = urllib.parse.urlsplit(base)
    body = b'{"role": "memory", "content": "' + b"x" * 200 + b'"}'
    with socket.create_connection((address.hostname, address.port), timeout=seconds + 5) as sock:
        sock.sendall((f"POST /api/runs/{run_id}/members/ HTTP/1.1\r\nHost: {address.hostname}\r\n"
                      f"Authorization: Token {key}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n").encode())
        pause = seconds / len(body)
        for byte in body:
            if stop.is_set():
                return
            sock.sendall(bytes([byte]))
            time.sleep(pause)


def bench_slow_clients(database_url: str, redis_url: str):
    from reviews.audit import Actor
    from reviews.services import create_run, issue_token

    token, key = issue_token(name="bench-slow-agent", role="agent", actor=Actor.command("bench"))
    run = create_run(actor=Actor.command("bench"), user=token.user, run_id="AAS-2026-01-05-slow-01", system="Bench",
                     title="slow clients", run_date="2026-01-05", reviewed_boundary="0" * 40)
    workers = "4"
    layouts = [("sync workers (gunicorn's default)", ()),
               ("gevent workers, as README's Deployment says", GEVENT)]
    for name, args in layouts:
        with gunicorn(database_url, redis_url, workers=workers, args=args) as base:
            def whoami() -> float:
                start = time.perf_counter()
                request = urllib.request.Request(base + "/api/whoami/", headers={"Authorization": f"Token {key}"})
                try:
                    with urllib.request.urlopen(request, timeout=SLOW_SECONDS + 10) as response:
                        response.read()
                except OSError:
                    return float("inf")
                return time.perf_counter() - start

            for _ in range(int(workers) * 2):
                whoami()  # warm every worker
            stop = threading.Event()
            slow = [threading.Thread(target=_slow_upload, args=(base, key, run.run_id, SLOW_SECONDS, stop))
                    for _ in range(int(workers))]
            for thread in slow:
                thread.start()
            time.sleep(0.5)  # the slow connections are in, each in its body
            beside = whoami()  # the first request after them: it waits for a worker if they hold all
            stop.set()
            for thread in slow:
                thread.join()
            report(f"slow clients, {name}: a request beside them", beside * 1000, "ms",
                   f"{workers} connections sending bodies byte by byte over {SLOW_SECONDS:.0f} s; {workers} workers")

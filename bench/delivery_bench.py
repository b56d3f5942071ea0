#!/usr/bin/env python
"""Webhook delivery figures of DESIGN.md §11 (issue 20 item 5). Prints one line per figure; asserts nothing.

    make bench     (or: DEBUG=1 .venv/bin/python bench/delivery_bench.py [--events N])

Its own database (as bench/benchmark.py makes one), Redis as broker and one real worker
process. A local receiver (loopback, so WEBHOOK_ALLOW_PRIVATE=1) answers 200, except the first
attempt of every tenth delivery, which gets 500 (retried after WEBHOOK_RETRY_BASE_MS=50).

- event → delivered: an audit event committed, then the time until the receiver has its POST;
  p50/p95 over 100 events one at a time, with the bare signed POST to the same receiver as
  baseline (target p95 under 1 s);
- 1,000 events written as fast as one writer commits them: how long until all are delivered,
  how many never arrived, and how many arrived twice with a 200 for the same `webhook-id`.

Kept apart from bench/benchmark.py, which is past the 600 lines a module may have.
"""
from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from benchmark import delete_queue, prepare_database, redis_answers, report, wait_for  # noqa: E402


class Receiver:
    def __init__(self):
        self.first_seen: dict[str, float] = {}
        self.delivered: dict[str, int] = {}  # webhook-id → 200s answered
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length", 0)))
                message = self.headers["webhook-id"]
                with receiver.lock:
                    first = message not in receiver.first_seen
                    if first:
                        receiver.first_seen[message] = time.perf_counter()
                    fail = first and len(receiver.first_seen) % 10 == 0
                    if not fail:
                        receiver.delivered[message] = receiver.delivered.get(message, 0) + 1
                self.send_response(500 if fail else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def main():
    events = int(sys.argv[sys.argv.index("--events") + 1]) if "--events" in sys.argv else 1000
    if not redis_answers() and not os.environ.get("REDIS_URL"):
        report("webhook deliveries", "skipped", "", "Redis does not answer")
        return
    database_url, drop = prepare_database()
    redis_url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/10"
    queue = f"aas-bench-hooks-{uuid.uuid4().hex[:6]}"
    os.environ.update({"DATABASE_URL": database_url, "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "config.settings",
                       "REDIS_URL": redis_url, "CELERY_QUEUE": queue, "WEBHOOK_ALLOW_PRIVATE": "1",
                       "WEBHOOK_RETRY_BASE_MS": "50", "WEBHOOK_DISABLE_AFTER_FAILURES": "1000000"})
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per POST
    (ROOT / "var").mkdir(exist_ok=True)
    log = open(ROOT / "var" / "bench-delivery-worker.log", "wb")
    name = f"{queue}@{socket.gethostname()}"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue, "-n", name, "--concurrency=1",
         "--loglevel=WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    from config.celery import app

    app.conf.task_always_eager, app.conf.task_default_queue = False, queue
    try:
        wait_for(lambda: worker.poll() is None and app.control.ping(timeout=0.5, destination=[name]), timeout=90,
                 interval=0.2)
        measure(events)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
        log.close()
        delete_queue(queue)
        from django.db import connections

        connections.close_all()
        drop()


def measure(events: int) -> None:
    from datetime import datetime, timezone

    from events.sending import post, signed_headers
    from events.services import create_webhook
    from reviews.audit import Actor, record_event
    from reviews.services import create_run, issue_token

    actor = Actor.command("bench")
    issue_token(name="bench-reviewer", role="reviewer", actor=actor)
    from django.contrib.auth import get_user_model

    owner = get_user_model().objects.get(username="bench-reviewer")
    receiver = Receiver()
    _webhook, secret = create_webhook(owner=owner, url=receiver.url, event_types=["correction.requested"],
                                      run_ids=[], actor=actor)
    run = create_run(actor=actor, run_id="AAS-2026-01-04-hooks-01", system="Bench", title="deliveries",
                     run_date="2026-01-04", target_class="t", boundary_kind="subsystem-only",
                     reviewed_boundary="0" * 40, evidence_tier="code-grounded", analysis_cutoff="2026-01-04")

    def write(n: int) -> None:
        record_event(run=run, actor=actor, action="correction.requested", object_type="correction_request",
                     object_id=n, after={"text": f"request {n}"})

    def arrived() -> int:
        with receiver.lock:
            return len(receiver.delivered)

    bare = []
    for n in range(30):
        body = '{"bench": %d}' % n
        headers = signed_headers(secret=secret, message_id=f"bare_{n}", sent_at=datetime.now(timezone.utc), body=body)
        started = time.perf_counter()
        post(url=receiver.url, host="127.0.0.1", port=receiver.server.server_address[1], address="127.0.0.1",
             public=False, headers=headers, body=body, timeout=5)
        bare.append((time.perf_counter() - started) * 1000)
    with receiver.lock:
        receiver.first_seen.clear(), receiver.delivered.clear()

    latencies = []
    for n in range(100):
        before = arrived()
        started = time.perf_counter()
        write(n)
        wait_for(lambda: arrived() > before, timeout=60, interval=0.001)
        latencies.append((time.perf_counter() - started) * 1000)
    p50, p95 = statistics.median(latencies), statistics.quantiles(latencies, n=20)[18]
    base = statistics.median(bare)
    report("event -> webhook delivered p50 (100, one at a time)", p50, "ms",
           "incl. every tenth delivery's retry after 50 ms")
    report("event -> webhook delivered p95", p95, "ms", "target < 1000 ms")
    report("  baseline: bare signed POST to the receiver p50", base, "ms", f"ratio p50 {p50 / base:.1f}x")

    already = arrived()
    started = time.perf_counter()
    for n in range(events):
        write(1000 + n)
    written = time.perf_counter() - started
    try:
        wait_for(lambda: arrived() >= already + events, timeout=600, interval=0.05)
    except TimeoutError:
        pass
    took = time.perf_counter() - started
    with receiver.lock:
        delivered = len(receiver.delivered) - already
        twice = sum(1 for count in receiver.delivered.values() if count > 1)
    report(f"{events} events written by one writer", written * 1000, "ms")
    report(f"{events} events delivered (every tenth after one 500)", took * 1000, "ms",
           f"{events / took:.0f} deliveries/s, one worker")
    report("  lost (never delivered)", events - delivered, "", "target 0")
    report("  delivered twice (same webhook-id, two 200s)", twice, "", "target 0")


if __name__ == "__main__":
    main()

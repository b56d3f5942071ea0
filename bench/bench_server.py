"""A gunicorn server on the bench database, as production runs it (DEBUG off), and clients that load it:
what the uploads, reads-under-load and slow-client parts share."""
from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

from bench_common import ROOT, bench_keys, delete_queue, free_port

# The README's production recipe: gevent workers, every connection from psycopg's pool (on by default with
# DEBUG off, DB_POOL_MAX_SIZE=4 per worker).
GEVENT = ("--worker-class", "gevent", "--worker-connections", "100", "--timeout", "60")


@contextlib.contextmanager
def gunicorn(database_url: str, redis_url: str, *, workers: str = "", env: dict | None = None,
             args: tuple[str, ...] = ()):
    """Serve config.wsgi on a free loopback port; yields its base URL and stops it (and its queue) after."""
    if not redis_url:  # with DEBUG off the app refuses to start without it (config/settings.py)
        raise SystemExit("the gunicorn parts of the bench need Redis (REDIS_URL, or db 10 on 127.0.0.1:6379)")
    port = free_port()
    queue = f"aas-bench-{uuid.uuid4().hex[:6]}"
    workers = workers or os.environ.get("BENCH_WORKERS", "4")
    # Served as in production: DEBUG off (Django's debug cursor records and formats every query,
    # which weighs on the 11-query upload far more than on the 3-query trivial endpoint).
    server_env = dict(os.environ, DATABASE_URL=database_url, DEBUG="0", CELERY_QUEUE=queue,
                      SECRET_KEY="bench-" + uuid.uuid4().hex, ALLOWED_HOSTS="127.0.0.1,localhost",
                      SECURE_SSL_REDIRECT="0",  # loopback: in production a proxy terminates TLS
                      API_THROTTLE_RATE="1000000/minute",  # many clients on one token measure the server
                      PYTHONWARNINGS="ignore:No directory at",  # whitenoise: no collectstatic for a benchmark
                      **bench_keys())
    if redis_url:
        server_env["REDIS_URL"] = redis_url
    server_env.update(env or {})
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "--workers", workers, "--bind", f"127.0.0.1:{port}",
         "--log-level", "warning", *args], cwd=ROOT, env=server_env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2)
                break
            except Exception:  # noqa: BLE001 — still starting
                time.sleep(0.2)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(20)
        if redis_url:
            delete_queue(queue)


def load(fn, seconds: float, clients: int) -> dict:
    """`clients` threads calling fn(client) for `seconds`: rate, errors, done and each call's latency."""
    lock = threading.Lock()
    done, errors, latencies = [0], [0], []
    stop = time.perf_counter() + seconds

    def loop(client):
        while time.perf_counter() < stop:
            start = time.perf_counter()
            try:
                fn(client)
                elapsed = time.perf_counter() - start
                with lock:
                    done[0] += 1
                    latencies.append(elapsed)
            except Exception as error:  # noqa: BLE001 — counted, not hidden
                with lock:
                    errors[0] += 1
                    if errors[0] == 1:
                        print(f"  first error: {type(error).__name__}: {error}", file=sys.stderr)
    threads = [threading.Thread(target=loop, args=(c,)) for c in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()
    return {"rate": done[0] / (time.perf_counter() - start), "errors": errors[0], "done": done[0],
            "p50": statistics.median(latencies) if latencies else 0.0,
            "p95": latencies[int(len(latencies) * 0.95)] if latencies else 0.0}


def alternating(fn, baseline, *, clients: int, pairs: int = 3, seconds: float = 2.0) -> dict:
    """fn and baseline measured in alternating windows (fn, baseline, …), so a change of the shared
    machine's load falls on both; the ratio is the median of the pairs' ratios."""
    ours, theirs = [], []
    for _ in range(pairs):
        ours.append(load(fn, seconds, clients))
        theirs.append(load(baseline, seconds, clients))
    ratios = [o["rate"] / t["rate"] if t["rate"] else 0.0 for o, t in zip(ours, theirs)]
    return {"ours": ours, "theirs": theirs, "ratios": ratios, "ratio": statistics.median(ratios),
            "rate": statistics.median(o["rate"] for o in ours),
            "baseline_rate": statistics.median(t["rate"] for t in theirs),
            "p50": statistics.median(o["p50"] for o in ours), "p95": statistics.median(o["p95"] for o in ours),
            "errors": sum(o["errors"] for o in ours), "baseline_errors": sum(t["errors"] for t in theirs),
            "done": sum(o["done"] for o in ours)}

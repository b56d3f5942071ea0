"""The upload parts of the benchmark (DESIGN §11 "uploads"): gunicorn under 8 uploading clients against the
trivial endpoint, and the in-process profile of one upload request."""
import json
import os
import threading
import time
import urllib.request
import uuid

from bench_common import ROOT, delete_queue, report, seed_files
from bench_server import GEVENT, alternating, gunicorn, load


def profile_uploads(redis_url: str, uploads: int = 200):
    """The request `bench_uploads` times, in process: statements, CPU and cProfile of one upload of seed 003
    as JSON (a new version each time) next to GET /api/whoami/. DEBUG off, as the server runs."""
    import cProfile
    import pstats
    from collections import Counter

    from django.conf import settings
    from django.db import connection
    from django.test import Client

    from config.celery import app
    from reviews.audit import Actor
    from reviews.services import create_run, issue_token

    settings.DEBUG = False  # no debug cursor: it records and formats every statement
    app.conf.task_always_eager = not redis_url  # queued as the server queues them (main() runs them eagerly)
    token, key = issue_token(name=f"bench-profile-{uuid.uuid4().hex[:6]}", role="agent", actor=Actor.command("bench"))
    run = create_run(actor=Actor.command("bench"), user=token.user,  # its participant (DESIGN §9)
                     run_id="AAS-2026-01-04-profile-uploads-01", system="Bench",
                     title="uploads", run_date="2026-01-04", reviewed_boundary="0" * 40)
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    seed = next(p for p in seed_files() if p.name.startswith("003")).read_bytes()
    head = json.dumps({"role": "memory", "content": seed.decode() + "\n<!-- bench "})[:-2].encode()
    counter = iter(range(10**6))

    def upload():
        body = head + f' {next(counter)} -->\\n"}}'.encode()
        response = client.post(f"/api/runs/{run.run_id}/members/", data=body, content_type="application/json")
        assert response.status_code == 201, response.content[:300]

    def whoami():
        assert client.get("/api/whoami/").status_code == 200

    def statements(fn) -> list[str]:
        seen = []

        def log(execute, sql, params, many, context):
            seen.append(sql)
            return execute(sql, params, many, context)
        with connection.execute_wrapper(log):
            fn()
        return seen

    def cpu_ms(fn, n) -> float:
        start = time.process_time()
        for _ in range(n):
            fn()
        return (time.process_time() - start) / n * 1000

    try:
        for _ in range(20):  # warm: imports, connections, the first version
            upload()
            whoami()
        seen = statements(upload)
        print(f"statements per upload: {len(seen)} (and BEGIN, COMMIT); per whoami: {len(statements(whoami))}")
        for verb, n in Counter(sql.split(None, 1)[0].upper() for sql in seen).most_common():
            print(f"  {verb:<8} {n}")
        if os.environ.get("BENCH_SQL"):  # each statement, cut to a line: where the count comes from
            for sql in seen:
                print("    " + " ".join(sql.split())[:160])
        print(f"CPU per upload: {min(cpu_ms(upload, uploads // 4) for _ in range(3)):.2f} ms; per whoami: "
              f"{min(cpu_ms(whoami, uploads // 4) for _ in range(3)):.2f} ms (this process: Django, not PostgreSQL)")
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(uploads):
            upload()
        profiler.disable()
        stats = pstats.Stats(profiler)
        here = str(ROOT) + "/(records|reconcile|reviews)/"
        stats.sort_stats("cumulative").print_stats(here, 20)
        stats.sort_stats("tottime").print_stats(20)
        if os.environ.get("BENCH_CALLERS"):  # who calls the functions matching it
            stats.print_callers(os.environ["BENCH_CALLERS"])
    finally:
        if redis_url:
            delete_queue(settings.CELERY_TASK_DEFAULT_QUEUE)


def bench_uploads(database_url: str, redis_url: str):
    """Uploads per second with 8 concurrent clients, against GET /api/whoami/ on the same server.

    The two are measured in alternating 2-second windows (upload, trivial, upload, ...; three pairs per
    layout), so a change of the machine's load (other processes share its cores) falls on both; the
    ratio printed is the median of the pairs' ratios. Two layouts: every client uploading to one run
    (each upload waits for the run's row lock, which orders its audit chain) and each client uploading
    to a run of its own (as agents each uploading their own run's members). Both with a connection per
    request (sync workers, CONN_MAX_AGE=0, no pool) and as the README's recipe runs them (gevent workers,
    psycopg's pool), DESIGN §11.
    """
    from records.models import MemberVersion
    from reviews.audit import Actor
    from reviews.services import create_run, issue_token

    clients = 8
    token, key = issue_token(name=f"bench-agent-{uuid.uuid4().hex[:6]}", role="agent", actor=Actor.command("bench"))
    runs = [create_run(actor=Actor.command("bench"), user=token.user, run_id=f"AAS-2026-01-04-uploads-{n:02d}",
                       system="Bench",
                       title="uploads", run_date="2026-01-04", reviewed_boundary="0" * 40).run_id
            for n in range(clients + 1)]
    shared_run, own_runs = runs[0], runs[1:]
    seed = next(p for p in seed_files() if p.name.startswith("003")).read_bytes()
    headers = {"Authorization": f"Token {key}", "Content-Type": "application/json"}
    counter = iter(range(10**6))
    lock = threading.Lock()
    # The JSON body around a varying tail, encoded once: the clients share the server's 2 cores, so
    # they should not spend them re-encoding 31 KB per request.
    head = json.dumps({"role": "memory", "content": seed.decode() + "\n<!-- bench "})[:-2].encode()
    mode = "queued to Redis" if redis_url else "tasks in process"
    workers = os.environ.get("BENCH_WORKERS", "4")
    created = 0
    variants = (("CONN_MAX_AGE=0", {"CONN_MAX_AGE": "0", "DB_POOL_MAX_SIZE": "0"}, (), 0.5),
                ("pool, gevent workers", {"CONN_MAX_AGE": "0"}, GEVENT, 0.3))
    for variant, env, args, target in variants:
        with gunicorn(database_url, redis_url, env=env, args=args) as base:
            def upload_to(run_of):
                def send(client):
                    with lock:
                        n = next(counter)
                    # Distinct bytes each time so every request stores a new version.
                    body = head + f' {n} -->\\n"}}'.encode()
                    request = urllib.request.Request(f"{base}/api/runs/{run_of(client)}/members/", data=body,
                                                     headers=headers, method="POST")
                    with urllib.request.urlopen(request, timeout=60) as response:
                        assert response.status == 201, response.status
                return send

            def trivial(client):
                request = urllib.request.Request(f"{base}/api/whoami/", headers=headers)
                with urllib.request.urlopen(request, timeout=60) as response:
                    response.read()

            layouts = [("one run", upload_to(lambda client: shared_run)),
                       ("a run per client", upload_to(lambda client: own_runs[client]))]
            # Warm every gunicorn worker on both endpoints first (imports, first connections), then measure.
            for _, upload in layouts:
                created += load(upload, 1.0, clients)["done"]
            load(trivial, 1.0, clients)
            for name, upload in layouts:
                got = alternating(upload, trivial, clients=clients)
                created += got["done"]
                where = f"{name}, {variant}"
                report(f"uploads/s, {clients} clients, {where}", got["rate"], "req/s",
                       f"{mode}, {got['errors']} errors; windows: "
                       + ", ".join(f"{w['rate']:.0f}" for w in got["ours"]))
                report(f"GET /api/whoami/ per s, {clients} clients, alternating", got["baseline_rate"], "req/s",
                       f"{got['baseline_errors']} errors; windows: "
                       + ", ".join(f"{w['rate']:.0f}" for w in got["theirs"]))
                report(f"ratio uploads / trivial endpoint, {where}", got["ratio"], "x",
                       f"target >= {target}; median of pairs {', '.join(f'{r:.2f}' for r in got['ratios'])}; "
                       f"{workers} workers")
    stored = MemberVersion.objects.filter(member__run__run_id__in=runs).count()
    report("uploads answered 201 / versions stored", f"{created}/{stored}", "",
           "MISMATCH" if stored != created else ("nothing lost" if created else "NO UPLOAD SUCCEEDED"))

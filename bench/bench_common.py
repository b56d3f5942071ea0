"""Helpers every part of the benchmark shares: its database, Redis, ports and the report line."""
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent


def _shared() -> Path:
    """The shared inputs: BENCH_SHARED, else the nearest `shared/` folder above the checkout (worktrees nest)."""
    if os.environ.get("BENCH_SHARED"):
        return Path(os.environ["BENCH_SHARED"])
    for parent in ROOT.parents:
        if (parent / "shared" / "seeds").is_dir():
            return parent / "shared"
    return ROOT.parent / "shared"


SEEDS = _shared() / "seeds"
sys.path.insert(0, str(ROOT))


def pg_available(base: str) -> bool:
    return subprocess.run(["pg_isready", "-d", base + "/postgres", "-q"], capture_output=True).returncode == 0


def prepare_database() -> tuple[str, callable]:
    base = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
    if pg_available(base):
        name = f"aas_bench_{os.getpid()}"
        subprocess.run(["createdb", "-d", base + "/postgres", name], check=False, capture_output=True)
        subprocess.run(["psql", base + "/postgres", "-qc", f'CREATE DATABASE "{name}"'], capture_output=True)

        def drop():
            subprocess.run(["psql", base + "/postgres", "-qc", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'],
                           capture_output=True)
        return f"{base}/{name}", drop
    folder = tempfile.mkdtemp(prefix="aas-bench-")
    return f"sqlite:///{folder}/bench.sqlite3", lambda: None


def redis_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def alternately(first, second, rounds: int) -> tuple[list[float], list[float]]:
    """Seconds of `rounds` calls of `first` and of `second`, called one after the other each round, so that
    on this shared machine a burst of load falls on both (a baseline timed apart moved ratios by a third)."""
    import time

    timings: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for action, times in zip((first, second), timings):
            start = time.perf_counter()
            action()
            times.append(time.perf_counter() - start)
    return timings


def report(name: str, value, unit: str = "", note: str = ""):
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    print(f"{name:<58} {text:>12} {unit:<10} {note}")


def delete_queue(name: str) -> None:
    """Delete a Celery queue of the bench's and the messages left in it. Declared first: kombu's Redis
    transport deletes only the bindings this process knows, so a bare queue_delete left the queue (filled
    by the server or the worker) in Redis."""
    from kombu import Exchange, Queue

    from config.celery import app

    with app.connection_for_write() as conn:
        queue = Queue(name, Exchange(name), routing_key=name)(conn.default_channel)
        queue.declare()
        queue.delete()


def bench_keys() -> dict[str, str]:
    """Signing keys of the bench's own, in a new temporary directory, as the environment names them: with DEBUG off
    a server or worker does not start without its keys (config/keys.py), as `make run` makes them."""
    from results.signing import ensure_key
    from reviews.audit_keys import ensure_audit_key

    keys = Path(tempfile.mkdtemp(prefix="aas-bench-keys-"))
    ensure_key(keys / "ed25519.pem", keys / "public")
    ensure_audit_key(keys / "audit-ed25519.pem")
    return {"SIGNING_KEY_PATH": str(keys / "ed25519.pem"), "SIGNING_PUBLIC_KEYS_DIR": str(keys / "public"),
            "AUDIT_KEY_PATH": str(keys / "audit-ed25519.pem")}


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def seed_files():
    return sorted(SEEDS.glob("*.txt"))

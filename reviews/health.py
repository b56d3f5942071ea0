"""/healthz: is each part the app depends on up, and, for an admin, why not (DESIGN §10).

The database answers a SELECT; the broker must take a write (a key with a one-minute expiry), because
a Redis out of memory or read-only still answers PING and the connection test alone said "ok" while
no task could be queued (issue 23). Anonymous callers get status words only (`ok`, `down`,
`refuses writes`); an authenticated admin (session or API token) also gets `details`: the error's
class and text, which name hosts and ports.
"""
from __future__ import annotations

import socket

from celery import current_app as celery_app
from django.conf import settings
from django.db import connection

from .access import ADMIN, roles_of

PROBE_KEY = "aas-healthz:" + socket.gethostname()


def database_check() -> tuple[str, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as error:  # noqa: BLE001 — any failure means "down"; the admin is told why
        return "down", _detail(error)
    return "ok", ""


def broker_check() -> tuple[str, str]:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "ok (in-process tasks, no broker configured)", ""
    url = celery_app.conf.broker_url or ""
    if url.startswith(("redis://", "rediss://", "unix://")):
        return _redis_write(url)
    try:  # another transport: a connection is the most we can ask of it
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as error:  # noqa: BLE001
        return "down", _detail(error)
    return "ok", ""


def _redis_write(url: str) -> tuple[str, str]:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1, retry=Retry(NoBackoff(), 0))
    try:
        client.set(PROBE_KEY, "1", ex=60)
    except redis.exceptions.ResponseError as error:  # OOM, READONLY, MISCONF: it answers but takes no writes
        return "refuses writes", _detail(error)
    except Exception as error:  # noqa: BLE001
        return "down", _detail(error)
    finally:
        client.close()
    return "ok", ""


def _detail(error: Exception) -> str:
    return f"{error.__class__.__name__}: {error}"


def _is_admin(request) -> bool:
    """An admin by session, or by an `Authorization: Token` header (this view is not a DRF view)."""
    try:
        if ADMIN in roles_of(getattr(request, "user", None)):
            return True
        header = request.headers.get("Authorization", "")
        if not header.startswith("Token "):
            return False
        from .authentication import HashedTokenAuthentication

        user, _token = HashedTokenAuthentication().authenticate_credentials(header[len("Token "):].strip())
        return ADMIN in roles_of(user)
    except Exception:  # noqa: BLE001 — a bad token, or the database down: not an admin, status words only
        return False


def health_report(request) -> tuple[dict, bool]:
    """The body of /healthz and whether every part is up."""
    results = {"database": database_check(), "broker": broker_check()}
    healthy = all(status.startswith("ok") for status, _ in results.values())
    body = {"status": "ok" if healthy else "down", "checks": {part: status for part, (status, _) in results.items()}}
    failing = [part for part, (status, _) in results.items() if not status.startswith("ok")]
    if failing:
        body["failing"] = failing
    if _is_admin(request):
        body["details"] = {part: detail for part, (_, detail) in results.items() if detail}
    return body, healthy

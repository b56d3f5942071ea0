"""Failed-login limits (DESIGN §9): counted per user name and per client address, for every login path.

The counting lives in the authentication backend, so the app's login form, Django admin's login
and any other `authenticate()` call share it. While a user name or an address is locked out, the
backend refuses before checking the password (the password hasher never runs); the app's login
form answers 429 (reviews/views.py LoginView). A lockout is audited once, when it begins.

Failures are counted in reviews/limits.py for LOGIN_FAILURE_WINDOW_SECONDS from the first one:
in Redis when REDIS_URL is set, so every worker process and host shares one count per user name
(N processes do not allow N times the limit), with an atomic increment, so exactly one process
sees the count reach the limit and audits it. While Redis does not answer, each process counts
on its own (logins go on, each process still locks out after the limit; see reviews/limits.py).

Failures are also counted per client address only when LOGIN_CLIENT_ADDRESS names where that
address is read (`REMOTE_ADDR` when clients connect directly, or the request header a trusted
proxy sets, e.g. `HTTP_X_REAL_IP`): behind a proxy REMOTE_ADDR is the proxy's for everyone, and
counting it would let anyone lock every user out. An address may fail five times as often as one
user name, since several reviewers can share one address.
"""
from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied

from . import limits
from .services import record_login_lockout


def _username(username) -> str:
    return str(username or "")[:150].strip().lower()


def _address(request) -> str:
    """The client address failures are counted by, or "" when they are not (see the module docstring)."""
    source = settings.LOGIN_CLIENT_ADDRESS
    if request is None or not source:
        return ""
    return request.META.get(source, "").split(",")[0].strip()


def _keys(request, username) -> tuple[str, ...]:
    address = _address(request)
    # Hashed: a user name or an address header may hold spaces or control characters, which cache keys must not.
    user_key = f"login-failures:user:{_digest(_username(username))}"
    return (user_key, f"login-failures:addr:{_digest(address)}") if address else (user_key,)


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _limits() -> tuple[int, int]:
    return settings.LOGIN_FAILURE_LIMIT, settings.LOGIN_FAILURE_LIMIT * 5


def is_locked(request, username) -> bool:
    keys = _keys(request, username)
    counts = limits.counts(keys)
    return any(counts.get(key, 0) >= limit for key, limit in zip(keys, _limits()))


def record_failure(request, username) -> None:
    window = settings.LOGIN_FAILURE_WINDOW_SECONDS
    counts = [limits.hit(key, window) for key in _keys(request, username)]
    if any(count == limit for count, limit in zip(counts, _limits())):
        record_login_lockout(username=str(username or "")[:150], address=_address(request), failures=max(counts))


def clear(request, username) -> None:
    limits.forget(_keys(request, username)[0])


class ThrottledModelBackend(ModelBackend):
    """Django's username/password backend behind the failed-login limits."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(self._username_field())
        if is_locked(request, username):
            raise PermissionDenied("too many failed logins")  # stops authenticate() at once
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            record_failure(request, username)
        else:
            clear(request, username)
        return user

    @staticmethod
    def _username_field() -> str:

        return get_user_model().USERNAME_FIELD

"""Request rates for API clients (DESIGN §9), read from settings at request time.

DRF's own classes copy their rates when imported; these read `API_THROTTLE_RATE` and
`API_ANON_THROTTLE_RATE` on every request, so an operator (or a test) can change them.
Requests are counted in reviews/limits.py: in Redis when REDIS_URL is set, one budget for every
worker process and host; with one atomic increment per request, in a window that starts at the
caller's first request (DRF's request-time list, read and written back, loses requests between
processes). While Redis does not answer, each process counts on its own and no request fails.
"""
from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from . import limits


class _CountingThrottle:
    """DRF's rate and key for a caller, counted by reviews/limits.py instead of DRF's history list."""

    def allow_request(self, request, view):
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        return limits.hit(self.key, self.duration) <= self.num_requests

    def wait(self):
        """Retry-After: the whole window, since when the caller's window began is not kept (at most this long)."""
        return self.duration


class TokenRateThrottle(_CountingThrottle, UserRateThrottle):
    """Requests per authenticated caller (its user: every token of one agent shares the budget)."""

    scope = "token"

    def get_rate(self):
        return settings.API_THROTTLE_RATE


class AnonymousRateThrottle(_CountingThrottle, AnonRateThrottle):
    """Requests per address to the endpoints open without a token (the schema and its docs)."""

    scope = "anonymous"

    def get_rate(self):
        return settings.API_ANON_THROTTLE_RATE

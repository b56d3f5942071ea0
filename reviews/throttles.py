"""Request rates for API clients (DESIGN.md §9), read from settings at request time.

DRF's own classes copy their rates when imported; these read `API_THROTTLE_RATE` and
`API_ANON_THROTTLE_RATE` on every request, so an operator (or a test) can change them.
Counts live in Django's default cache: per process with the local-memory cache, so a server
with N worker processes allows up to N times the rate.
"""
from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class TokenRateThrottle(UserRateThrottle):
    """Requests per authenticated caller (its user: every token of one agent shares the budget)."""

    scope = "token"

    def get_rate(self):
        return settings.API_THROTTLE_RATE


class AnonymousRateThrottle(AnonRateThrottle):
    """Requests per address to the endpoints open without a token (the schema and its docs)."""

    scope = "anonymous"

    def get_rate(self):
        return settings.API_ANON_THROTTLE_RATE

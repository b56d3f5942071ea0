import pytest


@pytest.fixture(autouse=True)
def _fresh_rate_counters():
    """Throttle and failed-login counts live in the per-process cache: each test starts from zero."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()

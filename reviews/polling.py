"""Live pages (issue 20 item 3): what a page waits for, and how long it waits between asks.

A page region polls with htmx while something is pending and stops when nothing is: its
fragment carries `hx-trigger="load delay:Ns"` and a `poll` counter in its URL only while
pending, each answer waits longer (1 s × 1.5^n up to a cap), and the answer without a
trigger ends the polling. What counts as pending beyond the pipeline comes from apps above
reviews: reconcile registers "correction requests awaiting an answer" from its AppConfig.ready,
so the run page (records) waits for an answer it cannot name.
"""
from __future__ import annotations

from collections.abc import Callable

Pending = Callable[[object], bool]
_pending: list[Pending] = []
MAX_STEP = 20


def register_pending(check: Pending) -> None:
    """`check(run)` is true while the run waits for something a page should show when it arrives."""
    if check not in _pending:
        _pending.append(check)


def run_is_pending(run) -> bool:
    return any(check(run) for check in _pending)


def poll(request, *, pending: bool, cap: float = 15.0) -> dict | None:
    """{next, delay} for the fragment's next ask while `pending`; None stops the polling."""
    if not pending:
        return None
    try:
        step = min(max(int(request.GET.get("poll", 0)), 0), MAX_STEP)
    except ValueError:
        step = 0
    return {"next": step + 1, "delay": f"{min(1.5 ** step, cap):.1f}"}

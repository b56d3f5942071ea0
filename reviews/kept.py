"""Values kept per process for a run's audit chain head.

Every change of a run's state is made by a service that writes an event on the run's chain in the same
transaction (`reviews.audit.record_event`), so a chain head names one state of the run: a page that read
the run at its request's start and changes nothing can reuse what was computed for that head instead of
reading and building it again. A moved head makes every value kept for the old one unreachable; the
least recently asked go first when a store is full.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from .models import Run


class KeptByHead:
    """(run pk, what) → ((chain head seq, hash), value), the most recently asked last, at most `size`.
    A lock guards the bookkeeping (a threaded or gevent server's requests share the store); a value is
    computed outside it, so two requests may compute the same one at once, and the later one is kept."""

    def __init__(self, size: int):
        self.size = size
        self._values: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get_for(self, run: Run, name: str):
        """The value kept for `run`'s chain head as `run` was read, or None."""
        with self._lock:
            kept = self._values.get((run.pk, name))
            if kept is None or kept[0] != (run.audit_head_seq, run.audit_head_hash):
                return None
            self._values.move_to_end((run.pk, name))
            return kept[1]

    def latest(self, run: Run, name: str):
        """The value last kept for `run` under any chain head, or None."""
        with self._lock:
            kept = self._values.get((run.pk, name))
            return None if kept is None else kept[1]

    def keep(self, run: Run, name: str, value) -> None:
        with self._lock:
            self._values[(run.pk, name)] = ((run.audit_head_seq, run.audit_head_hash), value)
            self._values.move_to_end((run.pk, name))
            while len(self._values) > self.size:
                self._values.popitem(last=False)

    def kept(self, run: Run, name: str, compute):
        """`compute(run)`, kept for `run`'s chain head as `run` was read, if the head has not moved by the
        time it is computed: its statements read committed rows one by one, and a change committed
        between two of them would have them mix two states under the older head."""
        value = self.get_for(run, name)
        if value is None:
            value = compute(run)
            if head_now(run) == (run.audit_head_seq, run.audit_head_hash):
                self.keep(run, name, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


def head_now(run: Run) -> tuple[int, str] | None:
    """The run's chain head as committed now (one statement)."""
    return Run.objects.filter(pk=run.pk).values_list("audit_head_seq", "audit_head_hash").first()

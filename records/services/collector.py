"""The cyclic garbage collector paused while one member version is parsed and its run validated (DESIGN §11).

A 2 MB report's parse and validation allocate about a million objects (lines, matches, records,
findings), none of which form reference cycles: reference counting frees every one of them. Yet
each allocation burst set off the collector's full passes over the worker's whole heap (Django,
the kept parses): 0.2-0.4 s of the 2 MB ingest went to them, finding nothing to free. Paused for
the task's parse and validation, the collector resumes after it and collects whatever the rest
(the ORM, the driver) left in cycles meanwhile, as it would have.
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off; it is on again afterwards if it was on before (so the
    pause nests, and a caller that turned it off keeps it off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

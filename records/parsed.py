"""A stored version is parsed once per process: the parsed report, kept by the bytes' SHA-256.

The parse task parses a version's bytes and hands the report here; validation,
reconcile's sync and finalization then ask for the same version's report and
get it without a second parse (before this, 20 uploads cost 45 parses). The
parser is a pure function of the text and a ParsedReport is frozen data, so a
report found by the SHA-256 of the bytes is exactly what parsing them again
would give. A process that never saw the version (another worker process, a
restarted one) parses the stored bytes once and keeps the result.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from .document import ParsedReport
from .parsing import parse_report

# Bounded by the size of the texts kept (a parsed report holds about six times its text in memory: 13 MB
# for a 2 MB report), and by count. The newest report is always kept, so even one larger than the whole
# budget is parsed once for its own validation and sync.
MAX_REPORTS = 32
MAX_TEXT_BYTES = 16 * 1024 * 1024

_reports: OrderedDict[str, tuple[ParsedReport, int]] = OrderedDict()
_lock = threading.Lock()


def remember(sha256: str, report: ParsedReport, size: int) -> None:
    """Keep `report` as the parse of the `size` bytes whose SHA-256 is `sha256`; evict the least recent beyond
    MAX_REPORTS or MAX_TEXT_BYTES."""
    with _lock:
        _reports[sha256] = (report, size)
        _reports.move_to_end(sha256)
        kept = sum(size for _, size in _reports.values())
        while len(_reports) > 1 and (len(_reports) > MAX_REPORTS or kept > MAX_TEXT_BYTES):
            _, (_, evicted) = _reports.popitem(last=False)
            kept -= evicted


def cached(sha256: str) -> ParsedReport | None:
    with _lock:
        entry = _reports.get(sha256)
        if entry is None:
            return None
        _reports.move_to_end(sha256)
        return entry[0]


def report_of(sha256: str, load_bytes) -> ParsedReport:
    """The parsed report of the bytes with this SHA-256; `load_bytes()` supplies them on a miss.

    The caller vouches that the bytes hash to `sha256` (the parse task checked
    the stored bytes against it; finalization hashes them itself).
    """
    report = cached(sha256)
    if report is None:
        data = bytes(load_bytes())
        report = parse_report(data.decode("utf-8", errors="replace"))
        remember(sha256, report, len(data))
    return report


def version_report(version) -> ParsedReport:
    """The parsed report of a MemberVersion, reading its bytes from the database only on a miss."""
    from .models import MemberVersion

    def load():
        return MemberVersion.objects.filter(pk=version.pk).values_list("content", flat=True).get()

    return report_of(version.sha256, load)


def clear() -> None:
    with _lock:
        _reports.clear()

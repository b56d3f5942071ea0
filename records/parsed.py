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

MAX_REPORTS = 32

_reports: OrderedDict[str, ParsedReport] = OrderedDict()
_lock = threading.Lock()


def remember(sha256: str, report: ParsedReport) -> None:
    """Keep `report` as the parse of the bytes whose SHA-256 is `sha256`."""
    with _lock:
        _reports[sha256] = report
        _reports.move_to_end(sha256)
        while len(_reports) > MAX_REPORTS:
            _reports.popitem(last=False)


def cached(sha256: str) -> ParsedReport | None:
    with _lock:
        report = _reports.get(sha256)
        if report is not None:
            _reports.move_to_end(sha256)
        return report


def report_of(sha256: str, load_bytes) -> ParsedReport:
    """The parsed report of the bytes with this SHA-256; `load_bytes()` supplies them on a miss.

    The caller vouches that the bytes hash to `sha256` (the parse task checked
    the stored bytes against it; finalization hashes them itself).
    """
    report = cached(sha256)
    if report is None:
        report = parse_report(bytes(load_bytes()).decode("utf-8", errors="replace"))
        remember(sha256, report)
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

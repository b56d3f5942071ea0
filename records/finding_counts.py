"""A validation report's finding groups counted by the database (the run page's findings).

The same groups as `finding_groups.group_findings` over the report's findings, read in one
statement that returns a row per (code, severity) with its count, its first locations and its
most-named IDs, so the page's work does not grow with the number of findings. Strings are
ordered `COLLATE "C"`, byte order, which in UTF-8 is the code point order of Python's `str`;
ties go by id, the order the findings were stored (and are read by the pure grouping).
"""
from __future__ import annotations

from django.db import connection

from .finding_groups import (FIRST_LOCATIONS, IDS_SHOWN, REST_SHOWN, FindingGroup, Location, group_findings,
                             make_group, ordered)
from .models import Finding

_GROUPS = """
WITH placed AS (
    SELECT code, severity, member, line, record_id, message,
           row_number() OVER (PARTITION BY code, severity
                              ORDER BY member COLLATE "C", line, record_id COLLATE "C", id) AS n
    FROM records_finding WHERE report_id = %(report)s
), named AS (
    SELECT code, severity, record_id, count(*) AS times,
           row_number() OVER (PARTITION BY code, severity ORDER BY count(*) DESC, record_id COLLATE "C") AS n
    FROM records_finding WHERE report_id = %(report)s AND record_id <> ''
    GROUP BY code, severity, record_id
)
SELECT g.code, g.severity, g.count, g.members, g.member_at, g.line_at, g.record_id_at, g.message,
       i.record_ids, i.times, coalesce(i.distinct_ids, 0)
FROM (
    SELECT code, severity, count(*) AS count,
           array_agg(DISTINCT member COLLATE "C" ORDER BY member COLLATE "C") AS members,
           array_agg(member ORDER BY n) FILTER (WHERE n <= %(shown)s) AS member_at,
           array_agg(line ORDER BY n) FILTER (WHERE n <= %(shown)s) AS line_at,
           array_agg(record_id ORDER BY n) FILTER (WHERE n <= %(shown)s) AS record_id_at,
           min(message) FILTER (WHERE n = 1) AS message
    FROM placed GROUP BY code, severity
) g LEFT JOIN (
    SELECT code, severity, count(*) AS distinct_ids,
           array_agg(record_id ORDER BY n) FILTER (WHERE n <= %(ids)s) AS record_ids,
           array_agg(times ORDER BY n) FILTER (WHERE n <= %(ids)s) AS times
    FROM named GROUP BY code, severity
) i ON i.code = g.code AND i.severity = g.severity
"""


def report_groups(report_id: int) -> list[FindingGroup]:
    """The finding groups of the validation report `report_id`, root causes first (`group_findings`'s).
    On SQLite (`make run` without a database configured), which has neither arrays nor `COLLATE "C"`, the
    findings are grouped in Python."""
    if connection.vendor != "postgresql":
        return group_findings(Finding.objects.filter(report_id=report_id).order_by("id")
                              .values_list("code", "severity", "member", "line", "record_id", "message", named=True))
    with connection.cursor() as cursor:
        cursor.execute(_GROUPS, {"report": report_id, "shown": FIRST_LOCATIONS + REST_SHOWN, "ids": IDS_SHOWN})
        rows = cursor.fetchall()
    return ordered(
        make_group(code=code, severity=severity, count=count, members=members,
                   shown=map(Location, member_at, line_at, record_id_at), message=message,
                   record_ids=zip(record_ids or (), times or ()), record_id_count=distinct_ids)
        for code, severity, count, members, member_at, line_at, record_id_at, message, record_ids, times, distinct_ids
        in rows)

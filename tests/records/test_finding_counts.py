"""The run page's finding groups counted by the database are the pure grouping's (records.finding_counts):
same groups in the same order, counts, first locations, members, message and most-named IDs, however the
findings tie, whatever their case or script."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from records.finding_counts import report_groups
from records.finding_groups import FIRST_LOCATIONS, IDS_SHOWN, REST_SHOWN, group_findings, shown_with_links
from records.models import Finding, ValidationReport
from records.validation import Finding as ValidatorFinding

ROWS = ("code", "severity", "member", "record_id", "line", "message")
_reports = itertools.count()

# Few values, so that groups are large, locations tie and IDs repeat; mixed case, punctuation and scripts,
# which a collation other than code point order would sort differently from Python.
codes = st.sampled_from(["no-source-register", "malformed-pin", "missing-route-field", "unresolved-reference",
                         "unknown-source", "Zeta-code", "a-code"])
members = st.sampled_from(["", "memory", "workflow", "Memory", "memory-profile", "memory_x", "mémoire", "run.md"])
record_ids = st.one_of(st.just(""), st.sampled_from(["RT-OBJ-a", "RT-OBJ-b", "rt-obj-a", "RT_OBJ", "RT-9", "RT-10"]),
                       st.text(alphabet="aZ-_9Äé ", min_size=1, max_size=3))
messages = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
findings = st.lists(st.tuples(codes, st.sampled_from(["error", "warning"]), members, record_ids,
                              st.one_of(st.integers(0, 4), st.integers(0, 5000)), messages), max_size=90)


@pytest.fixture
def run(run_factory):
    return run_factory()  # once per test: Hypothesis's examples share it, each with its own report


@pytest.mark.django_db
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(findings)
def test_the_database_groups_a_report_as_the_pure_grouping_does(run, generated):
    report = ValidationReport.objects.create(run=run, manifest_sha256=f"{next(_reports):064x}")
    Finding.objects.bulk_create([Finding(report=report, **dict(zip(ROWS, values))) for values in generated])
    stored = report.findings.values_list(*ROWS, named=True)  # in the order they were stored
    try:
        assert report_groups(report.pk) == group_findings(stored)
    finally:
        report.delete()


@pytest.mark.django_db
def test_it_counts_every_finding_but_reads_only_what_the_page_shows(run_factory):
    report = ValidationReport.objects.create(run=run_factory(), manifest_sha256="a" * 64)
    Finding.objects.bulk_create([
        Finding(report=report, code="unresolved-reference", severity="error", member="memory",
                record_id=f"RT-OBJ-{n % 12}", line=n, message=f"m{n}") for n in range(1, 101)])
    (group,) = report_groups(report.pk)
    assert group.count == 100 and group.rest_more == 100 - FIRST_LOCATIONS - REST_SHOWN
    assert [loc.line for loc in group.first + group.rest] == list(range(1, FIRST_LOCATIONS + REST_SHOWN + 1))
    assert group.message == "m1"
    assert group.record_id_count == 12 and len(group.record_ids) == IDS_SHOWN
    # RT-OBJ-1 … RT-OBJ-4 are named 9 times (n = 1 … 100), the others 8; then in code point order.
    assert group.record_ids[:5] == (("RT-OBJ-1", 9), ("RT-OBJ-2", 9), ("RT-OBJ-3", 9), ("RT-OBJ-4", 9),
                                    ("RT-OBJ-0", 8))


@pytest.mark.django_db
def test_a_report_without_findings_has_no_groups(run_factory):
    assert report_groups(ValidationReport.objects.create(run=run_factory(), manifest_sha256="b" * 64).pk) == []


def test_it_links_a_location_with_a_line_to_that_line_of_its_member_page():
    (group,) = group_findings([
        ValidatorFinding("c", "error", member, "RT-1" if line == 7 else "", line, "m") for member, line in (
            ("memory", 7), ("memory", 0), ("", 3), ("", 0), ("notes.md", 4))])
    (shown,) = shown_with_links([group], {"memory": "/runs/R/members/memory/"})
    assert shown.first_shown + shown.rest_shown == (
        ("", "run", ""), ("", "run line 3", ""), ("", "memory", ""),
        ("/runs/R/members/memory/?line=7#L7", "memory line 7", "RT-1"), ("", "notes.md line 4", ""))
    assert shown == group  # how a group is shown, not another group


@pytest.mark.django_db
def test_a_group_whose_findings_all_tie_says_what_its_first_stored_finding_says(run_factory):
    report = ValidationReport.objects.create(run=run_factory(), manifest_sha256="c" * 64)
    Finding.objects.bulk_create([Finding(report=report, code="missing-route-field", severity="warning",
                                         member="result", record_id="RTE-1", line=5, message=f"m{n}")
                                 for n in range(500)])
    # Rewritten rows move in the table, so that the order a scan meets them is not the order they were stored.
    report.findings.filter(message__in=[f"m{n}" for n in range(250)]).update(line=5)
    (group,) = report_groups(report.pk)
    assert group.message == "m0" == group_findings(report.findings.values_list(*ROWS, named=True))[0].message


@pytest.mark.django_db
def test_without_postgresql_the_groups_are_the_pure_groupings(run, monkeypatch):
    """`make run`'s SQLite has no arrays: there the report's findings are grouped in Python, the same groups."""
    from django.db import connection

    report = ValidationReport.objects.create(run=run, manifest_sha256="f" * 64)
    Finding.objects.bulk_create([Finding(report=report, code=c, severity="error", member="memory", record_id=r, line=n,
                                         message="m") for n, (c, r) in enumerate([("a-code", "RT-OBJ-a"), ("a-code", ""),
                                                                                  ("Zeta-code", "RT-OBJ-b")])])
    in_the_database = report_groups(report.pk)
    monkeypatch.setattr(connection, "vendor", "sqlite")
    assert report_groups(report.pk) == in_the_database and len(in_the_database) == 2

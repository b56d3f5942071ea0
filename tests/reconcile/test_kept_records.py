"""A page's standing takes its records' facts as last read for the same current versions
(`reconcile.blockers._record_facts`): a decision leaves them as they were, a new parse of a version
reads them again, and approval reads them afresh every time."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reconcile import blockers, services
from reconcile.models import Mapping
from records import services as records_services
from records.models import MemberVersion, Record
from tests.reconcile.factories import AGENT, REVIEWER, WORKER, seed_path, upload_file

pytestmark = pytest.mark.django_db


def _reads_records(fn) -> bool:
    with CaptureQueriesContext(connection) as queries:
        fn()
    return any(f'FROM "{Record._meta.db_table}"' in q["sql"] for q in queries)


def test_a_decision_reuses_the_records_read_and_a_new_parse_reads_them_again(run_factory):
    run = run_factory()
    upload_file(run, "result", seed_path("000"))
    version = upload_file(run, "memory", seed_path("002"))
    run.refresh_from_db()
    blockers.forget_kept()
    before = blockers.run_facts(run, kept_records=True).records
    assert before and before == blockers.run_facts(run).records

    mapping = Mapping.objects.filter(run=run, state=Mapping.State.PROPOSED).order_by("pk").first()
    services.decide_mapping(mapping=mapping, decision="reject", rationale="not this one", actor=REVIEWER,
                            expected_version=mapping.version)
    assert not _reads_records(lambda: blockers.run_facts(run, kept_records=True))
    assert _reads_records(lambda: blockers.run_facts(run))  # approval's reads them now

    # The version's parse is done again (its validation failed, the same bytes uploaded again): its
    # records are written anew, under new primary keys.
    MemberVersion.objects.filter(pk=version.pk).update(status=MemberVersion.Status.FAILED)
    _version, created = records_services.ingest_member_report(
        run=run, role="memory", filename="memory.md", content=seed_path("002").read_bytes(), actor=AGENT)
    assert not created
    records_services.parse_member_version(version_pk=version.pk, actor=WORKER)
    records_services.validate_run(run=run, actor=WORKER)
    run.refresh_from_db()

    after = blockers.run_facts(run, kept_records=True).records
    assert after == blockers.run_facts(run).records
    assert {r.pk for r in after if r.member == "memory"}.isdisjoint({r.pk for r in before if r.member == "memory"})


def test_each_mapping_fact_names_the_member_its_source_record_belongs_to(run_factory):
    """`run_facts` reads the mappings from their own table and takes each source record's member from the
    records' facts, or from the record's row when it is not among them (a seeding member's record, an
    earlier version's): an independent join says the same member for every mapping, "" without a record."""
    from django.db.models import Value
    from django.db.models.functions import Coalesce

    run = run_factory()
    upload_file(run, "result", seed_path("000"))
    upload_file(run, "memory", seed_path("002"))
    first = Mapping.objects.filter(run=run, source_record__isnull=False).order_by("pk").first()
    # A mapping whose record is not a current declaration: pointed at the seeding result's record.
    seeded = Record.objects.filter(member_version__member__run=run, member_version__member__role="result").first()
    assert first is not None and seeded is not None
    Mapping.objects.filter(pk=first.pk).update(source_record=seeded)
    blockers.forget_kept()
    joined = dict(Mapping.objects.filter(run=run).annotate(
        role=Coalesce("source_record__member_version__member__role", Value(""))).values_list("pk", "role"))
    for kept in (True, False):
        facts = {m.pk: m.member for m in blockers.run_facts(run, kept_records=kept).mappings}
        assert facts == joined
    assert joined[first.pk] == "result" and "" in joined.values() and "memory" in joined.values()

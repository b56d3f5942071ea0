"""Pages name objects as a reviewer would, never by database IDs or raw codes (DESIGN §5 "Words, not
codes", issue 22): every blocker and refusal rendered once, the audit timeline's Object column, the
warning before a canonical record that accepted decisions point at is rejected, record texts as Markdown."""
from __future__ import annotations

import re

import pytest

from reconcile import approval_rules as rules
from reconcile import dispositions as d
from reconcile import services
from reconcile.dispositions import AmendmentFact, CanonicalFact, IssueFact, MappingFact, RecordFact, RunFacts
from reconcile.models import CanonicalRecord, Mapping
from reconcile.views.rows import markdown_diff_html
from records.record_markdown import render_record_text
from reviews.audit import Actor
from tests.reconcile.page_factories import build_reconcile_run

REVIEWER = Actor("reviewer:words")
DB_ID = re.compile(r"\b(mapping|decision|amendment|issue decision|canonical_record|issue_decision) #?\d+\b")


def _every_blocker() -> list[d.Blocker]:
    canonical = (CanonicalFact("OBJ-1", "active", source_record_id="RT-OBJ-1"),
                 CanonicalFact("OBJ-9", "rejected", "not an object", source_record_id="EPI-OBJ-9"))
    mappings = (
        MappingFact(11, "EPI-OBJ-1", "same", "OBJ-1", "proposed", member="epistemic"),          # open disposition
        MappingFact(12, "EPI-OBJ-2", "same", "OBJ-1", "accepted", member="epistemic"),          # conflicting claim
        MappingFact(13, "EPI-OBJ-3", "same", "OBJ-1", "accepted", member="epistemic"),
        MappingFact(14, "EPI-OBJ-3", "new", "", "proposed", member="epistemic"),                # open alternative
        MappingFact(15, "EPI-OBJ-4", "same", "OBJ-9", "accepted", member="epistemic"),          # rejected target
        MappingFact(16, "EPI-OBJ-5", "part-of", "OBJ-77", "accepted", member="epistemic"),      # unknown target
        MappingFact(17, "EPI-OBJ-6", "same", "OBJ-1", "accepted", member="other"),              # several places
        MappingFact(18, "EPI-OBJ-6", "part-of", "OBJ-1", "accepted", member="other"),
        MappingFact(19, "EPI-OBJ-7", "no-counterpart", "", "rejected", member="epistemic"),
        MappingFact(20, "EPI-OBJ-8", "new", "OBJ-8", "accepted", member="epistemic"),           # part of rejected
        MappingFact(21, "EPI-OBJ-10", "new", "OBJ-20", "accepted", member="epistemic"),         # allocated twice
        MappingFact(22, "EPI-OBJ-11", "new", "OBJ-20", "accepted", member="epistemic"),
    )
    records = (RecordFact("epistemic", "EPI-OBJ-8", pk=8, part_of=("EPI-OBJ-7",)),)
    issues = (IssueFact(31, "epistemic", 1, "proposed"), IssueFact(32, "epistemic", 2, "accepted", ("EPI-OBJ-7",)))
    amendments = (AmendmentFact(41, "epistemic", 12, "amendment", "proposed", "EPI-OBJ-1 grows"),
                  AmendmentFact(42, "epistemic", 14, "amendment", "accepted", "EPI-OBJ-7 is dropped"))
    standing = rules.standing(RunFacts(run_id="AAS-2026-12-01-words-01", records=records, mappings=mappings,
                                   canonical=canonical, issues=issues, amendments=amendments))
    return list(standing.blockers)


def test_every_blocker_and_its_refusal_names_records_not_database_ids_or_codes():
    blockers = _every_blocker()
    assert set(d.BLOCKER_CODES) - {b.code for b in blockers} == {
        d.RUN_STATUS, d.NO_MEMBERS, d.VALIDATION_PENDING, d.VALIDATION_STALE, d.VALIDATION_ERROR,
        d.CORRECTION_OPEN, d.CORRECTION_ANSWERED, d.PASS_MISSING, d.CONSENSUS_PENDING,
        d.CONFLICT_OPEN}  # the run's (its RUN rules), worded by test_corrections and test_review_passes
    for blocker in blockers:
        for text in filter(None, (blocker.message, blocker.refusal)):
            assert not DB_ID.search(text), text
            assert not any(code in text for code in d.BLOCKER_CODES), text
            assert "`" not in text, text
            # Named by its records, or (an issue, an amendment) by its member and place in the report.
            assert re.search(r"EPI-OBJ-\d|epistemic integration issue \d|line \d+ of the epistemic report",
                             text, re.IGNORECASE), text
        if blocker.item and blocker.code in d.CONFLICT_CODES:
            # A refused acceptance must not say the item "is accepted": it was just refused.
            assert blocker.refusal and "accepted" not in blocker.refusal, blocker


def test_the_open_disposition_message_says_what_to_do_in_one_sentence():
    [blocker] = [b for b in _every_blocker() if b.code == d.OPEN_DISPOSITION]
    assert blocker.message == "EPI-OBJ-1 (epistemic) has no place yet: accept or reject EPI-OBJ-1 → OBJ-1 (same)"


def test_a_mapping_is_named_by_its_records():
    assert d.mapping_name("EPI-OBJ-1", "new", "OBJ-6") == "EPI-OBJ-1 → OBJ-6 (new)"
    assert d.mapping_name("EPI-OBJ-1", "new", "") == "EPI-OBJ-1 → a new record"
    assert d.mapping_name("EPI-OBJ-1", "no-counterpart", "") == "EPI-OBJ-1 (no counterpart)"
    assert d.mapping_name("EPI-OBJ-1", "part-of", "OBJ-2") == "EPI-OBJ-1 → OBJ-2 (part of)"


@pytest.fixture
def words_run():
    run, _member = build_reconcile_run(records=4, run_id="AAS-2026-12-01-words-02")
    return run


def _open(run, **filters) -> list[Mapping]:
    return list(Mapping.objects.filter(run=run, state="proposed", **filters).order_by("pk"))


@pytest.mark.django_db
def test_a_second_accept_is_refused_naming_the_mapping_that_holds_the_place(words_run):
    first = _open(words_run)[0]
    services.decide_mapping(mapping=first, decision="accept", rationale="", actor=REVIEWER,
                            expected_version=first.version)
    rival = Mapping.objects.create(run=words_run, source=first.source, relation="new", target="",
                                   source_record=first.source_record, origin="reviewer", proposed_by="reviewer:words",
                                   origin_key=f"{first.source}|new|")
    with pytest.raises(services.InvalidDecision) as refused:
        services.decide_mapping(mapping=rival, decision="accept", rationale="", actor=REVIEWER,
                                expected_version=rival.version)
    message = str(refused.value)
    assert message.startswith(f"Not accepted: {first.source} already has its place, {first.source} → ")
    assert not DB_ID.search(message) and str(first.pk) not in message.split("(")[0]
    with pytest.raises(services.InvalidDecision) as twice:
        first.refresh_from_db()
        services.decide_mapping(mapping=first, decision="accept", rationale="", actor=REVIEWER,
                                expected_version=first.version)
    assert not DB_ID.search(str(twice.value)) and "is already accepted; reopen it first" in str(twice.value)


@pytest.mark.django_db
def test_the_audit_timeline_names_a_mapping_by_its_records_and_keeps_the_id_in_a_tooltip(client, reviewer,
                                                                                           words_run):
    mapping = _open(words_run)[0]
    services.decide_mapping(mapping=mapping, decision="accept", rationale="", actor=REVIEWER,
                            expected_version=mapping.version)
    mapping.refresh_from_db()
    client.force_login(reviewer.user)
    body = client.get(f"/runs/{words_run.run_id}/audit/").content.decode()
    name = d.mapping_name(mapping.source, mapping.relation, mapping.target)
    assert f'title="mapping {mapping.pk}">{name}</a>' in body
    assert f">mapping {mapping.pk}<" not in body


@pytest.mark.django_db
def test_rejecting_a_canonical_record_that_accepted_decisions_point_at_warns_and_names_them(client, reviewer,
                                                                                              words_run):
    mapping = _open(words_run, relation="same")[0]
    services.decide_mapping(mapping=mapping, decision="accept", rationale="", actor=REVIEWER,
                            expected_version=mapping.version)
    record = CanonicalRecord.objects.get(run=words_run, canonical_id=mapping.target)
    url = f"/runs/{words_run.run_id}/reconcile/canonical/{record.pk}/reject/"
    client.force_login(reviewer.user)
    form = client.get(url).content.decode()
    assert "1 accepted decision points at" in form and f"{mapping.source} → {mapping.target} (same)" in form
    assert "Reject anyway" in form
    # Posted without having seen the warning (no acknowledged decisions): nothing is saved.
    client.post(url, {"rationale": "not a thing", "mapping": mapping.pk})
    record.refresh_from_db()
    assert record.state == "active"
    client.post(url, {"rationale": "not a thing", "mapping": mapping.pk, "acknowledged": str(mapping.pk)})
    record.refresh_from_db()
    assert (record.state, record.rationale) == ("rejected", "not a thing")


def test_record_texts_render_as_sanitised_markdown():
    html = render_record_text("Keeps **keys** in `cache`:\n\n- one\n- two\n\n<script>x()</script>")
    assert "<strong>keys</strong>" in html and "<code>cache</code>" in html and "<li>one</li>" in html
    assert "<script>" not in html and "**" not in html


def test_a_word_diff_keeps_the_markdown_it_marks():
    left, right = markdown_diff_html("The **cache** holds keys.\n\n- one\n- two", "The **store** holds keys.\n\n- one\n- three")
    assert "<strong><del>cache</del></strong>" in left and "<li><del>two</del></li>" in left
    assert "<strong><ins>store</ins></strong>" in right and "<li><ins>three</ins></li>" in right
    assert "**" not in left + right

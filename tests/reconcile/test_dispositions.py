"""One disposition per member record and the one list of blockers (reconcile.dispositions): pure, no database."""
from __future__ import annotations

from pathlib import Path

from reconcile import approval_rules as rules
from reconcile import dispositions as d
from reconcile.dispositions import AmendmentFact, CanonicalFact, IssueFact, MappingFact, RecordFact, RunFacts

RUN = "AAS-2026-10-02-dynamic-cheatsheet-01"
CANONICAL = (CanonicalFact("OBJ-1", "active", source_record_id="RT-OBJ-1"),
             CanonicalFact("OBJ-2", "active", source_record_id="RT-OBJ-2"),
             CanonicalFact("OBJ-9", "rejected", "not an object", source_record_id="MEM-OBJ-9"))


def facts(*mappings, records=(), issues=(), amendments=(), canonical=CANONICAL) -> RunFacts:
    known = {r.record_id for r in records}
    extra = tuple(RecordFact(m.member, m.source, pk=None) for m in mappings if m.source not in known)
    return RunFacts(run_id=RUN, records=tuple(records) + tuple(dict.fromkeys(extra)), mappings=tuple(mappings),
                    canonical=canonical, issues=tuple(issues), amendments=tuple(amendments))


def m(pk, source, relation, target, state, member="epistemic", rationale="") -> MappingFact:
    return MappingFact(pk=pk, source=source, relation=relation, target=target, state=state, rationale=rationale,
                       member=member)


def codes(standing) -> list[str]:
    return [b.code for b in standing.blockers]


def test_an_accepted_part_of_places_the_record_and_its_rejected_new_suggestion_is_an_alternative():
    standing = rules.standing(facts(m(1, "EPI-OBJ-3", "new", "", "rejected", rationale="not new"),
                                m(2, "EPI-OBJ-3", "part-of", "OBJ-2", "accepted", rationale="a part")))
    [disposition] = standing.dispositions
    assert (disposition.disposition, disposition.relation, disposition.target) == ("mapped", "part-of", "OBJ-2")
    assert disposition.alternatives == (("new", "", "not new"),)
    assert standing.blockers == ()


def test_a_record_whose_every_mapping_is_rejected_has_the_disposition_rejected_with_the_rationales():
    standing = rules.standing(facts(m(1, "EPI-OBJ-2", "new", "", "rejected", rationale="no such object"),
                                m(2, "EPI-OBJ-2", "same", "OBJ-1", "rejected", rationale="another object")))
    [disposition] = standing.dispositions
    assert (disposition.disposition, disposition.rationale) == ("rejected", "no such object; another object")


def test_each_disposition_follows_its_one_accepted_mapping():
    standing = rules.standing(facts(m(1, "MEM-OBJ-1", "new", "OBJ-5", "accepted", "memory"),
                                m(2, "MEM-OBJ-2", "same", "OBJ-1", "accepted", "memory"),
                                m(3, "MEM-ABS-1", "no-counterpart", "", "accepted", "memory"),
                                m(4, "EPI-OBJ-4", "supersedes", "OBJ-1", "accepted"),
                                m(5, "EPI-OBJ-5", "new", "", "proposed"),
                                canonical=CANONICAL + (CanonicalFact("OBJ-5", "active", source_record_id="MEM-OBJ-1"),)))
    assert [(x.record, x.disposition, x.relation) for x in standing.dispositions] == [
        ("MEM-OBJ-1", "new", "new"), ("MEM-OBJ-2", "mapped", "same"), ("MEM-ABS-1", "no-counterpart",
                                                                       "no-counterpart"),
        ("EPI-OBJ-4", "mapped", "supersedes"), ("EPI-OBJ-5", "open", "")]
    assert codes(standing) == ["open_disposition"]


def test_a_declared_record_without_any_mapping_is_open_and_blocks_with_a_link_to_its_row():
    standing = rules.standing(facts(records=[RecordFact("memory", "MEM-OBJ-7", pk=31)]))
    [blocker] = standing.blockers
    assert (blocker.code, blocker.record) == ("open_disposition", "MEM-OBJ-7")
    assert blocker.link == f"/runs/{RUN}/reconcile/?member=memory#record-31"
    assert "no mapping is proposed for it" in blocker.message


def test_two_accepted_places_for_one_record_are_a_conflict_on_both_rows():
    standing = rules.standing(facts(m(1, "EPI-OBJ-4", "new", "OBJ-8", "accepted"),
                                m(2, "EPI-OBJ-4", "supersedes", "OBJ-1", "accepted")))
    assert codes(standing) == ["several_places", "several_places"]
    assert standing.conflict_mappings == {1, 2}
    assert standing.dispositions[0].disposition == "open"


def test_an_open_alternative_beside_an_accepted_mapping_blocks_but_is_not_a_conflict():
    standing = rules.standing(facts(m(1, "EPI-OBJ-3", "part-of", "OBJ-2", "accepted"),
                                m(2, "EPI-OBJ-3", "new", "", "proposed")))
    assert codes(standing) == ["open_alternative"]
    assert standing.conflict_mappings == set()


def test_an_accepted_mapping_to_a_rejected_or_unknown_canonical_record_is_a_conflict():
    standing = rules.standing(facts(m(1, "MEM-OBJ-1", "same", "OBJ-9", "accepted", "memory"),
                                m(2, "MEM-OBJ-2", "part-of", "OBJ-77", "accepted", "memory")))
    assert codes(standing) == ["rejected_target", "unknown_target"]
    assert "OBJ-9, which was rejected: “not an object”" in standing.blockers[0].message


def test_two_records_of_one_member_claiming_one_canonical_record_conflict_but_two_members_agree():
    one_member = rules.standing(facts(m(1, "MEM-OBJ-1", "same", "OBJ-1", "accepted", "memory"),
                                  m(2, "MEM-OBJ-2", "same", "OBJ-1", "accepted", "memory")))
    assert codes(one_member) == ["conflicting_claim", "conflicting_claim"]
    two_members = rules.standing(facts(m(1, "MEM-OBJ-1", "same", "OBJ-1", "accepted", "memory"),
                                   m(2, "EPI-OBJ-1", "same", "OBJ-1", "accepted", "epistemic")))
    assert two_members.blockers == ()


def test_a_supersession_onto_a_record_another_member_entered_is_no_conflict():
    # EPI-OBJ-4 is superseded by MEM-OBJ-2, which entered the shared set as OBJ-8: both name OBJ-8.
    standing = rules.standing(facts(m(1, "MEM-OBJ-2", "new", "OBJ-8", "accepted", "memory"),
                                m(2, "EPI-OBJ-4", "supersedes", "OBJ-8", "accepted"),
                                canonical=CANONICAL + (CanonicalFact("OBJ-8", "active", source_record_id="MEM-OBJ-2"),)))
    assert standing.blockers == ()


def test_an_accepted_amendment_naming_a_record_without_a_place_is_a_conflict():
    amendment = AmendmentFact(pk=7, member="reconciliation", line=12, kind="amendment", state="accepted",
                              text="EPI-OBJ-2 supersedes `Part of: RT-OBJ-2` with `Part of: MEM-OBJ-1`.")
    standing = rules.standing(facts(m(1, "EPI-OBJ-2", "new", "", "rejected", rationale="no"),
                                m(2, "MEM-OBJ-1", "new", "OBJ-5", "accepted", "memory"),
                                amendments=[amendment],
                                canonical=CANONICAL + (CanonicalFact("OBJ-5", "active", source_record_id="MEM-OBJ-1"),)))
    [blocker] = standing.blockers
    assert (blocker.code, blocker.record, blocker.item) == ("amendment_on_rejected", "EPI-OBJ-2", "amendment:7")
    assert "EPI-OBJ-2 has no place in the shared set" in blocker.message
    assert standing.conflict_mappings == {1}
    carried = rules.standing(facts(m(1, "EPI-OBJ-2", "new", "", "rejected", rationale="no"), amendments=[
        AmendmentFact(7, "reconciliation", 12, "amendment", "carried", text=amendment.text)]))
    assert carried.blockers == ()


def test_an_amendment_names_a_record_as_the_parser_reads_it_even_joined_to_a_word():
    """`EPI-OBJ-2-level` names EPI-OBJ-2 to the parser (records.ids); a second ID grammar here once read
    no ID there, so the accepted amendment about a record without a place raised no blocker."""
    amendment = AmendmentFact(pk=7, member="reconciliation", line=12, kind="amendment", state="accepted",
                              text="The EPI-OBJ-2-level `Part of:` becomes MEM-OBJ-1.")
    standing = rules.standing(facts(m(1, "EPI-OBJ-2", "new", "", "rejected", rationale="no"),
                                m(2, "MEM-OBJ-1", "new", "OBJ-5", "accepted", "memory"),
                                amendments=[amendment],
                                canonical=CANONICAL + (CanonicalFact("OBJ-5", "active", source_record_id="MEM-OBJ-1"),)))
    assert [(b.code, b.record) for b in standing.blockers] == [("amendment_on_rejected", "EPI-OBJ-2")]


def test_an_accepted_issue_naming_a_rejected_record_is_a_conflict_and_an_open_one_blocks():
    standing = rules.standing(facts(m(1, "EPI-OBJ-2", "new", "", "rejected", rationale="no"), issues=[
        IssueFact(pk=4, member="epistemic", index=1, state="accepted", references=("EPI-OBJ-2", "RT-OBJ-1")),
        IssueFact(pk=5, member="epistemic", index=2, state="proposed")]))
    assert codes(standing) == ["issue_names_rejected", "open_issue"]
    assert standing.blockers[0].link == f"/runs/{RUN}/reconcile/?member=epistemic&issues=all#issue-4"


def test_a_placed_record_that_is_part_of_a_rejected_record_is_a_conflict():
    standing = rules.standing(facts(m(1, "EPI-OBJ-2", "new", "", "rejected", rationale="no"),
                                m(2, "EPI-OBJ-3", "new", "OBJ-6", "accepted"),
                                records=[RecordFact("epistemic", "EPI-OBJ-2", 1),
                                         RecordFact("epistemic", "EPI-OBJ-3", 2, part_of=("EPI-OBJ-2",))],
                                canonical=CANONICAL + (CanonicalFact("OBJ-6", "active", source_record_id="EPI-OBJ-3"),)))
    assert codes(standing) == ["part_of_rejected"]


def test_the_readme_explains_every_blocker_code_an_agent_can_receive():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("## Dispositions, blockers and Revise"):]
    section = section[:section.index("\n## ", 1)]
    assert [code for code in d.BLOCKER_CODES if f"`{code}`" not in section] == []


def test_blockers_name_a_mapping_as_the_pages_do():
    """"EPI-OBJ-1 → OBJ-6 (new)" (DESIGN §5 "Words, not codes"); the result keeps its own phrasing."""
    from results.rendering import relation_phrase

    standing = rules.standing(facts(m(1, "EPI-OBJ-3", "part-of", "OBJ-2", "accepted"),
                                m(2, "EPI-OBJ-3", "new", "", "proposed"),
                                m(3, "EPI-OBJ-4", "supersedes", "OBJ-1", "proposed")))
    messages = {b.code: b.message for b in standing.blockers}
    assert messages["open_alternative"] == (
        "EPI-OBJ-3 is placed by EPI-OBJ-3 → OBJ-2 (part of), but the alternative EPI-OBJ-3 → a new record is "
        "still undecided: reject it")
    assert messages["open_disposition"] == ("EPI-OBJ-4 (epistemic) has no place yet: accept or reject "
                                            "EPI-OBJ-4 → OBJ-1 (superseded by)")
    assert "∅" not in "".join(messages.values())
    assert relation_phrase("EPI-OBJ-3", "new", "") == "EPI-OBJ-3 as a new record"  # the result's own words

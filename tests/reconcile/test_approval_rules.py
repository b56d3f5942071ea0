"""The rule book of approval (reconcile.approval_rules): each blocker code comes from exactly one rule, a rule
produces only the codes it declares, and a standing is exactly what the rules in RULES produce, in their
order: pure, no database."""
from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from reconcile import approval_rules as rules
from reconcile import dispositions as d
from reconcile.dispositions import (CorrectionFact, ErrorFact, MappingFact, PassesFact, Reading, RunFacts,
                                   ValidationFact)

from .test_standing_update import RUN
from .test_standing_update import run_facts as decision_facts

HASHES = ("", "a" * 64, "b" * 64)


def test_each_blocker_code_comes_from_exactly_one_rule():
    declared = [code for rule in rules.RULES for code in rule.codes]
    assert len(declared) == len(set(declared))  # no code declared by two rules
    assert sorted(declared) == sorted(d.BLOCKER_CODES)  # and every code by one
    assert all(rule.codes for rule in rules.RULES)
    assert len(set(rules.RULES)) == len(rules.RULES)  # each rule listed once


def test_the_rules_are_listed_in_the_order_of_their_blockers():
    """RUN rules first, then RECORD rules (per record), then DECISIONS rules: RULES reads as a standing does."""
    kinds = [rule.kind for rule in rules.RULES]
    assert set(kinds) == set(rules.KINDS)
    assert kinds == sorted(kinds, key=rules.KINDS.index)


@st.composite
def facts(draw) -> RunFacts:
    """Any run's facts: its decisions (as the kept standing's property draws them) and its state as a whole."""
    corrections = draw(st.lists(st.builds(
        CorrectionFact, pk=st.integers(1, 9), member=st.sampled_from(("memory", "runtime")),
        record_id=st.sampled_from(("", "MEM-OBJ-1")), state=st.sampled_from(("open", "answered")),
        text=st.sampled_from(("Cite it.", "x" * 130))), max_size=3))
    passes = draw(st.none() | st.builds(
        PassesFact, required=st.integers(2, 3), submitted=st.lists(st.sampled_from(("ana", "bo", "cy")),
                                                                   max_size=3, unique=True).map(tuple),
        consensus_made=st.booleans(), conflicts=st.lists(st.tuples(st.integers(1, 9), st.sampled_from(
            ("MEM-OBJ-1", "OBJ-2"))), max_size=2).map(tuple)))
    error = st.builds(ErrorFact, code=st.just("unknown-source"), member=st.sampled_from(("", "memory")),
                      record_id=st.sampled_from(("", "SRC-1")), line=st.sampled_from((None, 0, 7)),
                      message=st.just("SRC-1 is not registered"))
    validation = draw(st.none() | st.builds(
        ValidationFact, validated=st.sampled_from(HASHES), current=st.sampled_from(HASHES),
        errors=st.none() | st.integers(0, 25), first_errors=st.lists(error, max_size=3).map(tuple),
        stored=st.sampled_from(HASHES)))
    decisions = draw(decision_facts())
    if draw(st.booleans()):  # rivals: two records of one member accepted as one canonical record, or allocating it
        pk = max((m.pk for m in decisions.mappings), default=0)
        decisions = replace(decisions, mappings=decisions.mappings + tuple(
            MappingFact(pk + n, source, draw(st.sampled_from(("same", "new"))), "OBJ-1", "accepted", member="memory")
            for n, source in enumerate(("MEM-OBJ-1", "MEM-OBJ-2"), start=1)))
    return replace(decisions, status=draw(st.sampled_from(("in_review", "approved", "final"))),
                   has_members=draw(st.booleans()), corrections=tuple(corrections), passes=passes,
                   validation=validation)


@settings(max_examples=300, deadline=None)
@given(facts())
def test_a_standing_is_what_each_rule_produces_and_each_rule_only_its_own_codes(run):
    standing = rules.standing(run)
    parts = standing.parts
    reading = Reading(run, parts.by_source, parts.records, standing.by_record)
    produced = []

    def judged(rule, *args):
        found = list(rule(*args))
        assert {b.code for b in found} <= set(rule.codes), rule.__name__
        produced.extend(found)

    for rule in rules.RULES:
        if rule.kind == rules.RUN:
            judged(rule, run)
    for disposition in standing.dispositions:
        for rule in rules.RULES:
            if rule.kind == rules.RECORD:
                judged(rule, reading, disposition)
    for rule in rules.RULES:
        if rule.kind == rules.DECISIONS:
            judged(rule, reading, run)
    assert tuple(produced) == standing.blockers


def test_a_rule_is_a_function_marked_with_its_kind_and_codes():
    @rules.rule(rules.RUN, "example_code")
    def example(facts: RunFacts):
        return [d.Blocker("example_code", facts.run_id, "An example.")]

    assert example.kind == rules.RUN and example.codes == ("example_code",)
    assert rules.codes_of(rules.run_status, example) == (d.RUN_STATUS, "example_code")


def test_approval_hashing_the_stored_bytes_asks_the_validation_rule_again():
    validated = replace(RunFacts(RUN), validation=ValidationFact("a" * 64, "a" * 64, errors=0))
    assert rules.standing(validated).blockers == ()
    assert rules.stored_bytes_blockers(validated, "a" * 64) == []
    [stale] = rules.stored_bytes_blockers(validated, "b" * 64)
    assert (stale.code, stale.record) == (d.VALIDATION_STALE, RUN)
    assert stale.message == (f"The stored member bytes hash to manifest {'b' * 64}, not the validated {'a' * 64}: "
                             "a member no longer matches its recorded SHA-256. Upload the members again.")
    assert stale.link == f"/runs/{RUN}/"

"""A standing built from the last one (reconcile.standing_update) is the standing built from scratch
(reconcile.approval_rules.standing), whatever the decisions between them: pure, no database."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reconcile import approval_rules as rules
from reconcile.dispositions import AmendmentFact, CanonicalFact, IssueFact, MappingFact, RecordFact, RunFacts
from reconcile.standing_update import standing_after

RUN = "AAS-2026-12-02-update-01"
DECLARED = ("MEM-OBJ-1", "MEM-OBJ-2", "MEM-OBJ-3", "MEM-CMP-1", "EPI-OBJ-1", "EPI-OBJ-2")
STATEMENT_SOURCES = ("RT-OBJ-9",)  # named by a mapping statement, declared by no member
CANONICAL_IDS = ("OBJ-1", "OBJ-2", "OBJ-3", "CMP-1")
NAMES = DECLARED + STATEMENT_SOURCES + CANONICAL_IDS + ("OBJ-7",)
RELATIONS = ("same", "part-of", "supersedes", "new", "no-counterpart")
STATES = ("proposed", "stale", "accepted", "rejected")


def _member(record_id: str) -> str:
    return "memory" if record_id.startswith("MEM") else "epistemic" if record_id.startswith("EPI") else ""


@st.composite
def records(draw) -> tuple[RecordFact, ...]:
    ids = draw(st.lists(st.sampled_from(DECLARED), min_size=1, max_size=len(DECLARED), unique=True))
    if draw(st.integers(0, 9)) == 0:
        ids.append(ids[0])  # an ID declared twice: the update builds from scratch
    return tuple(RecordFact(_member(i), i, pk=n, part_of=tuple(draw(st.lists(st.sampled_from(
        DECLARED + DECLARED + NAMES), max_size=2)))) for n, i in enumerate(ids, start=1))


canonical = st.lists(st.tuples(st.sampled_from(CANONICAL_IDS), st.sampled_from(("active", "rejected")),
                               st.sampled_from(("", "RT-OBJ-9", "MEM-OBJ-3"))), max_size=4, unique_by=lambda c: c[0]
                     ).map(lambda rows: tuple(CanonicalFact(c, s, "not so" if s == "rejected" else "", alias)
                                              for c, s, alias in rows))


@st.composite
def mapping(draw, pk: int) -> MappingFact:
    source = draw(st.sampled_from(DECLARED + STATEMENT_SOURCES))
    relation = draw(st.sampled_from(RELATIONS))
    target = "" if relation == "no-counterpart" else draw(st.sampled_from(CANONICAL_IDS + ("OBJ-7", "")))
    return MappingFact(pk=pk, source=source, relation=relation, target=target, state=draw(st.sampled_from(STATES)),
                       rationale=draw(st.sampled_from(("", "because"))), member=_member(source))


@st.composite
def run_facts(draw) -> RunFacts:
    mappings = tuple(draw(mapping(pk)) for pk in range(1, draw(st.integers(0, 10)) + 1))
    issues = tuple(IssueFact(pk=n, member="memory", index=n, state=draw(st.sampled_from(STATES)),
                             references=tuple(draw(st.lists(st.sampled_from(NAMES), max_size=2))))
                   for n in range(1, draw(st.integers(0, 2)) + 1))
    amendments = tuple(AmendmentFact(pk=n, member="epistemic", line=n, kind="amendment",
                                     state=draw(st.sampled_from(STATES)),
                                     text=" and ".join(draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=2))))
                       for n in range(1, draw(st.integers(0, 2)) + 1))
    return RunFacts(run_id=RUN, records=draw(records()), mappings=mappings, canonical=draw(canonical),
                    issues=issues, amendments=amendments)


@st.composite
def changed(draw, facts: RunFacts) -> RunFacts:
    """The facts after one change: a mapping decided, retargeted, added or removed (most often), or the
    records or canonical records changed."""
    mappings = list(facts.mappings)
    kind = draw(st.sampled_from(("decide", "decide", "decide", "retarget", "add", "remove", "canonical",
                                 "records", "issue")))
    if kind == "decide" and mappings:
        n = draw(st.integers(0, len(mappings) - 1))
        mappings[n] = mappings[n]._replace(state=draw(st.sampled_from(STATES)),
                                           rationale=draw(st.sampled_from(("", "because", "not this"))))
    elif kind == "retarget" and mappings:
        n = draw(st.integers(0, len(mappings) - 1))
        mappings[n] = mappings[n]._replace(target=draw(st.sampled_from(CANONICAL_IDS)))
    elif kind == "add":
        mappings.append(draw(mapping(max((m.pk for m in mappings), default=0) + 1)))
    elif kind == "remove" and mappings:
        mappings.pop(draw(st.integers(0, len(mappings) - 1)))
    elif kind == "canonical":
        return RunFacts(**{**facts.__dict__, "canonical": draw(canonical)})
    elif kind == "records":
        return RunFacts(**{**facts.__dict__, "records": draw(records())})
    elif kind == "issue" and facts.issues:
        first = facts.issues[0]
        return RunFacts(**{**facts.__dict__, "issues": (IssueFact(**{**first.__dict__, "state": draw(
            st.sampled_from(STATES))}),) + facts.issues[1:]})
    return RunFacts(**{**facts.__dict__, "mappings": tuple(mappings)})


@st.composite
def histories(draw) -> list[RunFacts]:
    facts = [draw(run_facts())]
    for _ in range(draw(st.integers(1, 8))):
        facts.append(draw(changed(facts[-1])))
    return facts


@settings(max_examples=400, deadline=None)
@given(histories())
def test_a_standing_built_from_the_last_one_is_the_standing_built_from_scratch(history):
    """Property: along any history of changes, each standing built from the one before equals, blocker
    for blocker and in order, the standing built from its facts alone."""
    last = rules.standing(history[0])
    for facts in history[1:]:
        built, fresh = standing_after(last, facts), rules.standing(facts)
        assert built == fresh
        assert built.by_record == fresh.by_record
        last = built


def test_a_decision_judges_again_only_the_records_it_touched(monkeypatch):
    records = tuple(RecordFact("memory", f"MEM-OBJ-{n}", pk=n) for n in range(1, 201))
    mappings = tuple(MappingFact(n, f"MEM-OBJ-{n}", "same", "OBJ-1", "proposed", member="memory")
                     for n in range(1, 201))
    facts = RunFacts(run_id=RUN, records=records, mappings=mappings, canonical=(CanonicalFact("OBJ-1", "active"),))
    last = rules.standing(facts)
    judged = []
    real = rules.record_blockers
    monkeypatch.setattr(rules, "record_blockers", lambda reading, disposition: judged.append(disposition.record)
                        or real(reading, disposition))
    decided = RunFacts(**{**facts.__dict__, "mappings": (MappingFact(7, "MEM-OBJ-7", "same", "OBJ-1", "accepted",
                                                                     member="memory"),)
                          + tuple(m for m in mappings if m.pk != 7)})
    assert standing_after(last, decided) == rules.standing(decided)
    assert judged.count("MEM-OBJ-7") == 2 and len(judged) == 201  # once in the update, 200 from scratch


def test_a_record_part_of_one_a_decision_leaves_without_place_is_judged_again():
    records = (RecordFact("memory", "MEM-OBJ-1", pk=1), RecordFact("memory", "MEM-CMP-1", pk=2, part_of=("MEM-OBJ-1",)))
    placed = MappingFact(2, "MEM-CMP-1", "same", "CMP-1", "accepted", member="memory")
    facts = RunFacts(run_id=RUN, records=records, canonical=(CanonicalFact("CMP-1", "active"),),
                     mappings=(MappingFact(1, "MEM-OBJ-1", "new", "", "proposed", member="memory"), placed))
    rejected = RunFacts(**{**facts.__dict__, "mappings": (
        MappingFact(1, "MEM-OBJ-1", "new", "", "rejected", member="memory"), placed)})
    built = standing_after(rules.standing(facts), rejected)
    assert "part_of_rejected" in [b.code for b in built.blockers]
    assert built == rules.standing(rejected)

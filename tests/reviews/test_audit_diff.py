"""The audit timeline's before → after as changed fields (reviews/audit_diff.py), pure data."""
from hypothesis import given
from hypothesis import strategies as st

from reviews.audit_diff import changed_fields

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=8))
keys = st.text(alphabet="abcdefgh_", min_size=1, max_size=5)
objects = st.dictionaries(keys, st.one_of(scalars, st.dictionaries(keys, scalars, max_size=3)), max_size=6)


def test_a_decision_shows_only_the_fields_it_changed():
    before = {"state": "proposed", "version": 1, "rationale": "", "target": "OBJ-1"}
    after = {"state": "accepted", "version": 2, "rationale": "same route", "target": "OBJ-1"}
    assert [(c.field, c.before, c.after, c.kind) for c in changed_fields(before, after)] == [
        ("state", "proposed", "accepted", "changed"),
        ("version", "1", "2", "changed"),
        ("rationale", "", "same route", "changed"),
    ]


def test_it_flattens_nested_objects_and_names_added_and_removed_fields():
    before = {"run_status": {"before": "open", "after": "validating"}, "gone": [1, 2]}
    after = {"run_status": {"before": "open", "after": "in_review"}, "counts": {"declarations": 3}}
    assert [(c.field, c.kind) for c in changed_fields(before, after)] == [
        ("run_status.after", "changed"), ("counts.declarations", "added"), ("gone", "removed")]
    assert changed_fields(before, after)[-1].before == "[1, 2]"


def test_an_event_without_before_lists_every_field_as_added():
    assert [(c.field, c.after, c.kind) for c in changed_fields(None, {"role": "memory", "version": 1})] == [
        ("role", "memory", "added"), ("version", "1", "added")]
    assert changed_fields(None, None) == []


@given(objects, objects)
def test_applying_the_changes_to_before_gives_after(before, after):
    def flat(value, prefix=""):
        if isinstance(value, dict) and value:
            return {k: v for key in value for k, v in flat(value[key], f"{prefix}.{key}" if prefix else key).items()}
        return {prefix or "value": value}

    import json

    old, new = flat(before), flat(after)
    changes = changed_fields(before, after)
    rebuilt = {k: (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True,
                                                           separators=(", ", ": "))) for k, v in old.items()}
    for change in changes:
        if change.kind == "removed":
            del rebuilt[change.field]
        else:
            rebuilt[change.field] = change.after
    shown_new = {k: (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True,
                                                             separators=(", ", ": "))) for k, v in new.items()}
    assert rebuilt == shown_new
    assert all(old.get(c.field) != new.get(c.field) or c.kind != "changed" for c in changes)


def test_a_nested_field_is_named_in_words_with_its_key_kept():
    [change] = changed_fields({"run_status": {"after": "open"}}, {"run_status": {"after": "in_review"}})
    assert (change.field, change.label) == ("run_status.after", "run status · after")

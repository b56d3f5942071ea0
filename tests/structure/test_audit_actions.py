"""One vocabulary of audit actions (reviews.actions.Action, STYLE.md "Seams"), read from the source with `ast`.

An audit event's action is a member of the vocabulary, never a string written where the event is:
no `action=` keyword (nor `action__in=`, `audit_events__action=`, …) of the apps takes a string, and
no string of the apps spells an action's value (a comparison, a dict, a filter) outside the vocabulary.
The one `action=` that takes strings is the access helpers' (what a caller attempted, the denial's
`attempted`), and argparse's.
"""
from __future__ import annotations

import ast
from pathlib import Path

from reviews.actions import DECISIONS, Action
from tests.structure.test_import_graph import ROOT

APP_CODE = ("reviews", "events", "records", "reconcile", "results", "config")
VOCABULARY = ROOT / "reviews" / "actions.py"
# `action=` of these is what a caller attempted (reviews.access, a route's policy) or an argparse action: not an
# audit action.
NOT_AUDIT = {"run_for", "check_role", "check_participant", "refuse_unless_allowed", "route_policy", "add_argument"}


def app_sources() -> list[tuple[str, str]]:
    return [(str(path.relative_to(ROOT)), path.read_text())
            for app in APP_CODE for path in sorted((ROOT / app).rglob("*.py"))
            if "migrations" not in path.parts and path != VOCABULARY]


def _callee(call: ast.Call) -> str:
    return ast.unparse(call.func).rpartition(".")[2]


def _names_an_action(keyword: str | None) -> bool:
    return keyword is not None and (keyword == "action" or keyword.endswith("__action")
                                    or keyword.startswith("action__") or "__action__" in keyword)


def _is_string(node: ast.AST) -> bool:
    """A string, or an expression whose value may be one it spells: a list of them, a choice, a concatenation
    (not a key that picks the value: `_DECIDED["mapping"][decision]`, `params["action"]`)."""
    if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return True
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return any(_is_string(element) for element in node.elts)
    if isinstance(node, ast.IfExp):
        return _is_string(node.body) or _is_string(node.orelse)
    if isinstance(node, ast.BoolOp):
        return any(_is_string(value) for value in node.values)
    return isinstance(node, ast.BinOp) and (_is_string(node.left) or _is_string(node.right))


def strings_for_actions(where: str, source: str) -> list[str]:
    """Where `source` passes a string (literal, f-string, in a list or an expression) as an audit action."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if not _names_an_action(keyword.arg) or (keyword.arg == "action" and _callee(node) in NOT_AUDIT):
                continue
            if _is_string(keyword.value):
                found.append(f"{where}:{node.lineno} {_callee(node)}({keyword.arg}={ast.unparse(keyword.value)})")
    return found


def spelled_actions(where: str, source: str) -> list[str]:
    """Strings in `source` that spell an action's value."""
    return [f"{where}:{node.lineno} {node.value!r}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in set(Action)]


def unknown_members(where: str, source: str) -> list[str]:
    """`Action.NAME`s in `source` that the vocabulary does not have."""
    return [f"{where}:{node.lineno} Action.{node.attr}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Action"
            and node.attr.isupper() and node.attr not in Action.__members__]


def test_no_audit_action_is_written_from_a_string():
    assert [hit for where, source in app_sources() for hit in strings_for_actions(where, source)] == []


def test_no_string_of_the_apps_spells_an_action():
    assert [hit for where, source in app_sources() for hit in spelled_actions(where, source)] == []


def test_every_member_the_apps_name_is_in_the_vocabulary():
    assert [hit for where, source in app_sources() for hit in unknown_members(where, source)] == []


def test_the_scan_catches_a_string_an_f_string_a_string_in_a_filter_and_a_misspelt_member():
    source = ('record_event(run=run, actor=actor, action="mapping.acepted", object_type="mapping", object_id=1)\n'
              'move_run(locked, status=status, actor=actor, action=f"run.{verb}")\n'
              'AuditEvent.objects.filter(run=run, action__in=[Action.RUN_CREATED, "run.status_changed"])\n'
              'run_for(request, run_id, action="mapping.decide")\n'
              'record_event(run=run, actor=actor, action=Action.MAPPING_ACEPTED, object_type="mapping", object_id=1)\n'
              'if event.action == "run.finalized": pass\n'
              'record_event(run=run, actor=actor, action=Action.PASS_STARTED if started else "pass.started")\n')
    assert [hit.split()[0] for hit in strings_for_actions("s.py", source)] == ["s.py:1", "s.py:2", "s.py:3", "s.py:7"]
    assert sorted(spelled_actions("s.py", source)) == ["s.py:3 'run.status_changed'", "s.py:6 'run.finalized'",
                                                    "s.py:7 'pass.started'"]
    assert unknown_members("s.py", source) == ["s.py:5 Action.MAPPING_ACEPTED"]


# The vocabulary itself

def test_every_action_has_its_own_value_and_wording():
    assert len(Action.__members__) == len(Action), "two names of one value (an Enum alias)"
    for action in Action:
        assert action.wording and action.wording != action.value and action.wording == action.wording.strip()
        assert action.wording[0].islower(), f"{action.value}: the timeline reads '<who> {action.wording}'"
    assert len({action.wording for action in Action}) == len(Action)


def test_feed_names_are_unique_and_unpublished_actions_say_so():
    names = [action.feed_name for action in Action if action.feed_name is not None]
    assert len(names) == len(set(names))
    assert [action for action in Action if action.feed_name is None] == [Action.PASS_DECIDED]
    for action in Action:
        assert all(isinstance(name, str) and name for name in action.feed)


def test_the_wording_of_a_code_the_vocabulary_does_not_know_is_the_code():
    assert Action.wording_of("mapping.accepted") == "accepted a mapping"
    assert Action.wording_of("test.step") == "test.step"


def test_the_decisions_are_the_decisions_on_items_and_the_review_passes():
    decided = {a for a in Action if a.value.split(".")[0] in {"mapping", "issue", "amendment"}
               and a.value.split(".")[1] in {"accepted", "rejected", "carried", "reopened"}}
    passes = {a for a in Action if a.value.startswith("pass.")}
    assert DECISIONS == decided | passes | {Action.CANONICAL_REJECTED}

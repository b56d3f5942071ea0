"""docs/promises.md: every promise has an attacking test, and every test it names exists (STYLE.md "Seams")."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REGISTER = ROOT / "docs" / "promises.md"


def promises(text: str) -> list[tuple[str, str, list[str]]]:
    """(promise, attacker, tests) for each row of the register's table."""
    rows = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 3 or cells[0] in ("Promise", "") or set(cells[0]) <= set("-"):
            continue
        rows.append((cells[0], cells[1], [test.strip() for test in cells[2].split(";") if test.strip()]))
    return rows


def attacks_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name.startswith("test_")}


def missing_tests(rows) -> list[str]:
    missing = []
    for promise, _attacker, tests in rows:
        if not tests:
            missing.append(f"{promise}: no attacking test")
        for test in tests:
            path, _, name = test.partition("::")
            if not (ROOT / path).is_file() or name not in attacks_in(ROOT / path):
                missing.append(f"{promise}: {test} does not exist")
    return missing


def test_every_promise_has_an_attacking_test_that_exists():
    rows = promises(REGISTER.read_text())
    assert len(rows) >= 10
    assert missing_tests(rows) == []


def test_every_row_names_its_attacker():
    assert [promise for promise, attacker, _ in promises(REGISTER.read_text()) if not attacker] == []


def test_a_promise_without_a_test_or_with_a_test_that_is_gone_fails():
    rows = promises("| Promise | Attacker | Attacking tests |\n|---|---|---|\n"
                    "| Unguarded | crowd |  |\n"
                    "| Stale | crowd | tests/structure/test_promises.py::test_that_was_renamed |\n")
    assert missing_tests(rows) == ["Unguarded: no attacking test",
                                   "Stale: tests/structure/test_promises.py::test_that_was_renamed does not exist"]

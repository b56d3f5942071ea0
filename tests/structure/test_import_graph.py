"""The import graph of the apps, read from the source with `ast` (STYLE.md "The shape").

Every import counts, at module level or inside a function: a deferred import still makes
one module need another. Two rules: no circle between modules, and no arrow that runs
up the layers `results → reconcile → records → reviews` (with `events → reviews`
beside them, `config` above all, and `aas_verify` and `client` apart from every app).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("reviews", "events", "records", "reconcile", "results", "config", "aas_verify", "client")
# What each top-level package may import from the project.
MAY_IMPORT = {
    "reviews": set(),
    "events": {"reviews"},
    "records": {"reviews"},
    "reconcile": {"records", "reviews"},
    "results": {"reconcile", "records", "reviews", "aas_verify"},  # verify_bundle is the offline verifier
    "config": {"reviews", "events", "records", "reconcile", "results"},
    "aas_verify": set(),
    "client": set(),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    found = {}
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")) if (ROOT / app).is_dir() else ():
            if "migrations" in path.parts:
                continue
            found[module_name(path)] = path
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `name` imports: `from pkg import sub` names the submodule when there is one."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bases = [alias.name for alias in node.names]
            named: list[str] = []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            bases = [base]
            named = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for candidate in named:
            if candidate in modules:
                targets.add(candidate)
        for base in bases:
            # The module itself, or the nearest package of it that is ours.
            while base and base not in modules:
                base = base.rpartition(".")[0]
            if base and not any(n.startswith(base + ".") and n in targets for n in named):
                targets.add(base)
    # Importing `a.b.c` runs the packages `a` and `a.b` first: an arrow to each package the importer
    # is not inside (a package's own modules import each other without re-running it).
    for target in list(targets):
        parts = target.split(".")
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            if parent in modules and not (name == parent or name.startswith(parent + ".")):
                targets.add(parent)
    targets.discard(name)
    return targets


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_it_reads_an_import_inside_a_function_and_the_packages_it_runs(tmp_path):
    module = tmp_path / "late.py"
    module.write_text("def f():\n    from reconcile.services.sync import sync_run\n")
    modules = project_modules() | {"late": module}
    assert {"reconcile.services.sync", "reconcile.services", "reconcile"} <= imports_of("late", module, modules)


def test_the_apps_import_each_other_in_no_circle():
    assert circles(import_graph()) == []


def test_no_import_runs_up_the_layers():
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in import_graph().items()
        for target in targets
        if (top := name.split(".")[0]) != (up := target.split(".")[0]) and up not in MAY_IMPORT[top]
    )
    assert upward == []


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
])
def test_circles_finds_exactly_the_loops(graph, expected):
    assert circles(graph) == expected


def private_imports(name: str, path: Path, modules: dict[str, Path]) -> list[str]:
    """Every `_name` this module takes from another project module: `from m import _x`, or `m._x` where
    `m` is a project module it imported (STYLE.md "Seams": a leading underscore means "this module only")."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    aliases: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                base = ".".join(anchor[: len(anchor) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif base in modules and alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{name}:{node.lineno} imports {base}.{alias.name}")
        elif isinstance(node, ast.Import):
            aliases.update({alias.asname: alias.name for alias in node.names if alias.asname and alias.name in modules})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{name}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_module_takes_another_modules_private_name():
    modules = project_modules()
    assert [use for name, path in sorted(modules.items()) for use in private_imports(name, path, modules)] == []


def test_it_finds_a_private_name_taken_by_import_and_by_attribute(tmp_path):
    module = tmp_path / "nosy.py"
    module.write_text("from records.validation.findings import _hidden\nfrom records.validation import reading\n"
                      "reading._secret\n")
    modules = project_modules() | {"nosy": module}
    assert private_imports("nosy", module, modules) == [
        "nosy:1 imports records.validation.findings._hidden", "nosy:3 uses records.validation.reading._secret"]

"""The seam of the review passes (issue 35, STYLE.md "Seams"): the pass world calls the decision
services, never the reverse, and the access helper enters no pass (read from the source with `ast`,
as the import graph is)."""
from __future__ import annotations

from django.conf import settings

from tests.structure.test_import_graph import import_graph


def test_the_services_never_import_the_passes():
    graph = import_graph()
    upward = sorted(f"{name} -> {target}" for name, targets in graph.items() if name.startswith("reconcile.services")
                    for target in targets if target.startswith("reconcile.passes"))
    assert upward == []
    assert "reconcile.blind" in graph["reconcile.services.decisions"]  # what they read of the passes instead
    assert not any(t.startswith("reconcile.passes") for t in graph["reconcile.blind"])


def test_no_middleware_and_no_access_helper_enters_a_pass():
    assert not [name for name in settings.MIDDLEWARE if name.startswith("reconcile.")]
    graph = import_graph()
    assert not [f"{name} -> {target}" for name, targets in graph.items() if name.startswith("reviews")
                for target in targets if target.startswith("reconcile")]

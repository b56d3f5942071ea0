"""Audit timeline links to reconcile's rows (reconcile/audit_links.py)."""
from types import SimpleNamespace

import pytest

from reconcile.audit_links import mappings
from reconcile.models import Mapping


@pytest.mark.django_db
def test_a_mapping_stated_by_a_result_links_to_the_statements_rows_where_it_is_shown(run_factory):
    """Such a mapping has no member record; a link without ?member= opened the first member's rows, without it."""
    run = run_factory()
    stated = Mapping.objects.create(run=run, source="MEM-OBJ-1", relation="new", target="OBJ-5",
                                    origin=Mapping.Origin.RESULT)
    event = SimpleNamespace(pk=1, object_type="mapping", object_id=str(stated.pk))
    assert mappings(run, [event]) == {1: f"/runs/{run.run_id}/reconcile/?member=statements#pair-{stated.pk}"}

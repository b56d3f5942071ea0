"""`{% pair_row %}` (reconcile/templatetags/pair_rows.py) renders a row from the row template's skeleton for
rows of its shape: what it prints is what `{% include "reconcile/_pair_row.html" %}` prints, byte for byte;
and the values the rows and the target choices make without Django's helpers (views.context.target_options,
views.rows) print as those helpers and the template printed them."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from django.db import transaction
from django.template import Context, TemplateSyntaxError, engines
from django.template.defaultfilters import date as format_date
from django.utils.html import format_html
from django.utils.safestring import SafeString
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reconcile import blockers
from reconcile.templatetags import pair_rows
from reconcile.views import page as page_view
from reconcile.views import rows as row_values
from reconcile.views.context import target_options
from tests.reconcile.page_factories import build_reconcile_run
from tests.reconcile.test_coherence_properties import play, step

ENGINE = engines["django"]
BY_INCLUDE = ENGINE.from_string(
    '{% for row in rows %}{{ row.open }}{% include "reconcile/_pair_row.html" %}{{ row.close }}\n{% endfor %}')
BY_SKELETON = ENGINE.from_string(
    '{% load pair_rows %}{% for row in rows %}{{ row.open }}{% pair_row %}{{ row.close }}\n{% endfor %}')


def _both(rows, **page) -> tuple[str, str]:
    pair_rows._BY_TEMPLATE.clear()  # every skeleton made afresh, from the rows at hand
    context = {"rows": rows, **page}
    return BY_INCLUDE.render(context), BY_SKELETON.render(context)


@pytest.fixture
def views(monkeypatch):
    """The context of each view of the page built (its rows, as PairRow.display made them)."""
    built = []
    real = page_view._view_context
    monkeypatch.setattr(page_view, "_view_context", lambda *args: built.append(real(*args)) or built[-1])
    blockers.forget_kept()
    return built


def _page_values(view: dict, csrf: str = "<input type=hidden name=csrfmiddlewaretoken value=t>") -> dict:
    return {"can_decide": True, "correction_base": view["correction_base"], "csrf_input": SafeString(csrf)}


@pytest.mark.django_db
@settings(max_examples=12, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(moves=st.lists(step, max_size=8), show=st.sampled_from(["all", "undecided", "conflicts"]),
       can_decide=st.booleans())
def test_it_prints_every_row_as_the_include_does_after_any_decisions(client, reviewer, views, moves, show, can_decide):
    """Property: whatever decisions the run took, each row of the page, read with or without the controls,
    is the same through its skeleton as through the template."""
    client.force_login(reviewer.user)
    run, member = build_reconcile_run(records=12, run_id="AAS-2026-12-03-rows-01")
    with transaction.atomic():
        blockers.forget_kept()
        play(run, moves)
        client.get(f"/runs/{run.run_id}/reconcile/?member={member}&show={show}")
        rows = views[-1]["rows"]
        page = _page_values(views[-1]) | ({} if can_decide else {"can_decide": False, "correction_base": ""})
        by_include, by_skeleton = _both(rows, **page)
        assert by_skeleton == by_include
        transaction.set_rollback(True)


@pytest.mark.django_db
def test_it_learns_that_the_template_compares_a_value(client, reviewer, views):
    """`row.side` picks the canonical side's markup: rows that differ only in it get skeletons of their own."""
    client.force_login(reviewer.user)
    run, member = build_reconcile_run(records=6, run_id="AAS-2026-12-03-rows-02")
    client.get(f"/runs/{run.run_id}/reconcile/?member={member}")
    row = next(r for r in views[-1]["rows"] if r["mapping"])
    sides = [row | {"side": side} for side in ("canonical", "new", "not-entered", "none", "missing", "new")]
    by_include, by_skeleton = _both(sides, **_page_values(views[-1]))
    assert by_skeleton == by_include
    assert "new record:" in by_skeleton and "No counterpart in the shared set." in by_skeleton
    shapes = next(iter(pair_rows._BY_TEMPLATE.values()))
    compared = {n for s in shapes.values() for n in s.compared}
    assert list(row).index("side") in compared


@pytest.mark.django_db
def test_a_row_with_quotations_and_hostile_text_prints_as_the_include_does(client, reviewer, views):
    client.force_login(reviewer.user)
    run, member = build_reconcile_run(records=4, run_id="AAS-2026-12-03-rows-03")
    client.get(f"/runs/{run.run_id}/reconcile/?member={member}")
    check = SimpleNamespace(status="not-found", mark="✗ not found", path="a<b>.md", lines="3-4", link="/x?line=3#L3",
                            line=3, message='"quoted" & <lost>', source_lines=[(3, "<script>")], candidates=[])
    hostile = SafeString("&lt;script&gt;alert(1)&lt;/script&gt;")  # escaped, as display() gives every text
    rows = [r | {"quotations": [check], "label": hostile} for r in views[-1]["rows"]]
    rows += [r | {"label": "<b>raw & unescaped</b>", "version": 12345} for r in views[-1]["rows"]]
    by_include, by_skeleton = _both(rows, **_page_values(views[-1]))
    assert by_skeleton == by_include
    assert "quoted at" in by_skeleton and "&lt;b&gt;raw &amp; unescaped&lt;/b&gt;" in by_skeleton
    assert "&amp;lt;" not in by_skeleton  # nothing escaped twice


def test_it_refuses_a_row_template_that_changes_a_value_as_it_prints_it():
    row_template = ENGINE.from_string("<p>{{ row.label|upper }}</p>").template
    with pytest.raises(TemplateSyntaxError, match="changes a row value"):
        pair_rows.render_pair_row(row_template, Context({"row": {"label": "x"}}), {"label": "x"})


def test_a_row_whose_value_the_template_looks_into_is_rendered_by_the_template():
    row_template = ENGINE.from_string("<p>{{ row.form.kind }} {% if row.form %}{{ row.label }}{% endif %}</p>").template
    rows = [{"form": {"kind": "OBJ"}, "label": "a & b"}, {"form": "text", "label": "c"},
            {"form": {"kind": "<x>"}, "label": ""}]
    for row in rows:
        context = Context({"row": row})
        assert pair_rows.render_pair_row(row_template, context, row) == row_template.render(context)


def test_the_target_options_are_those_the_template_printed():
    targets = [("OBJ-1", "Store <b>&</b> \"recall\""), ("OBJ-2", ""), ("OBJ-3", None), ("OBJ-'4'", "it's")]
    by_template = ENGINE.from_string('{% for id, label in targets %}<option value="{{ id }}">{{ id }}{% if label %}'
                                     ' — {{ label }}{% endif %}</option>{% endfor %}').render({"targets": targets})
    assert target_options(targets) == by_template
    assert "&lt;b&gt;&amp;&lt;/b&gt; &quot;recall&quot;" in by_template and "&#x27;4&#x27;" in by_template


@pytest.mark.parametrize("moment", [datetime(2026, 12, 2, 18, 7, 59, tzinfo=timezone.utc), datetime(987, 1, 2, 3, 4),
                                    datetime(2026, 10, 25, 1, 30, tzinfo=timezone(timedelta(hours=-9, minutes=-30)))])
def test_a_decided_rows_date_prints_as_the_date_filter_does(moment):
    assert row_values._minute(moment) == format_date(moment, "Y-m-d H:i")


@pytest.mark.parametrize(("url", "text"), [
    ("/runs/A/reconcile/records/X/propose/?member=m&row=pair-1", "Propose a mapping…"),
    ('/x?a="1"&b=<2>', "Reject O'Brien & <co>…"),
    (SafeString("/x?a=1&amp;b=2"), SafeString("<em>kept</em>")),
])
def test_a_rows_control_link_prints_as_format_html_does(url, text):
    assert row_values._opener(url, text) == format_html(
        '<a class="row-action" href="{0}" hx-get="{0}" hx-target="this" hx-swap="outerHTML">{1}</a>', url, text)

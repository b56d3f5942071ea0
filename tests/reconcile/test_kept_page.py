"""The reconciliation page's view is kept per audit chain head (reconcile.blockers.kept_page): readers of
an unchanged run share one build of it; any change made through the services moves the head and the next
view is built again; what a reader may do and their CSRF token stay their own."""
from __future__ import annotations

import re

import pytest
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reconcile import blockers, services
from reconcile.models import Mapping
from reconcile.views import page as page_view
from reviews.audit import Actor
from tests.reconcile.page_factories import build_reconcile_run
from tests.reconcile.test_coherence_properties import play, step

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r'(?<=name="csrfmiddlewaretoken" value=")[^"]+|(?<="X-CSRFToken": ")[^"]+')


def _url(run, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"/runs/{run.run_id}/reconcile/" + (f"?{query}" if query else "")


def _without_tokens(body: bytes) -> str:
    """The page with its CSRF tokens (masked afresh for every response) left out."""
    return TOKEN.sub("", body.decode())


@pytest.fixture
def builds(monkeypatch):
    """How many times a view of the page was built (not taken from what was kept)."""
    built = []
    real = page_view._view_context
    monkeypatch.setattr(page_view, "_view_context", lambda *args: built.append(1) or real(*args))
    blockers.forget_kept()
    return built


def test_a_view_is_built_once_per_chain_head_and_again_after_a_decision(client, reviewer, builds):
    client.force_login(reviewer.user)
    run, member = build_reconcile_run(records=20, run_id="AAS-2026-12-02-kept-01")
    url = _url(run, member=member)
    first, again = client.get(url).content, client.get(url).content
    assert len(builds) == 1 and _without_tokens(again) == _without_tokens(first)
    mapping = Mapping.objects.filter(run=run, score=0.95).order_by("pk").first()
    assert f'id="pair-{mapping.pk}" class="pair state-proposed'.encode() in first
    services.decide_mapping(mapping=mapping, decision="accept", rationale="same slug", expected_version=mapping.version,
                            actor=Actor.for_user(reviewer.user))
    after = client.get(url).content
    assert len(builds) == 2 and f'id="pair-{mapping.pk}" class="pair state-accepted'.encode() in after
    # Another filter, or the next page of rows, is a view of its own.
    client.get(_url(run, member=member, show="undecided"))
    assert len(builds) == 3


def test_readers_whose_roles_differ_do_not_share_a_view(client, reviewer, auditor, builds):
    run, member = build_reconcile_run(records=20, run_id="AAS-2026-12-02-kept-02")
    url = _url(run, member=member)
    client.force_login(reviewer.user)
    decider = client.get(url).content
    reader = Client()
    reader.force_login(auditor.user)
    read_only = reader.get(url).content
    assert b'name="decision" value="accept"' in decider and b'class="row-action"' in decider  # propose, reject
    assert b'name="decision"' not in read_only and b'class="row-action"' not in read_only
    assert b"Request a correction" in decider and b"Request a correction" not in read_only
    assert len(builds) == 2
    # And the other way round: what the auditor's view kept gives the reviewer no fewer controls.
    blockers.forget_kept()
    assert b'name="decision"' not in reader.get(url).content
    assert b'name="decision" value="accept"' in client.get(url).content


def test_each_reader_decides_with_their_own_csrf_token(reviewer, second_reviewer, builds):
    run, member = build_reconcile_run(records=20, run_id="AAS-2026-12-02-kept-03")
    url = _url(run, member=member)
    first, second = Client(enforce_csrf_checks=True), Client(enforce_csrf_checks=True)
    first.force_login(reviewer.user)
    second.force_login(second_reviewer.user)
    first.get(url)
    body = second.get(url).content.decode()
    assert len(builds) == 1  # the second reader's page is the view the first one's built
    mapping = Mapping.objects.filter(run=run, score=0.95).order_by("pk").first()
    row = body[body.index(f'id="pair-{mapping.pk}"'):]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', row).group(1)
    action = re.search(r'<form method="post" action="([^"]+)"', row).group(1)
    response = second.post(action.replace("&amp;", "&"), {"csrfmiddlewaretoken": token, "version": mapping.version,
                                                          "decision": "accept", "rationale": "same slug"})
    assert response.status_code == 302 and f"#pair-{mapping.pk}" in response["Location"]  # not 403: CSRF held
    mapping.refresh_from_db()
    assert mapping.state == "accepted" and second_reviewer.user.username in mapping.decided_by


@settings(max_examples=10, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(before=st.lists(step, max_size=4), moves=st.lists(step, min_size=1, max_size=6),
       show=st.sampled_from(["all", "undecided", "conflicts"]))
def test_a_kept_view_is_the_view_built_afresh_after_any_decisions(client, reviewer, before, moves, show):
    """Property: after any sequence of decisions through the services, the page a reader gets (kept from
    views made before and between them) is byte for byte the page built with nothing kept."""
    client.force_login(reviewer.user)
    run, member = build_reconcile_run(records=12, run_id="AAS-2026-12-02-kept-04")
    url = _url(run, member=member, show=show)
    with transaction.atomic():
        blockers.forget_kept()  # nothing kept from an earlier example, whose writes were rolled back
        client.get(url)
        play(run, before)
        client.get(url)
        client.get(_url(run, member=member))
        play(run, moves)
        kept = client.get(url).content
        blockers.forget_kept()
        fresh = client.get(url).content
        assert _without_tokens(kept) == _without_tokens(fresh)
        transaction.set_rollback(True)


def test_the_view_after_a_decision_reads_the_standing_its_answer_left(client, reviewer, monkeypatch, builds):
    """A decision posted from a row (htmx) answers with the standing after it, kept for the chain head it
    left: the page view that follows builds its rows again, not the run's standing, and shows the decision."""
    client.force_login(reviewer.user)
    run, member = build_reconcile_run(records=20, run_id="AAS-2026-12-03-kept-01")
    url = _url(run, member=member)
    client.get(url)
    standings = []  # the run's facts read for a standing
    real = blockers.run_facts
    monkeypatch.setattr(blockers, "run_facts", lambda *a, **k: standings.append(1) or real(*a, **k))
    mapping = Mapping.objects.filter(run=run, score=0.95).order_by("pk").first()
    answer = client.post(f"/runs/{run.run_id}/reconcile/mappings/{mapping.pk}/decide/?member={member}",
                         {"decision": "accept", "rationale": "same slug", "version": mapping.version},
                         HTTP_HX_REQUEST="true")
    assert answer.status_code == 200 and standings  # the coherence check's, and the answer's own
    answered = len(standings)
    after = client.get(url).content
    assert len(standings) == answered, "the view after the answer built the standing again"
    assert len(builds) == 2 and f'id="pair-{mapping.pk}" class="pair state-accepted'.encode() in after
    # What was kept is the standing a build from scratch gives for that state.
    assert blockers.kept_standing(type(run).objects.get(pk=run.pk)).blockers == blockers.run_standing(run).blockers

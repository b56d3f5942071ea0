"""Live pages (issue 20 item 3): the run page, the runs list and the reconciliation counters poll with a
back-off while the pipeline runs or a correction request waits for its answer, and stop when nothing does."""
from __future__ import annotations

import pytest
from django.test import Client

from reconcile.services.corrections import raise_correction, withdraw_correction
from records import services
from reviews.audit import Actor
from reviews.models import Run
from tests.conftest import seed_bytes

ACTOR = Actor.command("test")


@pytest.fixture
def page(reviewer):
    client = Client()
    client.force_login(reviewer.user)
    return client


def validated_run(run_factory, capture):
    run = run_factory()
    with capture(execute=True):
        services.ingest_member_report(run=run, role="memory", filename="memory.md", content=seed_bytes("002"),
                                      actor=ACTOR)
    run.refresh_from_db()
    return run


@pytest.mark.django_db
def test_it_backs_off_while_the_pipeline_runs_up_to_a_cap(page, run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    with django_capture_on_commit_callbacks(execute=False):  # queued, never run: the pipeline stays busy
        services.ingest_member_report(run=run, role="memory", filename="memory.md", content=seed_bytes("002"),
                                      actor=ACTOR)
    first = page.get(f"/runs/{run.run_id}/").content.decode()
    assert 'hx-trigger="load delay:1.0s"' in first and "?poll=1" in first
    later = page.get(f"/runs/{run.run_id}/?poll=3", HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="load delay:3.4s"' in later and "?poll=4" in later
    assert 'delay:5.0s' in page.get(f"/runs/{run.run_id}/?poll=99", HTTP_HX_REQUEST="true").content.decode()


@pytest.mark.django_db
def test_the_run_page_keeps_asking_while_a_correction_waits_and_stops_after(page, reviewer, run_factory,
                                                                            django_capture_on_commit_callbacks):
    run = validated_run(run_factory, django_capture_on_commit_callbacks)
    assert "hx-trigger" not in page.get(f"/runs/{run.run_id}/", HTTP_HX_REQUEST="true").content.decode()
    request = raise_correction(run=run, member="memory", text="cite the store", actor=Actor.for_user(reviewer.user))
    waiting = page.get(f"/runs/{run.run_id}/", HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="load delay:1.0s"' in waiting and "waiting for answers" in waiting
    counters = page.get(f"/runs/{run.run_id}/reconcile/counters/").content.decode()
    assert 'hx-trigger="load delay:1.0s"' in counters and 'id="counters"' in counters
    withdraw_correction(request=request, actor=Actor.for_user(reviewer.user), expected_version=request.version)
    assert "hx-trigger" not in page.get(f"/runs/{run.run_id}/", HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in page.get(f"/runs/{run.run_id}/reconcile/counters/").content.decode()


@pytest.mark.django_db
def test_the_runs_list_refreshes_its_table_while_a_run_is_validating(page, run_factory):
    run = run_factory()
    assert "hx-trigger" not in page.get("/").content.decode()
    Run.objects.filter(pk=run.pk).update(status=Run.Status.VALIDATING)
    html = page.get("/?status=validating").content.decode()
    assert 'hx-trigger="load delay:1.0s"' in html and 'hx-get="?status=validating&amp;poll=1"' in html
    fragment = page.get("/?status=validating&poll=1", HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<div id="runs-table"') and "<html" not in fragment
    Run.objects.filter(pk=run.pk).update(status=Run.Status.IN_REVIEW)
    assert "hx-trigger" not in page.get("/?poll=2", HTTP_HX_REQUEST="true").content.decode()

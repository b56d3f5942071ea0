"""The pages of "Send it back": raise from the corrections page (prefilled from a row), settle, read the
diff of the corrected version; counts on the run page; the result lists the requests."""
from __future__ import annotations

import pytest
from django.test import Client, TestCase

from reconcile.models import CorrectionRequest
from reconcile.services import corrections
from results.models import Result
from results.services import approve_run, finalize_run
from reviews.audit import Actor
from tests.conftest import seed_bytes
from tests.reconcile.test_corrections import FIRST_ID, MEMORY, corrected, raise_one, upload
from tests.results.test_approval import (CHEATSHEET, CHEATSHEET_FIELDS, corpus_files, mark_validated, reconcile_rows,
                                         store_members)


@pytest.fixture
def browser_reviewer(reviewer):
    client = Client()
    client.force_login(reviewer.user)
    return client


@pytest.fixture
def memory_run(run_factory, agent):
    run = run_factory()
    assert upload(agent, run, MEMORY).status_code == 201
    return run


def test_it_prefills_the_form_from_a_record_row_and_raises_the_request(memory_run, browser_reviewer):
    url = f"/runs/{memory_run.run_id}/corrections/"
    page = browser_reviewer.get(url, {"member": "memory", "record": FIRST_ID})
    html = page.content.decode()
    assert page.status_code == 200 and f'value="{FIRST_ID}"' in html and "Request a correction" in html
    sent = browser_reviewer.post(url, {"member": "memory", "record": FIRST_ID, "text": "Cite the store's file."})
    request = CorrectionRequest.objects.get(run=memory_run)
    assert sent.status_code == 302 and sent["Location"].endswith(f"#correction-{request.pk}")
    assert request.record_id == FIRST_ID and request.author == "user:reviewer-1"


def test_the_reconciliation_rows_link_to_the_prefilled_form(memory_run, browser_reviewer, agent):
    upload(agent, memory_run, seed_bytes("001"), role="workflow")
    html = browser_reviewer.get(f"/runs/{memory_run.run_id}/reconcile/", {"member": "memory"}).content.decode()
    assert f"/runs/{memory_run.run_id}/corrections/?member=memory&amp;record={FIRST_ID}#raise" in html
    assert "data-correction" in html and "<kbd>s</kbd>" in html


def test_an_answered_request_shows_its_answer_the_diff_link_and_resolve(memory_run, reviewer, agent,
                                                                       browser_reviewer):
    made = raise_one(reviewer, memory_run)
    upload(agent, memory_run, corrected(MEMORY, "The store is RT-CMP-2."), answers="- corrected: added the store")
    html = browser_reviewer.get(f"/runs/{memory_run.run_id}/corrections/").content.decode()
    assert "added the store" in html and "?from=1&amp;to=2" in html and ">Resolve<" in html
    diff = browser_reviewer.get(f"/runs/{memory_run.run_id}/members/memory/diff/", {"from": 1, "to": 2})
    assert diff.status_code == 200 and f"#{made['id']}" in diff.content.decode()
    request = CorrectionRequest.objects.get(pk=made["id"])
    done = browser_reviewer.post(f"/runs/{memory_run.run_id}/corrections/{made['id']}/resolve/",
                                 {"version": request.version})
    assert done.status_code == 302
    assert CorrectionRequest.objects.get(pk=made["id"]).state == "resolved"


def test_the_run_page_counts_open_and_answered_requests(memory_run, reviewer, browser_reviewer):
    raise_one(reviewer, memory_run)
    html = browser_reviewer.get(f"/runs/{memory_run.run_id}/reconcile/progress/").content.decode()
    assert "1 correction open, 0 answered" in html


def test_the_diff_api_lists_records_changed_and_requests_answered(memory_run, reviewer, agent):
    made = raise_one(reviewer, memory_run)
    changed = MEMORY.replace(b"\n", b"\n", 1)
    body = corrected(changed, "One more sentence.")
    upload(agent, memory_run, body, answers="- corrected: one more sentence")
    data = reviewer.get(f"/api/runs/{memory_run.run_id}/members/memory/diff/?from=1&to=2").json()
    assert (data["from"], data["to"]) == (1, 2)
    assert [r["id"] for r in data["requests_answered"]] == [made["id"]]
    assert set(data["findings"]) == {"gained", "lost"}
    assert reviewer.get(f"/api/runs/{memory_run.run_id}/members/memory/diff/?from=9").status_code == 404


def test_the_result_lists_every_request_with_its_final_state(run_factory):
    run = run_factory(**CHEATSHEET_FIELDS)
    files = corpus_files(CHEATSHEET)
    versions = store_members(run, files)
    mark_validated(run, files, warnings=1)
    reconcile_rows(run, versions)
    reviewer = Actor("user:reviewer-1")
    made = corrections.raise_correction(run=run, member="memory", text="Name the store's file.", actor=reviewer)
    corrections.withdraw_correction(request=made, actor=reviewer, expected_version=made.version,
                                    reason="The runtime report names it.")
    approve_run(run=run, note="Checked every record.", actor=reviewer)
    finalize_run(run=run, actor=Actor.worker("test"))
    markdown = Result.objects.get(run=run).markdown
    assert "### Correction requests" in markdown
    assert f"- #{made.pk} to the memory report, raised by user:reviewer-1: Name the store's file. — withdrawn" in markdown

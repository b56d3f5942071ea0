"""What a reviewer met reconciling the corpus runs end to end as a new user (QA pass), each a test.

An accepted value amendment stands beside the record it amends in Shared records: the
dynamic-cheatsheet run's reconciliation amends EPI-OBJ-3's `Part of: RT-OBJ-2` to
`Part of: MEM-OBJ-1`; before, a reviewer who accepted it signed a result whose Shared records still
said, without a word beside it, that the record is part of RT-OBJ-2, while Limitations called only
the carried amendments "not applied to the shared records". A revision's page names the run it
revises; rejecting the record an accepted `new` mapping entered is a blocker.
Decisions go through the API and the pages; results are read as bytes.
"""
from __future__ import annotations

import pytest

from results.services.result_input import amended_records
from results.models import Result
from records.document import Amendment
from tests.reconcile.test_issue_scenarios import amendment_starting, finalize, section
from tests.results.test_result_api import API, RUN_ID, decide_everything, upload_corpus_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus_run(agent, django_capture_on_commit_callbacks):
    return upload_corpus_run(agent, django_capture_on_commit_callbacks)


def shared_record(markdown: str, heading: str) -> str:
    return section(markdown, "## Shared records").split(f"\n{heading}\n", 1)[1].split("\n#### ", 1)[0]


def test_an_accepted_value_amendment_is_stated_under_the_record_it_amends(
        corpus_run, reviewer, django_capture_on_commit_callbacks):
    item = amendment_starting(reviewer, "EPI-OBJ-3 supersedes")
    response = reviewer.post(f"{API}/amendments/{item['id']}/decision/",
                             {"decision": "accept", "rationale": "MEM-OBJ-1 is the closer whole",
                              "version": item["version"]}, format="json")
    assert response.status_code == 200, response.json()
    decide_everything(reviewer)
    markdown = finalize(reviewer, django_capture_on_commit_callbacks).markdown

    epi_obj_3 = next(line for line in section(markdown, "### Mappings").splitlines() if line.startswith("| EPI-OBJ-3 |"))
    canonical = epi_obj_3.split(" | ")[2]
    record = shared_record(markdown, next(line for line in markdown.splitlines()
                                          if line.startswith(f"#### {canonical} — ")))
    assert "Part of: RT-OBJ-2" in record  # the member's text, carried verbatim
    assert "\n##### Accepted amendment (reconciliation.md line 14)\n" in record
    assert ("Accepted by token:reviewer-1; where it differs from the text above, it replaces it: EPI-OBJ-3 supersedes "
            "`Part of: RT-OBJ-2` with `Part of: MEM-OBJ-1`.") in record
    # A carried amendment is not placed under its record; Limitations says it is not applied.
    epi_obj_8 = next(line for line in section(markdown, "### Mappings").splitlines() if line.startswith("| EPI-OBJ-8 |"))
    obj_8 = epi_obj_8.split(" | ")[2]
    assert "Accepted amendment" not in shared_record(markdown, next(
        line for line in markdown.splitlines() if line.startswith(f"#### {obj_8} — ")))
    assert "- Carried amendment, not applied to the shared records: EPI-OBJ-8 supersedes" in section(
        markdown, "## Limitations")
    data = Result.objects.get(run__run_id=RUN_ID).data
    assert [a["amends"] for a in data["amendments"] if a["text"].startswith("EPI-OBJ-3 supersedes")] == [[canonical]]


def test_a_revision_s_run_page_links_the_final_run_it_revises(
        corpus_run, reviewer, client, django_capture_on_commit_callbacks):
    # Found by QA: the final run's page said "Revised by …-02", but the revision's page said nothing
    # of the run it revises (only its warnings named the old run ID).
    decide_everything(reviewer)
    finalize(reviewer, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        response = reviewer.post(f"{API}/revise/")
    assert response.status_code == 201, response.json()
    successor = response.json()["run_id"]
    client.force_login(reviewer.user)
    page = client.get(f"/runs/{successor}/").content.decode()
    assert f'<dt>Revises</dt><dd><a href="/runs/{RUN_ID}/">{RUN_ID}</a>' in page
    assert "<dt>Revises</dt>" not in client.get(f"/runs/{RUN_ID}/").content.decode()


@pytest.mark.parametrize("text, amends", [
    ("RTE-4's description of duplicate diagnosis is replaced by …", ("RTE-4",)),
    ("RTE-2 and RTE-3's unqualified “no TTL” statements are narrowed to …", ("RTE-2", "RTE-3")),
    ("CMP-1's consumer description is extended to the judge of RTE-4.", ("CMP-1",)),
    ("EPI-OBJ-3 supersedes `Part of: RT-OBJ-2` with `Part of: MEM-OBJ-1`.", ("OBJ-8",)),
    ("EPI-OBJ-4 is superseded by MEM-OBJ-2. Both records …", ()),  # a supersession: its mapping says it
    ("The runtime report's RTE-4 is narrowed.", ()),  # opens with no record: not placed under one
    ("EPI-OBJ-5 supersedes `Part of: RT-OBJ-4`.", ()),  # a record without a place in the shared set
])
@pytest.mark.django_db(False)
def test_a_value_amendment_amends_the_records_it_opens_with(text, amends):
    aliases = {"RTE-2": "RTE-2", "RTE-3": "RTE-3", "RTE-4": "RTE-4", "CMP-1": "CMP-1", "EPI-OBJ-3": "OBJ-8",
               "MEM-OBJ-2": "OBJ-6", "EPI-OBJ-4": "OBJ-6"}
    assert amended_records(Amendment(kind="amendment", text=text, line=1), aliases) == amends


def test_rejecting_the_record_an_accepted_new_mapping_entered_blocks_approval(
        corpus_run, reviewer, client, django_capture_on_commit_callbacks):
    # Found by QA: with every item decided, 'Reject OBJ-7…' on EPI-OBJ-1's row (its accepted `new`
    # record) left the run approvable with no blocker; approval then failed the run at finalization
    # ("OBJ-7 is cited but is not a record of Shared records"). Now it is a rejected_target blocker,
    # the approval is a 409 naming it, and the page's conflicts filter shows the row.
    from reconcile.models import CanonicalRecord, Mapping
    from reviews.models import Run

    decide_everything(reviewer)
    mapping = Mapping.objects.get(run__run_id=RUN_ID, source="EPI-OBJ-1", state="accepted")
    assert mapping.relation == "new"
    record = CanonicalRecord.objects.get(run__run_id=RUN_ID, canonical_id=mapping.target)
    client.force_login(reviewer.user)
    response = client.post(f"/runs/{RUN_ID}/reconcile/canonical/{record.pk}/reject/",
                           {"rationale": "the answer candidate is not memory", "mapping": mapping.pk,
                            "acknowledged": str(mapping.pk)})  # the form warned about the mapping (issue 22)
    assert response.status_code in (200, 302)
    record.refresh_from_db()
    assert record.state == "rejected"

    blockers = reviewer.get(f"{API}/blockers/").json()
    assert blockers["approvable"] is False
    assert [(b["code"], b["record"]) for b in blockers["blockers"]] == [("rejected_target", "EPI-OBJ-1")]
    assert f"points at {mapping.target}, which was rejected: “the answer candidate is not memory”" in \
        blockers["blockers"][0]["message"]
    with django_capture_on_commit_callbacks(execute=True):
        refused = reviewer.post(f"{API}/approve/", {"note": "checked"}, format="json")
    assert refused.status_code == 409
    assert Run.objects.get(run_id=RUN_ID).status == Run.Status.IN_REVIEW
    page = client.get(f"/runs/{RUN_ID}/reconcile/", {"member": "epistemic", "show": "conflicts"}).content.decode()
    assert f'<article id="pair-{mapping.pk}"' in page and page.count('<article id="pair-') == 1


def test_a_row_made_stale_by_a_re_upload_does_not_say_the_reviewer_made_it_stale(
        corpus_run, reviewer, agent, client, django_capture_on_commit_callbacks):
    # Found by QA: after an agent re-uploaded epistemic.md with EPI-OBJ-1 reworded, its accepted row
    # read "stale by user:reviewer, <the time of the acceptance>".
    from reconcile.models import Mapping
    from tests.results.test_result_api import CHEATSHEET, corpus_files

    mapping = Mapping.objects.get(run__run_id=RUN_ID, source="EPI-OBJ-1", relation="new")
    assert reviewer.post(f"{API}/mappings/{mapping.pk}/decision/",
                         {"decision": "accept", "rationale": "a record of its own", "version": mapping.version},
                         format="json").status_code == 200
    old = "answer text returned by `advanced_generate` or a direct client generation call."
    text = corpus_files(CHEATSHEET)["epistemic.md"].decode()
    assert old in text
    with django_capture_on_commit_callbacks(execute=True):
        response = agent.post(f"{API}/members/", {"role": "epistemic", "content": text.replace(
            old, "answer text returned by `advanced_generate`, or by a direct client generation call.")}, format="json")
    assert response.status_code == 201, response.json()
    mapping.refresh_from_db()
    assert mapping.state == "stale"

    client.force_login(reviewer.user)
    page = client.get(f"/runs/{RUN_ID}/reconcile/", {"member": "epistemic"}).content.decode()
    row = page[page.index(f'<article id="pair-{mapping.pk}"'):]
    row = row[:row.index("</article>")]
    assert "stale by" not in row
    assert ("decided by token:reviewer-1, " in row
            and ": “a record of its own”; the record or its target changed since: decide again" in row)


def test_the_rest_of_the_blockers_are_a_page_of_the_app_not_the_api(corpus_run, reviewer, client):
    # Found by QA: "… and 11 more (all 23)" under the approval panel linked to GET /api/…/blockers/,
    # DRF's browsable JSON, where the blockers' links cannot be followed.
    client.force_login(reviewer.user)
    total = len(reviewer.get(f"{API}/blockers/").json()["blockers"])
    assert total > 12
    for panel in (client.get(f"/runs/{RUN_ID}/approve/"), client.get(f"/runs/{RUN_ID}/reconcile/")):
        text = panel.content.decode()
        assert f'<a href="/runs/{RUN_ID}/reconcile/blockers/">all {total}</a>' in text
        assert f"/api/runs/{RUN_ID}/blockers/" not in text
    page = client.get(f"/runs/{RUN_ID}/reconcile/blockers/")
    assert page.status_code == 200
    text = page.content.decode()
    assert text.count("<li data-code=") == total and "more (" not in text
    assert f'href="/runs/{RUN_ID}/reconcile/?member=epistemic#pair-' in text

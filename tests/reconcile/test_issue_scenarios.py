"""Issue 10's scenarios over the API and the pages: each ends in a coherent result or a 409 naming the blockers.

Every decision goes through the API (the real services); results are read as bytes and compared
with hand-written lines.
"""
from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from results import rendering
from results import services as approval
from reconcile.models import CanonicalRecord, Mapping
from results.models import Result
from records.models import MemberVersion
from reviews.models import AuditEvent, Run
from tests.reconcile.factories import WORKER
from tests.results.test_result_api import API, NOTE, RUN_ID, decide_everything, upload_corpus_run

pytestmark = pytest.mark.django_db


def mapping(source: str, relation: str) -> Mapping:
    return Mapping.objects.get(run__run_id=RUN_ID, source=source, relation=relation)


def decide(reviewer, item: Mapping, decision: str, rationale: str = "checked"):
    item.refresh_from_db()
    return reviewer.post(f"{API}/mappings/{item.pk}/decision/",
                         {"decision": decision, "rationale": rationale, "version": item.version}, format="json")


def amendment_starting(reviewer, text: str) -> dict:
    items = reviewer.get(f"{API}/amendments/", {"page_size": 50}).json()
    items = items.get("results", items) if isinstance(items, dict) else items
    return next(a for a in items if a["text"].startswith(text))


def finalize(reviewer, capture) -> Result:
    with capture(execute=True):
        response = reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    assert response.status_code == 201, response.json()
    return Result.objects.get(run__run_id=RUN_ID)


def section(markdown: str, title: str) -> str:
    return markdown.split(f"\n{title}\n", 1)[1].split("\n## ", 1)[0]


@pytest.fixture
def corpus_run(agent, django_capture_on_commit_callbacks):
    return upload_corpus_run(agent, django_capture_on_commit_callbacks)


def test_a_part_of_with_its_new_suggestion_rejected_is_stated_with_its_relation_and_never_as_homeless(
        corpus_run, reviewer, django_capture_on_commit_callbacks):
    response = reviewer.post(f"{API}/mappings/", {"source": "EPI-OBJ-3", "relation": "part-of", "target": "OBJ-2"},
                             format="json")
    assert response.status_code == 201
    assert decide(reviewer, Mapping.objects.get(pk=response.json()["id"]), "accept", "a part of the examples")\
        .status_code == 200
    assert decide(reviewer, mapping("EPI-OBJ-3", "new"), "reject", "not a new record").status_code == 200
    decide_everything(reviewer)
    markdown = finalize(reviewer, django_capture_on_commit_callbacks).markdown

    assert "| EPI-OBJ-3 | part-of | OBJ-2 | EPI-OBJ-3 part of OBJ-2 |\n" in markdown
    assert "| EPI-OBJ-3 | epistemic | mapped | part-of | OBJ-2 | a part of the examples |\n" in markdown
    assert ("- EPI-OBJ-3 as a new record: rejected in favour of the accepted EPI-OBJ-3 part of OBJ-2.\n"
            "  Rationale: not a new record\n") in markdown
    assert "EPI-OBJ-3" not in section(markdown, "## Limitations").split("Carried amendment")[0]
    assert "EPI-OBJ-3 → OBJ-2" not in markdown
    data = Result.objects.get(run__run_id=RUN_ID).data
    assert {"member": "epistemic", "record": "EPI-OBJ-3", "disposition": "mapped", "relation": "part-of",
            "target": "OBJ-2", "rationale": "a part of the examples",
            "alternatives": [{"relation": "new", "target": None, "rationale": "not a new record"}]} in data["dispositions"]


def test_accepting_an_amendment_about_a_record_whose_only_mapping_was_rejected_is_a_409(corpus_run, reviewer):
    assert decide(reviewer, mapping("EPI-OBJ-2", "new"), "reject", "not an object of the set").status_code == 200
    item = amendment_starting(reviewer, "EPI-OBJ-2 supersedes")
    response = reviewer.post(f"{API}/amendments/{item['id']}/decision/",
                             {"decision": "accept", "rationale": "yes", "version": item["version"]}, format="json")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "incoherent_decision"
    assert "EPI-OBJ-2 has no place in the shared set (every mapping of it was rejected)" in error["message"]
    # The blocker's words describe the state the acceptance would make; the message says it was not made.
    assert error["message"].startswith("Not accepted: it would contradict another decision. ")
    # ... and never that the amendment "is accepted": it was just refused (issue 22).
    assert "is accepted" not in error["message"]
    assert amendment_starting(reviewer, "EPI-OBJ-2 supersedes")["state"] == "proposed"


def test_rejecting_the_mapping_after_accepting_its_amendment_blocks_approval_naming_both(
        corpus_run, reviewer):
    item = amendment_starting(reviewer, "EPI-OBJ-2 supersedes")
    assert reviewer.post(f"{API}/amendments/{item['id']}/decision/",
                         {"decision": "accept", "rationale": "yes", "version": item["version"]},
                         format="json").status_code == 200
    decide_everything(reviewer, amendment=("carry", "left open"))
    epi2 = mapping("EPI-OBJ-2", "new")
    assert decide(reviewer, epi2, "reopen", "look again").status_code == 200
    assert decide(reviewer, epi2, "reject", "not an object of the set").status_code == 200  # a rejection is never refused

    response = reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    assert response.status_code == 409
    blockers = response.json()["error"]["details"]["blockers"]
    assert [b["code"] for b in blockers] == ["amendment_on_rejected"]
    assert blockers[0]["record"] == "EPI-OBJ-2"
    assert blockers[0]["link"] == f"/runs/{RUN_ID}/reconcile/#amendment-{item['id']}"
    assert reviewer.get(f"{API}/blockers/").json()["blockers"] == blockers  # the same one list


def test_a_supersession_row_shows_its_target_once_that_record_entered_the_shared_set(
        corpus_run, reviewer, client):
    mem2 = mapping("MEM-OBJ-2", "new")
    assert decide(reviewer, mem2, "accept").status_code == 200
    mem2.refresh_from_db()
    supersedes = mapping("EPI-OBJ-4", "supersedes")
    client.force_login(reviewer.user)
    page = client.get(f"/runs/{RUN_ID}/reconcile/?member=epistemic").content.decode()
    row = page.split(f'id="pair-{supersedes.pk}"', 1)[1].split("</article>", 1)[0]
    assert f"<code>MEM-OBJ-2</code>, in the shared set as <code>{mem2.target}</code>" in row
    assert "not a canonical record" not in row and "Conflict" not in row
    assert decide(reviewer, supersedes, "accept").status_code == 200
    assert decide(reviewer, mapping("EPI-OBJ-4", "new"), "reject", "superseded instead").status_code == 200
    conflicts = client.get(f"/runs/{RUN_ID}/reconcile/?member=epistemic&show=conflicts").content.decode()
    assert 'class="pair state-' not in conflicts
    assert not [b for b in reviewer.get(f"{API}/blockers/").json()["blockers"] if b["record"] == "EPI-OBJ-4"]


def test_open_new_rows_promise_no_number_and_a_rejected_one_says_it_entered_nothing(corpus_run, reviewer, client):
    assert decide(reviewer, mapping("EPI-OBJ-1", "new"), "reject", "not a record").status_code == 200
    client.force_login(reviewer.user)
    page = client.get(f"/runs/{RUN_ID}/reconcile/?member=epistemic").content.decode()
    assert "next free number)" not in page
    assert page.count("new record: the next free OBJ number, allocated on accept") == 7  # EPI-OBJ-2..8
    rejected = page.split(f'id="pair-{mapping("EPI-OBJ-1", "new").pk}"', 1)[1].split("</article>", 1)[0]
    assert "Not entered into the shared set: this mapping was rejected." in rejected
    assert "EPI-OBJ-1 has no place in the shared set: every mapping of it was rejected." in rejected
    assert "rejected by token:reviewer-1" in rejected


def test_the_approval_blockers_sit_beside_the_counters_and_become_the_approval_form(
        corpus_run, reviewer, client):
    client.force_login(reviewer.user)
    page = client.get(f"/runs/{RUN_ID}/reconcile/").content.decode()
    assert '<section id="blockers"' in page and "blockers before approval" in page
    decide_everything(reviewer)
    page = client.get(f"/runs/{RUN_ID}/reconcile/").content.decode()
    panel = page.split('<section id="blockers"', 1)[1].split("</section>", 1)[0]
    assert "Nothing blocks approval." in panel and f'action="/runs/{RUN_ID}/approve/"' in panel


# --- final is final, and Revise -------------------------------------------------------------


@pytest.fixture
def final(corpus_run, reviewer, django_capture_on_commit_callbacks):
    decide_everything(reviewer)
    finalize(reviewer, django_capture_on_commit_callbacks)
    corpus_run.refresh_from_db()
    assert corpus_run.status == Run.Status.FINAL
    return corpus_run


def test_a_final_run_refuses_every_decision_with_run_final(final, reviewer):
    some = Mapping.objects.filter(run=final).first()
    answers = [
        decide(reviewer, some, "reopen", "again"),
        reviewer.post(f"{API}/mappings/", {"source": "EPI-OBJ-1", "relation": "no-counterpart"}, format="json"),
        reviewer.post(f"{API}/reopen/", {"reason": "again"}, format="json"),
        reviewer.post(f"{API}/approve/", {"note": "again"}, format="json"),
    ]
    assert [(r.status_code, r.json()["error"]["code"]) for r in answers] == [(409, "run_final")] * 4


def test_a_final_run_refuses_uploads_and_snapshots_with_run_final_and_points_at_revise(final, agent):
    from tests.records.test_source_api import tar_gz

    answers = [
        agent.post(f"{API}/members/", {"role": "memory", "content": "# changed\n"}, format="json"),
        agent.post(f"{API}/source/", {"file": SimpleUploadedFile("src.tar.gz", tar_gz({"a.py": b"x\n"}))},
                   format="multipart"),
    ]
    assert [(r.status_code, r.json()["error"]["code"]) for r in answers] == [(409, "run_final")] * 2
    assert all(f"/api/runs/{RUN_ID}/revise/" in r.json()["error"]["message"] for r in answers)


def test_a_final_runs_pages_show_the_notice_and_no_control(final, reviewer, client):
    sha = Result.objects.get(run=final).sha256
    client.force_login(reviewer.user)
    for url in (f"/runs/{RUN_ID}/reconcile/", f"/runs/{RUN_ID}/approve/", f"/runs/{RUN_ID}/result/"):
        page = client.get(url).content.decode()
        assert f'Final: result <span class="hash">{sha}</span> — closed.' in page, url
        for control in ('data-decision="', "Bulk accept", "Propose a", "Reject OBJ", "reopen-form", 'name="note"'):
            assert control not in page, (url, control)
        assert f'action="/runs/{RUN_ID}/revise/"' in page


def test_revise_starts_the_next_run_with_the_same_members_and_decisions_and_leaves_the_final_one(
        final, reviewer, django_capture_on_commit_callbacks):
    result = Result.objects.get(run=final)
    before = (result.sha256, result.markdown)
    with django_capture_on_commit_callbacks(execute=True):
        response = reviewer.post(f"{API}/revise/")
    assert response.status_code == 201, response.json()
    successor = Run.objects.get(run_id=response.json()["run_id"])
    assert successor.run_id == "AAS-2026-10-02-dynamic-cheatsheet-02"
    assert (successor.reviewed_boundary, successor.system) == (final.reviewed_boundary, final.system)
    assert successor.revises == final and final.revised_by == successor
    old_members = {v.member.role: v.sha256 for v in MemberVersion.objects.filter(
        member__run=final, member__current_version__isnull=False).select_related("member")}
    new_members = {v.member.role: v.sha256 for v in MemberVersion.objects.filter(member__run=successor)
                   .select_related("member")}
    assert new_members == old_members
    decisions = lambda run: sorted(Mapping.objects.filter(run=run).values_list("source", "relation", "target",  # noqa: E731
                                                                               "state", "rationale"))
    assert decisions(successor) == decisions(final)
    assert AuditEvent.objects.filter(run=final, action="run.revised").exists()
    assert AuditEvent.objects.filter(run=successor, action="run.revision_created").exists()
    # Validated once, after the last member was copied in: not each half-copied set (issue 22).
    assert AuditEvent.objects.filter(run=successor, action__startswith="run.valid").count() <= 1, list(
        AuditEvent.objects.filter(run=successor).values_list("action", flat=True))
    final.refresh_from_db()
    result.refresh_from_db()
    assert final.status == Run.Status.FINAL and (result.sha256, result.markdown) == before
    assert reviewer.post(f"{API}/revise/").json()["error"]["code"] == "not_revisable"
    # The successor is in review with every decision carried over, so nothing blocks it: its members'
    # front matter still names the final run (run-id -01), which validation reads as carried over
    # (a warning asking for the new run-id at the next upload), not as a member of another run.
    successor.refresh_from_db()
    assert successor.status == Run.Status.IN_REVIEW, successor.status_reason
    answer = reviewer.get(f"/api/runs/{successor.run_id}/blockers/").json()
    assert answer["blockers"] == [] and answer["approvable"] is True
    findings = reviewer.get(f"/api/runs/{successor.run_id}/validation/").json()["findings"]
    carried = [f for f in findings if f["code"] == "run-id-of-revised-run"]
    assert carried and {f["severity"] for f in carried} == {"warning"}
    assert not [f for f in findings if f["code"] == "run-id-mismatch"]
    assert sorted(CanonicalRecord.objects.filter(run=successor).values_list("canonical_id", "state")) == sorted(
        CanonicalRecord.objects.filter(run=final).values_list("canonical_id", "state"))


def test_finalization_refuses_when_an_issue_is_open_again_after_approval(corpus_run, reviewer,
                                                                        django_capture_on_commit_callbacks):
    """Whatever reopened it behind approval's back (a fault, a hand edit), an open issue is not signed as
    decided: finalization checks every decision blocker, not a chosen few (it once left out open_issue)."""
    from reconcile.models import IssueDecision

    decide_everything(reviewer)
    with django_capture_on_commit_callbacks(execute=False):
        assert reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json").status_code == 201
    IssueDecision.objects.filter(run=corpus_run).filter(pk=IssueDecision.objects.filter(run=corpus_run)
                                                         .order_by("pk").values("pk")[:1]).update(state="proposed")
    assert approval.finalize_run(run=corpus_run, actor=WORKER) is None
    corpus_run.refresh_from_db()
    assert corpus_run.status == Run.Status.FAILED
    assert corpus_run.status_reason.startswith("the decisions no longer support approval: ")
    assert "issue" in corpus_run.status_reason and not Result.objects.filter(run=corpus_run).exists()


def test_finalization_refuses_a_result_that_fails_its_self_check(corpus_run, reviewer, monkeypatch,
                                                                  django_capture_on_commit_callbacks):
    decide_everything(reviewer)
    real = rendering.render_result

    def dropping_a_disposition(data):  # fault injection: a renderer that loses one record's row
        return re.sub(r"\n\| EPI-OBJ-1 \| epistemic \|[^\n]*", "", real(data))

    monkeypatch.setattr(rendering, "render_result", dropping_a_disposition)
    with django_capture_on_commit_callbacks(execute=False):
        assert reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json").status_code == 201
    assert approval.finalize_run(run=corpus_run, actor=WORKER) is None  # in this process, with the fault
    corpus_run.refresh_from_db()
    assert corpus_run.status == Run.Status.FAILED
    assert corpus_run.status_reason == ("the rendered result failed its self-check: "
                                        "EPI-OBJ-1 (epistemic) has no disposition")
    assert not Result.objects.filter(run=corpus_run).exists()


def test_the_member_page_counts_the_mappings_of_its_records_not_only_the_statements_it_writes(
        corpus_run, reviewer, client):
    assert decide(reviewer, mapping("EPI-OBJ-1", "new"), "accept").status_code == 200
    client.force_login(reviewer.user)
    page = client.get(f"/runs/{RUN_ID}/members/epistemic/").content.decode()
    assert "0 mapping statements" in page and "0 mappings" not in page
    assert f'hx-get="/runs/{RUN_ID}/reconcile/members/epistemic/mappings/"' in page
    fragment = client.get(f"/runs/{RUN_ID}/reconcile/members/epistemic/mappings/").content.decode()
    assert ">13 mappings</a> (12 proposed, 1 accepted) · dispositions: 1 new, 11 open" in fragment


def test_the_seed_runs_result_names_its_members_as_the_run_page_does(run_factory, reviewer, client):
    from records import services as records_services
    from tests.conftest import seed_bytes
    from tests.reconcile.factories import AGENT
    from tests.reconcile.test_coherence_properties import settle

    run = run_factory(run_id="AAS-2026-09-25-supermemory-02")
    for role, seed, name in (("result", "000", "000_aa3f7ad8e0e621fa.txt"),):
        version, _ = records_services.ingest_member_report(run=run, role=role, filename=name, content=seed_bytes(seed),
                                                           actor=AGENT)
        records_services.parse_member_version(version_pk=version.pk, actor=WORKER)
    records_services.validate_run(run=run, actor=WORKER)
    from reconcile import services
    services.sync_run(run=run, actor=WORKER)
    settle(run)
    run.refresh_from_db()
    approval.approve_run(run=run, note="Seed run checked.", actor=WORKER)
    result = approval.finalize_run(run=run, actor=WORKER)
    assert result is not None, Run.objects.get(pk=run.pk).status_reason
    client.force_login(reviewer.user)
    page = client.get(f"/runs/{run.run_id}/").content.decode()
    assert re.search(r"<td[^>]*>000_aa3f7ad8e0e621fa\.txt</td>", page)
    assert "- `000_aa3f7ad8e0e621fa.txt`: result report, version 1, SHA-256 `" in result.markdown
    assert "- 000_aa3f7ad8e0e621fa.txt SHA-256: " in result.markdown  # Reconciliation's verified hashes too
    assert "imported-result.md" not in result.markdown


def test_a_decision_redraws_out_of_band_the_rows_of_its_record_that_it_changed(corpus_run, reviewer, client):
    proposed = reviewer.post(f"{API}/mappings/", {"source": "EPI-OBJ-3", "relation": "part-of", "target": "OBJ-2"},
                             format="json").json()
    suggestion = mapping("EPI-OBJ-3", "new")
    assert decide(reviewer, suggestion, "reject", "not a new record").status_code == 200
    client.force_login(reviewer.user)
    response = client.post(f"/runs/{RUN_ID}/reconcile/mappings/{proposed['id']}/decide/?member=epistemic",
                           {"decision": "accept", "rationale": "a part", "version": proposed["version"]},
                           HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    other = body.split(f'<article id="pair-{suggestion.pk}"', 1)[1].split("</article>", 1)[0]
    assert 'hx-swap-oob="true"' in other.split(">", 1)[0]
    assert "Alternative not taken: EPI-OBJ-3 part-of OBJ-2 (accepted)." in other
    assert '<section id="blockers" class="blockers-panel" aria-live="polite" hx-swap-oob="true">' in body


def test_the_results_finding_counts_are_the_run_pages_quotation_warnings_included(final, reviewer):
    """Finalization re-checks the quotations of the bytes it re-hashed, so the signed counts are the ones the
    run page and the validation endpoint show (they once left out the quote-unverified warnings: 1 against 4)."""
    counts = reviewer.get(f"{API}/validation/").json()["counts"]
    quote_warnings = [f for f in reviewer.get(f"{API}/validation/").json()["findings"]
                      if f["code"] == "quote-unverified"]
    assert quote_warnings, "the corpus run has quotations and no snapshot"
    markdown = Result.objects.get(run=final).markdown
    errors, warnings = counts["errors"], counts["warnings"]
    expected = (f"Validation findings: {errors} error{'s' if errors != 1 else ''}, "
                f"{warnings} warning{'s' if warnings != 1 else ''}.")
    assert expected in markdown


def test_each_shared_record_says_which_member_record_it_was_declared_as(final, reviewer):
    """The shared records' texts are carried word for word and cite member IDs (RT-OBJ-2, MEM-OBJ-1):
    the result says under each renumbered record which member record it is, so a reader need not infer it."""
    markdown = Result.objects.get(run=final).markdown
    assert "#### OBJ-1 — Cumulative cheatsheet string\n\nDeclared as `RT-OBJ-1` in runtime.md.\n" in markdown
    assert "#### OBJ-5 — Returned answer candidate\n\nDeclared as `EPI-OBJ-1` in epistemic.md.\n" in markdown
    data = reviewer.get(f"{API}/result.json").json()
    records = {r["canonical_id"]: r for r in data["canonical_records"]}
    assert (records["OBJ-1"]["declared_as"], records["OBJ-13"]["declared_as"]) == ("RT-OBJ-1", "MEM-OBJ-2")

"""Approval, finalization and the result over the REST API (DESIGN §4, §7), from upload to `final`."""
from __future__ import annotations

import hashlib

import pytest

from results.models import Result
from records.models import IntegrationIssue, MemberVersion
from records.parsing import parse_report
from reviews.audit import verify_chain
from reviews.models import AuditEvent, Run
from tests.results.test_approval import (  # noqa: F401
    CHEATSHEET,
    CHEATSHEET_FIELDS,
    corpus_files,
    ready_run,
    undecided_run,
)

RUN_ID = CHEATSHEET_FIELDS["run_id"]
API = f"/api/runs/{RUN_ID}"
NOTE = "Read each accepted mapping against the runtime declarations and every issue against its route."


def upload_corpus_run(agent, capture) -> Run:
    """Create the run and upload every member as an agent, running the pipeline's tasks as they are queued."""
    with capture(execute=True):
        assert agent.post("/api/runs/", CHEATSHEET_FIELDS, format="json").status_code == 201
    for name, data in corpus_files(CHEATSHEET).items():
        with capture(execute=True):
            response = agent.post(f"{API}/members/", {"role": name.removesuffix(".md"), "content": data.decode()},
                                  format="json")
        assert response.status_code == 201, response.json()
    run = Run.objects.get(run_id=RUN_ID)
    assert run.status == Run.Status.IN_REVIEW, run.status_reason
    return run


def decide_everything(reviewer, *, supersession: tuple[str, str] = ("accept", "checked by hand"),
                      amendment: tuple[str, str] = ("carry", "a Part-of value the records do not settle")) -> None:
    """Over the API, a reviewer accepts every `new` mapping first (allocating canonical IDs), except for a
    record a supersession places, then the supersedes mappings (with `supersession`: decision and
    rationale), then the rest; a record gets one place, so a mapping whose record is already placed is
    rejected as the alternative that lost. Then every integration issue, then every amendment still open
    (the supersession already follows its mapping) with `amendment`.

    (Before issue 10 this accepted both EPI-OBJ-4's `new` suggestion and its supersession, a result
    that placed one record twice.)"""
    mappings = reviewer.get(f"{API}/mappings/", {"page_size": 500}).json()
    mappings = mappings.get("results", mappings) if isinstance(mappings, dict) else mappings
    superseded = {m["source"] for m in mappings if m["relation"] == "supersedes" and supersession[0] == "accept"
                  and m["state"] in ("proposed", "stale")}
    placed = {m["source"] for m in mappings if m["state"] == "accepted"}
    mappings = [m for m in mappings if m["state"] in ("proposed", "stale")]  # what is still open
    for mapping in sorted(mappings, key=lambda m: (m["relation"] != "new" or m["source"] in superseded,
                                                   m["relation"] != "supersedes", m["id"])):
        decision, rationale = supersession if mapping["relation"] == "supersedes" else ("accept", "checked by hand")
        if mapping["source"] in placed and decision == "accept":
            decision, rationale = "reject", "the alternative that lost: the record is placed already"
        elif decision == "accept":
            placed.add(mapping["source"])
        response = reviewer.post(f"{API}/mappings/{mapping['id']}/decision/",
                                 {"decision": decision, "rationale": rationale, "version": mapping["version"]},
                                 format="json")
        assert response.status_code == 200, response.json()
    issues = reviewer.get(f"{API}/integration-issues/", {"page_size": 500}).json()
    issues = issues.get("results", issues) if isinstance(issues, dict) else issues
    assert len(issues) == 5
    for issue in issues:  # each item is the issue's decision (its `id` is the decision's)
        response = reviewer.post(f"{API}/integration-issues/{issue['id']}/decision/",
                                 {"decision": "accept", "rationale": "route re-read", "version": issue["version"]},
                                 format="json")
        assert response.status_code == 200, response.json()
    amendments = reviewer.get(f"{API}/amendments/", {"page_size": 500}).json()
    amendments = amendments.get("results", amendments) if isinstance(amendments, dict) else amendments
    assert len(amendments) == 4
    for item in amendments:
        if item["state"] != "proposed":
            # the supersession, decided with its mapping above, or one the test decided before
            assert item["mapping"] is not None or item["state"] in ("accepted", "rejected", "carried")
            continue
        decision, rationale = amendment
        response = reviewer.post(f"{API}/amendments/{item['id']}/decision/",
                                 {"decision": decision, "rationale": rationale, "version": item["version"]},
                                 format="json")
        assert response.status_code == 200, response.json()


@pytest.fixture
def reconciled_run(ready_run) -> Run:  # noqa: F811
    """The corpus run as the pipeline and a reviewer leave it, built from rows (fast)."""
    return ready_run


@pytest.fixture
def final_run(reconciled_run, reviewer, django_capture_on_commit_callbacks) -> Run:
    with django_capture_on_commit_callbacks(execute=True):
        response = reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    assert response.status_code == 201, response.json()
    reconciled_run.refresh_from_db()
    assert reconciled_run.status == Run.Status.FINAL, reconciled_run.status_reason
    return reconciled_run


# --- the whole flow -------------------------------------------------------------


def test_a_corpus_run_goes_from_upload_through_decisions_to_final(agent, reviewer,
                                                                   django_capture_on_commit_callbacks):
    run = upload_corpus_run(agent, django_capture_on_commit_callbacks)
    blocked = reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    assert blocked.status_code == 409
    blockers = blocked.json()["error"]["details"]["blockers"]
    assert sum(b["code"] == "open_disposition" for b in blockers) == 14  # 15 mappings of 14 records
    assert all(set(b) == {"code", "record", "message", "link"} for b in blockers)

    decide_everything(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        response = reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    assert response.status_code == 201, response.json()
    run.refresh_from_db()
    assert run.status == Run.Status.FINAL, run.status_reason

    result = Result.objects.get(run=run)
    expected = {name: hashlib.sha256(data).hexdigest() for name, data in corpus_files(CHEATSHEET).items()}
    assert {m["name"]: m["sha256"] for m in result.data["members"]} == expected
    served = reviewer.get(f"{API}/result/").content
    assert hashlib.sha256(served).hexdigest() == result.sha256
    parsed = parse_report(served.decode("utf-8"))
    assert {d.record_id for d in parsed.declarations} == {r["canonical_id"] for r in result.data["canonical_records"]}
    assert {(m.source, m.target) for m in parsed.mappings} == {
        (m["source"], m["target"]) for m in result.data["mappings"] if m["target"]
    }
    # The reconciliation's supersession, accepted by the reviewer, is the amendment's decision.
    assert any(a["decision"] == "accept" and "EPI-OBJ-4 is superseded by MEM-OBJ-2" in a["text"]
               for a in result.data["amendments"])
    actions = list(AuditEvent.objects.filter(run=run).order_by("seq").values_list("action", flat=True))
    assert actions[-3:] == ["run.approved", "run.finalizing", "run.finalized"]
    assert verify_chain(run).ok


@pytest.mark.parametrize("decision, word", [("accept", "accepted"), ("reject", "rejected")])
def test_a_finalized_corpus_run_reports_each_amendment_with_its_decision(decision, word, agent, reviewer,
                                                                         django_capture_on_commit_callbacks):
    upload_corpus_run(agent, django_capture_on_commit_callbacks)
    decide_everything(reviewer, supersession=(decision, "the embedding matrix is one object"))
    with django_capture_on_commit_callbacks(execute=True):
        assert reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json").status_code == 201
    result = Result.objects.get(run__run_id=RUN_ID)

    amendments = {a["text"].split(".")[0]: a for a in result.data["amendments"]}
    assert len(amendments) == 4
    supersession = amendments["EPI-OBJ-4 is superseded by MEM-OBJ-2"]
    assert (supersession["decision"], supersession["rationale"]) == (decision, "the embedding matrix is one object")
    # The other three amend a `Part of:` value: no mapping states them; the reviewer carried them.
    assert {a["decision"] for key, a in amendments.items() if key != "EPI-OBJ-4 is superseded by MEM-OBJ-2"} == {
        "carry"}
    assert result.markdown.count("- Carried amendment, not applied to the shared records: EPI-OBJ-") == 3
    assert (f"Amendment decision: {word} by token:reviewer-1 (reconciliation.md line 16). "
            f"Rationale: the embedding matrix is one object" in result.markdown)
    target = next(m for m in result.data["mappings"] if m["source"] == "MEM-OBJ-2")["target"]
    if decision == "accept":
        assert f"EPI-OBJ-4 is superseded by {target}" in result.markdown
    else:
        # EPI-OBJ-4 entered the shared set through its accepted `new` mapping: the rejected supersession
        # is an alternative not taken (Reconciliation), not a record without a place (Limitations).
        limitations = result.markdown.split("\n## Limitations\n")[1].split("\n## Verification")[0]
        assert "EPI-OBJ-4 has no place" not in limitations and "Rejected mapping" not in limitations
        # (The amendment itself was rejected, and Limitations says so truly: it is not applied.)
        assert "- Rejected amendment, not applied to the shared records: EPI-OBJ-4 is superseded by" in limitations
        assert ("- EPI-OBJ-4 is superseded by MEM-OBJ-2: rejected in favour of the accepted EPI-OBJ-4 → "
                in result.markdown.split("### Alternatives not taken")[1])
    assert "EPI-OBJ-4 supersedes" not in result.markdown


def test_approving_answers_201_with_the_approval(reconciled_run, reviewer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        response = reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "approved"
    assert body["approval"]["note"] == NOTE
    assert body["approval"]["approved_by"] == "token:reviewer-1"
    assert body["approval"]["manifest_sha256"] == reconciled_run.manifest_sha256


def test_the_result_round_trips_through_the_parser(final_run, reviewer):
    markdown = reviewer.get(f"{API}/result/").content.decode("utf-8")
    parsed = parse_report(markdown)
    result = Result.objects.get(run=final_run)
    assert [d.record_id for d in parsed.declarations] == [r["canonical_id"] for r in result.data["canonical_records"]]
    assert {(m.source, m.target) for m in parsed.mappings} == {
        (m["source"], m["target"]) for m in result.data["mappings"] if m["target"]
    }


# --- GET result ------------------------------------------------------------------


def test_it_serves_the_result_as_markdown_with_its_hash_as_etag(final_run, auditor):
    result = Result.objects.get(run=final_run)
    response = auditor.get(f"{API}/result/")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["ETag"] == f'"{result.sha256}"'
    assert hashlib.sha256(response.content).hexdigest() == result.sha256


def test_it_answers_304_when_the_etag_matches(final_run, auditor):
    etag = auditor.get(f"{API}/result/")["ETag"]
    response = auditor.get(f"{API}/result/", HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 304
    assert response.content == b""
    assert auditor.get(f"{API}/result/", HTTP_IF_NONE_MATCH='"0000"').status_code == 200


def test_it_serves_markdown_even_when_the_client_asks_for_it_by_accept_header(final_run, auditor):
    response = auditor.get(f"{API}/result/", HTTP_ACCEPT="text/markdown")
    assert response.status_code == 200
    assert response.content.startswith(b"---\n{")


def test_it_answers_404_with_the_error_shape_until_the_run_is_final(reconciled_run, auditor):
    response = auditor.get(f"{API}/result/", HTTP_ACCEPT="text/markdown")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "no_result"
    assert "in_review" in error["message"]
    assert auditor.get(f"{API}/result.json").status_code == 404


def test_it_serves_the_result_as_data_with_both_hashes(final_run, reviewer):
    markdown = reviewer.get(f"{API}/result/").content
    body = reviewer.get(f"{API}/result.json").json()
    assert body["sha256"] == hashlib.sha256(markdown).hexdigest()
    assert body["manifest_sha256"] == final_run.manifest_sha256
    assert body["front_matter"]["run-id"] == RUN_ID
    assert body["verification"]["approval_note"] == NOTE


def test_an_outsider_cannot_read_the_result(final_run, outsider):
    assert outsider.get(f"{API}/result/").status_code == 403


# --- approve: refusals -----------------------------------------------------------


def test_approving_without_a_note_is_a_400_naming_the_note(reconciled_run, reviewer):
    response = reviewer.post(f"{API}/approve/", {}, format="json")
    assert response.status_code == 400
    assert "note" in response.json()["error"]["message"]
    assert reviewer.post(f"{API}/approve/", {"note": "   "}, format="json").status_code == 400


def test_approving_with_undecided_items_is_a_409_listing_the_blockers(undecided_run, reviewer):
    response = reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "approval_blocked"
    blockers = error["details"]["blockers"]
    assert [b["code"] for b in blockers].count("open_disposition") == 14
    assert {"code": "open_issue", "record": "memory issue 1",
            "message": "Memory integration issue 1 is undecided: accept or reject it",
            "link": f"/runs/{undecided_run.run_id}/reconcile/?member=memory&issues=all#issue-"
                    f"{IntegrationIssue.objects.get(member_version__member__run=undecided_run, index=1).pk}"} in blockers


def test_approving_with_validation_errors_is_a_409(agent, reviewer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        agent.post("/api/runs/", CHEATSHEET_FIELDS, format="json")
    data = corpus_files(CHEATSHEET)["memory.md"]  # cites RT- records no member declares
    with django_capture_on_commit_callbacks(execute=True):
        agent.post(f"{API}/members/", {"role": "memory", "content": data.decode()}, format="json")
    response = reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    assert response.status_code == 409
    blockers = response.json()["error"]["details"]["blockers"]
    assert blockers and {b["code"] for b in blockers} >= {"validation_error"}
    assert all(b["link"] == f"/runs/{RUN_ID}/#validation" for b in blockers if b["code"] == "validation_error")


def test_an_agent_cannot_approve(reconciled_run, agent):
    response = agent.post(f"{API}/approve/", {"note": NOTE}, format="json")
    assert response.status_code == 403
    assert AuditEvent.objects.filter(run=reconciled_run, action="permission.denied").exists()


def test_uploads_are_refused_once_approved(reconciled_run, agent, reviewer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    response = agent.post(f"{API}/members/", {"role": "synthesis", "content": "# late\n"}, format="json")
    assert response.status_code == 409


# --- tamper and retry --------------------------------------------------------------


def test_a_tampered_member_fails_finalization_and_a_retry_after_restoring_finalizes(
        reconciled_run, reviewer, django_capture_on_commit_callbacks):
    original = corpus_files(CHEATSHEET)["runtime.md"]
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json").status_code == 201
    MemberVersion.objects.filter(member__run=reconciled_run, member__role="runtime").update(
        content=original.replace(b"Dynamic Cheatsheet", b"Static Cheatsheet", 1))
    for callback in queued:
        callback()  # the worker picks up finalize_run
    reconciled_run.refresh_from_db()
    assert reconciled_run.status == Run.Status.FAILED
    assert "runtime.md" in reconciled_run.status_reason
    assert hashlib.sha256(original).hexdigest() in reconciled_run.status_reason
    assert reviewer.get(f"{API}/result/").status_code == 404

    MemberVersion.objects.filter(member__run=reconciled_run, member__role="runtime").update(content=original)
    with django_capture_on_commit_callbacks(execute=True):
        response = reviewer.post(f"{API}/finalize/retry/")
    assert response.status_code == 202
    reconciled_run.refresh_from_db()
    assert reconciled_run.status == Run.Status.FINAL
    assert reviewer.get(f"{API}/result/").status_code == 200


def test_retrying_a_run_that_did_not_fail_is_a_409(final_run, reviewer):
    response = reviewer.post(f"{API}/finalize/retry/")
    assert response.status_code == 409
    assert [b["message"] for b in response.json()["error"]["details"]["blockers"]] == [
        "The run is final; only a run whose finalization failed can be retried."
    ]


# --- reopen ------------------------------------------------------------------------


def test_a_reviewer_reopens_an_approved_run(reconciled_run, reviewer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    response = reviewer.post(f"{API}/reopen/", {"reason": "One issue needs a second look."}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "in_review"
    event = AuditEvent.objects.filter(run=reconciled_run).order_by("-seq").first()
    assert (event.action, event.after["reason"]) == ("run.reopened", "One issue needs a second look.")


def test_reopening_needs_a_reason(reconciled_run, reviewer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        reviewer.post(f"{API}/approve/", {"note": NOTE}, format="json")
    assert reviewer.post(f"{API}/reopen/", {}, format="json").status_code == 400


def test_a_final_run_cannot_be_reopened(final_run, reviewer):
    response = reviewer.post(f"{API}/reopen/", {"reason": "too late"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "run_final"

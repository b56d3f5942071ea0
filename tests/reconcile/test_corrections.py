"""Send it back (issue 19): correction requests raised, answered by a corrected version, settled; the
upload refused whole when its answers do not match or it drops an ID; approval blocked meanwhile."""
from __future__ import annotations

import pytest
from django.test import TestCase
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconcile.services import corrections
from reconcile.blockers import run_standing
from reconcile.models import CorrectionRequest
from records.models import MemberVersion
from records.parsing import parse_report
from reviews.audit import Actor
from reviews.models import AuditEvent
from tests.conftest import seed_bytes

MEMORY = seed_bytes("002")
FIRST_ID = parse_report(MEMORY.decode()).declarations[0].record_id
REVIEWER = Actor("user:reviewer-1")


def upload(client, run, content: bytes, answers=None, role="memory"):
    """Upload through the API; the parse and validation queued on commit run then (tasks in process)."""
    body = {"role": role, "content": content.decode("utf-8")}
    if answers is not None:
        body["answers"] = answers
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(f"/api/runs/{run.run_id}/members/", body, format="json")


def corrected(content: bytes, note: str = "A sentence the analyst added.") -> bytes:
    return content + f"\n{note}\n".encode()


@pytest.fixture
def memory_run(run_factory, agent):
    run = run_factory()
    assert upload(agent, run, MEMORY).status_code == 201
    return run


def raise_one(reviewer, run, text="The Part of line names the wrong component.", **extra):
    reply = reviewer.post(f"/api/runs/{run.run_id}/corrections/", {"member": "memory", "text": text, **extra},
                          format="json")
    assert reply.status_code == 201, reply.json()
    return reply.json()


def versions(run) -> int:
    return MemberVersion.objects.filter(member__run=run).count()


def test_a_reviewer_raises_a_request_and_the_agent_lists_what_it_must_answer(memory_run, reviewer, agent):
    made = raise_one(reviewer, memory_run, record=FIRST_ID, line=12)
    assert made["state"] == "open" and made["record"] == FIRST_ID and made["line"] == 12
    mine = agent.get(f"/api/runs/{memory_run.run_id}/corrections/?addressed_to_me=1&state=open").json()
    assert [(r["id"], r["text"], r["record"], r["line"]) for r in mine["results"]] == [
        (made["id"], made["text"], FIRST_ID, 12)]
    event = AuditEvent.objects.get(run=memory_run, action="correction.requested")
    assert event.actor == "token:reviewer-1" and event.object_id == str(made["id"])


def test_an_agent_cannot_raise_a_request(memory_run, agent):
    reply = agent.post(f"/api/runs/{memory_run.run_id}/corrections/", {"member": "memory", "text": "x"}, format="json")
    assert reply.status_code == 403


def test_a_request_on_a_record_the_member_does_not_have_is_refused(memory_run, reviewer):
    reply = reviewer.post(f"/api/runs/{memory_run.run_id}/corrections/",
                          {"member": "memory", "record": "MEM-OBJ-nowhere", "text": "x"}, format="json")
    assert reply.status_code == 400 and "MEM-OBJ-nowhere" in reply.json()["error"]["message"]


def test_a_corrected_version_answers_the_request_and_the_reviewer_resolves_it(memory_run, reviewer, agent):
    made = raise_one(reviewer, memory_run)
    reply = upload(agent, memory_run, corrected(MEMORY), answers="- corrected: the Part of line now names CMP-2\n")
    assert reply.status_code == 201, reply.json()
    [request] = reviewer.get(f"/api/runs/{memory_run.run_id}/corrections/").json()["results"]
    assert request["state"] == "answered" and request["answered_in_version"] == 2
    assert request["answer"] == {"kind": "corrected", "text": "the Part of line now names CMP-2"}
    uploaded = AuditEvent.objects.filter(run=memory_run, action="member.uploaded").latest("seq")
    assert uploaded.after["answered"] == [made["id"]]
    resolved = reviewer.post(f"/api/runs/{memory_run.run_id}/corrections/{made['id']}/resolve/",
                             {"version": request["version"]}, format="json")
    assert resolved.status_code == 200 and resolved.json()["state"] == "resolved"


def test_a_stale_version_is_409_with_the_request_as_it_is(memory_run, reviewer, agent):
    made = raise_one(reviewer, memory_run)
    upload(agent, memory_run, corrected(MEMORY), answers="- corrected: done")
    reply = reviewer.post(f"/api/runs/{memory_run.run_id}/corrections/{made['id']}/resolve/",
                          {"version": made["version"]}, format="json")
    assert reply.status_code == 409 and reply.json()["error"]["details"]["current"]["state"] == "answered"


def test_an_upload_that_answers_nothing_while_a_request_is_open_is_refused_whole(memory_run, reviewer, agent):
    made = raise_one(reviewer, memory_run)
    before = versions(memory_run)
    reply = upload(agent, memory_run, corrected(MEMORY))
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == "answers_mismatch" and error["details"]["requests"] == [made["id"]]
    assert f"#{made['id']}" in error["message"]
    assert versions(memory_run) == before


def test_the_upload_reads_the_open_requests_with_its_member_row(memory_run, reviewer, agent):
    """No statement of their own (one fewer per upload, DESIGN §11 "uploads"), and still every open request,
    oldest first."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    wanted = [raise_one(reviewer, memory_run, text=t)["id"] for t in ("first", "second", "third")]
    with CaptureQueriesContext(connection) as seen:
        reply = upload(agent, memory_run, corrected(MEMORY))
    assert reply.status_code == 400 and reply.json()["error"]["details"]["requests"] == wanted
    statements = [q["sql"] for q in seen.captured_queries]
    assert any("records_memberreport" in sql and '"state" = ' in sql for sql in statements)  # the ids, with the row
    assert not any(sql.startswith('SELECT "id" FROM "reconcile_correctionrequest"') for sql in statements)
    answers = [{"request": pk, "answer": "declined", "text": "no"} for pk in wanted]
    assert upload(agent, memory_run, corrected(MEMORY), answers=answers).status_code == 201


def test_too_many_answers_are_refused(memory_run, reviewer, agent):
    raise_one(reviewer, memory_run)
    reply = upload(agent, memory_run, corrected(MEMORY), answers="- corrected: one\n- declined: two\n")
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "answers_mismatch"


def test_answers_in_another_order_are_refused(memory_run, reviewer, agent):
    first, second = raise_one(reviewer, memory_run, text="first"), raise_one(reviewer, memory_run, text="second")
    answers = [{"request": second["id"], "answer": "corrected", "text": "b"},
               {"request": first["id"], "answer": "declined", "text": "a"}]
    reply = upload(agent, memory_run, corrected(MEMORY), answers=answers)
    assert reply.status_code == 400 and reply.json()["error"]["details"]["requests"] == [first["id"], second["id"]]
    in_order = list(reversed(answers))
    assert upload(agent, memory_run, corrected(MEMORY), answers=in_order).status_code == 201


def test_a_line_starting_dash_that_is_no_answer_is_refused(memory_run, reviewer, agent):
    raise_one(reviewer, memory_run)
    reply = upload(agent, memory_run, corrected(MEMORY), answers="- corrected: fixed\n- and one more thing\n")
    assert reply.status_code == 400 and "line 2" in reply.json()["error"]["message"].lower()


def test_a_corrected_version_that_drops_a_declared_id_is_refused_naming_it(memory_run, reviewer, agent):
    raise_one(reviewer, memory_run)
    before = versions(memory_run)
    renamed = MEMORY.replace(FIRST_ID.encode(), b"MEM-OBJ-renamed")
    reply = upload(agent, memory_run, renamed, answers="- corrected: renamed it")
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == "dropped-id" and error["details"] == {"ids": [FIRST_ID], "predecessor_version": 1}
    assert FIRST_ID in error["message"] and "version 1" in error["message"]
    assert versions(memory_run) == before


def test_identical_bytes_answer_only_when_every_answer_is_declined(memory_run, reviewer, agent):
    made = raise_one(reviewer, memory_run)
    refused = upload(agent, memory_run, MEMORY, answers="- corrected: nothing really")
    assert refused.status_code == 400 and refused.json()["error"]["details"]["identical_to"] == 1
    declined = upload(agent, memory_run, MEMORY, answers="- declined: the line is right, see RT-CMP-2")
    assert declined.status_code == 200 and declined.json()["version"] == 1
    request = CorrectionRequest.objects.get(pk=made["id"])
    assert request.state == "answered" and request.answer == "declined" and request.answered_in.version == 1


def test_a_version_uploaded_with_no_open_request_needs_no_answers(memory_run, agent):
    assert upload(agent, memory_run, corrected(MEMORY)).status_code == 201


def test_reopen_needs_a_reason_and_sends_it_back_open(memory_run, reviewer, agent):
    made = raise_one(reviewer, memory_run)
    upload(agent, memory_run, corrected(MEMORY), answers="- declined: no")
    current = CorrectionRequest.objects.get(pk=made["id"])
    url = f"/api/runs/{memory_run.run_id}/corrections/{made['id']}/reopen/"
    assert reviewer.post(url, {"version": current.version}, format="json").status_code == 400
    reply = reviewer.post(url, {"version": current.version, "reason": "The decline cites nothing."}, format="json")
    assert reply.status_code == 200 and reply.json()["state"] == "open" and reply.json()["answer"] is None


def test_only_its_author_withdraws_a_request(memory_run, reviewer, second_reviewer):
    made = raise_one(reviewer, memory_run)
    url = f"/api/runs/{memory_run.run_id}/corrections/{made['id']}/withdraw/"
    assert second_reviewer.post(url, {"version": made["version"]}, format="json").status_code == 409
    reply = reviewer.post(url, {"version": made["version"], "reason": "Raised on the wrong member."}, format="json")
    assert reply.status_code == 200 and reply.json()["state"] == "withdrawn"


def test_the_addressed_agent_and_reviewers_reply_in_the_thread(memory_run, reviewer, agent):
    made = raise_one(reviewer, memory_run)
    url = f"/api/runs/{memory_run.run_id}/corrections/{made['id']}/replies/"
    assert agent.post(url, {"text": "Which component do you mean?"}, format="json").status_code == 201
    reply = reviewer.post(url, {"text": "The store, RT-CMP-2."}, format="json")
    assert [m["text"] for m in reply.json()["thread"]] == ["Which component do you mean?", "The store, RT-CMP-2."]


def test_open_and_answered_requests_block_approval_by_name(memory_run, reviewer, agent):
    made = raise_one(reviewer, memory_run)
    codes = {b.code: b.message for b in run_standing(memory_run).blockers}
    assert f"#{made['id']}" in codes["correction_open"]
    upload(agent, memory_run, corrected(MEMORY), answers="- corrected: done")
    memory_run.refresh_from_db()
    codes = {b.code for b in run_standing(memory_run).blockers}
    assert "correction_answered" in codes and "correction_open" not in codes
    request = CorrectionRequest.objects.get(pk=made["id"])
    corrections.resolve_correction(request=request, actor=REVIEWER, expected_version=request.version)
    assert not {b.code for b in run_standing(memory_run).blockers} & {"correction_open", "correction_answered"}


# --- the invariant, over random sequences -------------------------------------------------------

STEPS = st.lists(st.sampled_from(["raise", "answer", "answer-declined", "answer-wrong", "drop-id", "resolve",
                                  "reopen", "withdraw"]), min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_approval_waits_exactly_for_pending_requests_and_no_version_loses_an_id(steps, run_factory, agent, reviewer):
    """Invariant (DESIGN §3, §6): a run's blockers name a correction exactly while one is open or answered,
    read back from the stored rows; and no version stored as an answer lacks an ID its predecessor declared
    (read from the stored bytes, not from the check's own data)."""
    run = run_factory()
    upload(agent, run, MEMORY)
    content, n = MEMORY, 0
    for step in steps:
        pending = list(CorrectionRequest.objects.filter(run=run, state="open"))
        latest = CorrectionRequest.objects.filter(run=run).order_by("-id").first()
        if step == "raise":
            raise_one(reviewer, run, text=f"request {n}")
        elif step.startswith("answer") or step == "drop-id":
            n += 1
            body = corrected(content, f"Correction {n}.")
            if step == "drop-id":
                body = body.replace(FIRST_ID.encode(), f"MEM-OBJ-gone{'x' * n}".encode())
            kind = "declined" if step == "answer-declined" else "corrected"
            count = len(pending) + (1 if step == "answer-wrong" else 0)
            reply = upload(agent, run, body, answers="".join(f"- {kind}: step {n}\n" for _ in range(count)) or None)
            if reply.status_code == 201:
                content = body
        elif latest is not None:
            url = f"/api/runs/{run.run_id}/corrections/{latest.pk}/{step}/"
            reviewer.post(url, {"version": latest.version, "reason": "property step"}, format="json")
    run.refresh_from_db()
    pending_now = CorrectionRequest.objects.filter(run=run, state__in=["open", "answered"]).exists()
    blocked = any(b.code in ("correction_open", "correction_answered") for b in run_standing(run).blockers)
    assert blocked == pending_now
    stored = {v.version: parse_report(bytes(v.content).decode())
              for v in MemberVersion.objects.filter(member__run=run)}
    answering = set(CorrectionRequest.objects.filter(run=run, answered_in__isnull=False)
                    .values_list("answered_in__version", flat=True)) | set(
        e.after["version"] for e in AuditEvent.objects.filter(run=run, action="member.uploaded") if e.after.get("answered"))
    for version in answering - {1}:
        before, after = stored[version - 1], stored[version]
        assert {d.record_id for d in before.declarations} <= {d.record_id for d in after.declarations}

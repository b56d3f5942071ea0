"""Finalization (DESIGN §6 hashing, §7): re-verify the bytes, re-validate, render once, never change."""
from __future__ import annotations

import hashlib

import pytest

from results.services import (
    FINALIZE,
    ApprovalBlocked,
    render_approved,
    approve_run,
    current_approval,
    finalize_run,
    reopen_run,
    retry_finalize,
)
from reconcile.models import CanonicalRecord, Mapping
from results.models import Result
from records.models import MemberVersion
from records.parsing import parse_report
from reviews.audit import Actor, verify_chain
from reviews.models import AuditEvent, Run
from tests.results.test_approval import CHEATSHEET, REVIEWER, corpus_files, finalize_sends, ready_run  # noqa: F401

WORKER = Actor.worker("finalize_run")


@pytest.fixture
def approved_run(ready_run, django_capture_on_commit_callbacks):  # noqa: F811
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=ready_run, note="Compared every mapping with the runtime routes; hashes checked.",
                    actor=REVIEWER)
    return ready_run


def tamper(run: Run, role: str, content: bytes) -> None:
    MemberVersion.objects.filter(member__run=run, member__role=role).update(content=content)


def test_it_finalizes_an_approved_run_into_a_stored_hashed_result(approved_run):
    result = finalize_run(run=approved_run, actor=WORKER)
    approved_run.refresh_from_db()
    assert approved_run.status == Run.Status.FINAL
    assert result.sha256 == hashlib.sha256(result.markdown.encode("utf-8")).hexdigest()
    assert result.sha256 not in result.markdown  # the digest sits beside the text, never inside it
    assert result.manifest_sha256 == approved_run.manifest_sha256
    assert result.approval == current_approval(approved_run)
    assert result.markdown.startswith("---\n{\n  \"type\": \"types/agentic-system-analysis-result.md\"")


def test_it_writes_the_members_own_hashes_into_the_result(approved_run):
    result = finalize_run(run=approved_run, actor=WORKER)
    expected = {name: hashlib.sha256(data).hexdigest() for name, data in corpus_files(CHEATSHEET).items()}
    assert {m["name"]: m["sha256"] for m in result.data["members"]} == expected
    for name, digest in expected.items():
        assert f"`{name}`: " in result.markdown and digest in result.markdown


def test_it_audits_the_claim_and_the_finalization_with_both_hashes(approved_run):
    result = finalize_run(run=approved_run, actor=WORKER)
    actions = list(AuditEvent.objects.filter(run=approved_run).order_by("seq").values_list("action", flat=True))
    assert actions[-2:] == ["run.finalizing", "run.finalized"]
    event = AuditEvent.objects.filter(run=approved_run, action="run.finalized").get()
    assert event.actor == "worker:finalize_run"
    assert event.after == {"status": "final", "result_sha256": result.sha256,
                           "manifest_sha256": approved_run.manifest_sha256, "keyid": result.attestation.keyid}
    assert verify_chain(approved_run).ok


def test_a_second_finalize_returns_the_same_row_and_bytes(approved_run):
    first = finalize_run(run=approved_run, actor=WORKER)
    events = AuditEvent.objects.filter(run=approved_run).count()
    second = finalize_run(run=approved_run, actor=WORKER)
    assert second.pk == first.pk
    assert second.markdown.encode() == first.markdown.encode()
    assert second.sha256 == first.sha256
    assert Result.objects.filter(run=approved_run).count() == 1
    assert AuditEvent.objects.filter(run=approved_run).count() == events


def test_rendering_the_same_run_twice_gives_identical_bytes(approved_run):
    approval = current_approval(approved_run)
    first = render_approved(approved_run, approval)
    markdown_1, data_1 = first.markdown, first.data
    # The same decisions stored again in the opposite order (new row IDs): the result must not care.
    rows = list(Mapping.objects.filter(run=approved_run).order_by("id"))
    Mapping.objects.filter(run=approved_run).delete()
    for row in reversed(rows):
        row.pk = None
        row.save(force_insert=True)
    second = render_approved(approved_run, approval)
    markdown_2, data_2 = second.markdown, second.data
    assert markdown_1.encode("utf-8") == markdown_2.encode("utf-8")
    assert data_1 == data_2


def test_the_stored_result_parses_back_to_the_same_records_and_mappings(approved_run):
    result = finalize_run(run=approved_run, actor=WORKER)
    parsed = parse_report(result.markdown)
    active = set(CanonicalRecord.objects.filter(run=approved_run, state="active").values_list("canonical_id", flat=True))
    assert {d.record_id for d in parsed.declarations} == active
    assert len(parsed.declarations) == len(active)
    accepted = {(m.source, m.target) for m in Mapping.objects.filter(run=approved_run, state="accepted")}
    assert {(m.source, m.target) for m in parsed.mappings} == accepted
    assert parsed.front_matter["run-id"] == approved_run.run_id


def test_it_carries_the_approval_note_and_approver_into_semantic_verification(approved_run):
    result = finalize_run(run=approved_run, actor=WORKER)
    section = result.markdown.split("### Semantic verification", 1)[1].split("### Deterministic validation", 1)[0]
    assert "Compared every mapping with the runtime routes; hashes checked." in section
    assert "Approved by user:reviewer-1 at " in section
    assert result.data["verification"]["errors"] == 0


def test_it_refuses_tampered_bytes_naming_the_member_and_both_hashes(approved_run):
    original = corpus_files(CHEATSHEET)["memory.md"]
    tamper(approved_run, "memory", original + b"\nA line slipped in later.\n")
    assert finalize_run(run=approved_run, actor=WORKER) is None
    approved_run.refresh_from_db()
    assert approved_run.status == Run.Status.FAILED
    assert approved_run.failed_from == Run.Status.FINALIZING
    reason = approved_run.status_reason
    assert "memory.md" in reason
    assert hashlib.sha256(original).hexdigest() in reason
    assert hashlib.sha256(original + b"\nA line slipped in later.\n").hexdigest() in reason
    assert not Result.objects.filter(run=approved_run).exists()
    event = AuditEvent.objects.filter(run=approved_run).order_by("-seq").first()
    assert event.action == "run.finalize_failed" and event.after["reason"] == reason


def test_it_finalizes_on_retry_once_the_bytes_are_restored(approved_run, django_capture_on_commit_callbacks):
    original = corpus_files(CHEATSHEET)["memory.md"]
    tamper(approved_run, "memory", b"tampered")
    finalize_run(run=approved_run, actor=WORKER)
    tamper(approved_run, "memory", original)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        retry_finalize(run=approved_run, actor=REVIEWER)
    assert len(finalize_sends(callbacks)) == 1
    approved_run.refresh_from_db()
    assert approved_run.status == Run.Status.FINALIZING
    result = finalize_run(run=approved_run, actor=WORKER)
    approved_run.refresh_from_db()
    assert approved_run.status == Run.Status.FINAL
    assert result.sha256
    assert verify_chain(approved_run).ok


def test_it_fails_when_the_decisions_no_longer_validate(approved_run):
    taken = Mapping.objects.filter(run=approved_run, relation="new").first()
    Mapping.objects.create(run=approved_run, source="MEM-OBJ-9", relation="new", target=taken.target,
                           origin="agent", proposed_by="token:agent-1", state="accepted")
    assert finalize_run(run=approved_run, actor=WORKER) is None
    approved_run.refresh_from_db()
    assert approved_run.status == Run.Status.FAILED
    # Judged on the decisions by the same rule approval applies (issue 24 item 7: one judge).
    assert "the decisions no longer support approval" in approved_run.status_reason
    assert f"canonical ID {taken.target} is allocated by 2 accepted new mappings" in approved_run.status_reason


def test_it_refuses_to_retry_a_run_that_did_not_fail(approved_run):
    with pytest.raises(ApprovalBlocked):
        retry_finalize(run=approved_run, actor=REVIEWER)


def test_it_does_nothing_for_a_run_that_was_reopened_before_the_worker_ran(approved_run):
    reopen_run(run=approved_run, reason="wrong target", actor=REVIEWER)
    assert finalize_run(run=approved_run, actor=WORKER) is None
    approved_run.refresh_from_db()
    assert approved_run.status == Run.Status.IN_REVIEW


def test_a_final_run_cannot_be_reopened(approved_run):
    finalize_run(run=approved_run, actor=WORKER)
    with pytest.raises(ApprovalBlocked):
        reopen_run(run=approved_run, reason="too late", actor=REVIEWER)


def test_a_run_whose_finalization_failed_can_be_reopened(approved_run):
    tamper(approved_run, "memory", b"tampered")
    finalize_run(run=approved_run, actor=WORKER)
    reopen_run(run=approved_run, reason="investigate the changed bytes", actor=REVIEWER)
    approved_run.refresh_from_db()
    assert approved_run.status == Run.Status.IN_REVIEW
    assert current_approval(approved_run) is None


def test_it_resumes_a_claim_left_by_a_killed_worker(approved_run):
    """A redelivered task finds the run finalizing with no result, and finishes the work."""
    Run.objects.filter(pk=approved_run.pk).update(status=Run.Status.FINALIZING)
    result = finalize_run(run=approved_run, actor=WORKER)
    assert result is not None
    approved_run.refresh_from_db()
    assert approved_run.status == Run.Status.FINAL


# --- the result page -----------------------------------------------------------------


@pytest.fixture
def browser(reviewer):
    from django.test import Client

    client = Client()
    client.force_login(reviewer.user)
    return client


def test_the_result_page_shows_the_rendered_result_its_hash_and_a_download_link(approved_run, browser):
    result = finalize_run(run=approved_run, actor=WORKER)
    page = browser.get(f"/runs/{approved_run.run_id}/result/")
    assert page.status_code == 200
    html = page.content.decode()
    assert result.sha256 in html
    assert f'href="/api/runs/{approved_run.run_id}/result/"' in html
    # Headings carry their table-of-contents anchor (results/toc.py).
    assert '<h4 id="sec-obj-1-cumulative-cheatsheet-string">OBJ-1 — Cumulative cheatsheet string</h4>' in html
    assert "<table>" in html  # the source register, a pipe table


def test_the_result_page_escapes_markup_from_reports_and_notes(ready_run, browser,  # noqa: F811
                                                               django_capture_on_commit_callbacks):
    CanonicalRecord.objects.filter(run=ready_run, canonical_id="OBJ-1").update(
        label="<script>alert('label')</script> store")
    note = "Checked <script>alert('note')</script> and <img src=x onerror=alert(1)> and [x](javascript:alert(2))."
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=ready_run, note=note, actor=REVIEWER)
    result = finalize_run(run=ready_run, actor=WORKER)
    assert "<script>alert('note')</script>" in result.markdown  # the stored result keeps the text as written
    html = browser.get(f"/runs/{ready_run.run_id}/result/").content.decode()
    assert "<script>alert" not in html
    assert "<img" not in html
    assert 'href="javascript:' not in html
    assert "OBJ-1 — &lt;script&gt;alert('label')&lt;/script&gt; store</h4>" in html
    assert "<p>Checked &lt;script&gt;alert('note')&lt;/script&gt; and &lt;img src=x onerror=alert(1)&gt;" in html


def test_the_result_page_says_when_there_is_no_result_yet(ready_run, browser):  # noqa: F811
    page = browser.get(f"/runs/{ready_run.run_id}/result/")
    assert page.status_code == 200
    assert "No final result yet" in page.content.decode()


def test_the_result_page_needs_a_login(ready_run, client):  # noqa: F811
    page = client.get(f"/runs/{ready_run.run_id}/result/")
    assert page.status_code == 302
    assert page["Location"].startswith("/login/")


@pytest.mark.worker
def test_a_real_worker_finalizes_after_the_approval_commits(worker, run_factory):
    from tests.conftest import wait_until
    from tests.results.test_approval import CHEATSHEET_FIELDS, mark_validated, reconcile_rows, store_members

    run = run_factory(**CHEATSHEET_FIELDS)
    files = corpus_files(CHEATSHEET)
    reconcile_rows(run, store_members(run, files))
    mark_validated(run, files)
    approve_run(run=run, note="Checked with a real worker.", actor=REVIEWER)
    wait_until(lambda: Run.objects.get(pk=run.pk).status == Run.Status.FINAL, timeout=60)
    result = Result.objects.get(run=run)
    assert result.sha256 == hashlib.sha256(result.markdown.encode("utf-8")).hexdigest()
    event = AuditEvent.objects.get(run=run, action="run.finalized")
    assert event.actor == "worker:finalize_run"


# --- the sweep for finalizations that never ran or never finished (DESIGN §10) -------------------


def _age(run: Run, seconds: int) -> None:
    """Make the run's approval and last status change `seconds` old."""
    from datetime import timedelta

    from django.utils import timezone

    past = timezone.now() - timedelta(seconds=seconds)
    Run.objects.filter(pk=run.pk).update(updated_at=past)
    run.approvals.update(approved_at=past)


def sweep(capture, *, execute=False):
    from results.services import sweep_unfinished_finalizations

    with capture(execute=execute) as queued:
        swept = sweep_unfinished_finalizations(older_than_seconds=300, actor=Actor.worker("sweep"))
    return swept, finalize_sends(queued)



def test_the_sweep_finalizes_a_run_whose_finalize_message_was_lost(approved_run,
                                                                   django_capture_on_commit_callbacks):
    _age(approved_run, 600)
    swept, _queued = sweep(django_capture_on_commit_callbacks, execute=True)
    assert swept == {"approved": 1, "finalizing": 0}
    approved_run.refresh_from_db()
    assert approved_run.status == Run.Status.FINAL
    event = AuditEvent.objects.get(run=approved_run, action="run.finalize_requeued")
    assert (event.actor, event.before["status"]) == ("worker:sweep", "approved")
    assert verify_chain(approved_run).ok


def test_the_sweep_completes_a_run_left_finalizing_by_a_killed_worker(approved_run,
                                                                       django_capture_on_commit_callbacks):
    finalize_claim = Run.objects.get(pk=approved_run.pk)
    finalize_claim.transition_to(Run.Status.FINALIZING)
    finalize_claim.save(update_fields=Run.STATUS_FIELDS)
    _age(approved_run, 600)
    swept, _queued = sweep(django_capture_on_commit_callbacks, execute=True)
    assert swept == {"approved": 0, "finalizing": 1}
    approved_run.refresh_from_db()
    assert approved_run.status == Run.Status.FINAL
    assert Result.objects.filter(run=approved_run).count() == 1


def test_the_sweep_leaves_recent_reopened_and_final_runs_alone(approved_run, django_capture_on_commit_callbacks):
    swept, queued = sweep(django_capture_on_commit_callbacks)  # approved a moment ago: its task may be on its way
    assert (swept, queued) == ({"approved": 0, "finalizing": 0}, [])
    _age(approved_run, 600)
    swept, queued = sweep(django_capture_on_commit_callbacks)
    assert (swept["approved"], len(queued)) == (1, 1)
    swept, queued = sweep(django_capture_on_commit_callbacks)  # just re-queued: wait another period
    assert (swept, queued) == ({"approved": 0, "finalizing": 0}, [])
    finalize_run(run=approved_run, actor=WORKER)
    _age(approved_run, 600)
    assert sweep(django_capture_on_commit_callbacks)[0] == {"approved": 0, "finalizing": 0}
    assert AuditEvent.objects.filter(run=approved_run, action="run.finalize_requeued").count() == 1


def test_the_finalization_sweep_is_on_the_beat_schedule_beside_the_records_sweep(settings):
    schedule = settings.CELERY_BEAT_SCHEDULE
    ours = schedule["sweep-unfinished-finalizations"]
    assert ours["task"] == "results.tasks.sweep_unfinished_finalizations"
    assert ours["schedule"] == schedule["sweep-stuck-members"]["schedule"]
    from config.celery import app

    assert "results.tasks.sweep_unfinished_finalizations" in app.tasks


def test_a_real_worker_sweep_brings_a_run_left_finalizing_to_final(worker, run_factory, monkeypatch):
    from results import tasks
    from tests.conftest import wait_until
    from tests.results.test_approval import CHEATSHEET_FIELDS, mark_validated, reconcile_rows, store_members

    run = run_factory(**CHEATSHEET_FIELDS)
    files = corpus_files(CHEATSHEET)
    reconcile_rows(run, store_members(run, files))
    mark_validated(run, files)
    with monkeypatch.context() as patched:
        patched.setattr(FINALIZE, "send", lambda run_pk: None)  # the message is lost
        approve_run(run=run, note="Checked, then the worker died.", actor=REVIEWER)
    claimed = Run.objects.get(pk=run.pk)  # a worker claimed it, then was killed before storing the result
    claimed.transition_to(Run.Status.FINALIZING)
    claimed.save(update_fields=Run.STATUS_FIELDS)
    _age(run, 3600)

    tasks.sweep_unfinished_finalizations.delay()

    wait_until(lambda: Run.objects.get(pk=run.pk).status == Run.Status.FINAL, timeout=60)
    assert Result.objects.filter(run=run).count() == 1
    actions = list(AuditEvent.objects.filter(run=run).order_by("seq").values_list("action", "actor"))
    assert ("run.finalize_requeued", "worker:sweep_unfinished_finalizations") in actions
    assert actions[-1] == ("run.finalized", "worker:finalize_run")
    assert verify_chain(run).ok

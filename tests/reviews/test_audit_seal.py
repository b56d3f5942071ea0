"""Sealed history (issue 36 item 8, DESIGN §8): unsigned events count as history only at or below the
head a seal signed by the audit key recorded, never "up to the chain's first signed one".

A chain whose events all predate signatures has no first signed event: without a seal, the app's
database role can append an unsigned, correctly chained event to it and `verify_audit` calls it history.
"""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from reviews import audit
from reviews.audit import verify_chain
from reviews.audit_seal import load_seal, seal_path, signature_path
from reviews.models import AuditEvent, Run
from tests.reviews.test_audit import _append
from tests.reviews.test_audit_head import app_role  # noqa: F401  (a fixture)
from tests.reviews.test_audit_signed import _forge

pytestmark = pytest.mark.django_db


@pytest.fixture
def seal_at(settings, tmp_path):
    settings.AUDIT_SEAL_PATH = str(tmp_path / "audit-seal.json")
    return tmp_path / "audit-seal.json"


@pytest.fixture
def unsigned_run(run_factory, monkeypatch):
    """A run all of whose events were written before salts and signatures."""
    with monkeypatch.context() as before_the_change:
        before_the_change.setattr(audit, "new_salt", lambda: "")
        before_the_change.setattr(audit, "event_signature", lambda digest: "")
        run = run_factory()
        _append(run, 2)
    return run


def _seal() -> str:
    out = io.StringIO()
    call_command("audit_key", "seal", stdout=out)
    return out.getvalue()


def test_with_a_seal_an_unsigned_event_the_app_role_appends_to_an_unsigned_chain_is_named(
        unsigned_run, seal_at, app_role):  # noqa: F811
    head = AuditEvent.objects.filter(run=unsigned_run).order_by("-seq").first()
    assert verify_chain(unsigned_run).ok and verify_chain(unsigned_run).unsigned_history == head.seq
    assert "sealed" in _seal() and seal_at.exists() and signature_path(seal_at).exists()
    forged = _forge(unsigned_run, app_role)
    check = verify_chain(unsigned_run)
    assert not check.ok and check.broken_seq == forged.seq and check.broken_event_id == forged.pk
    assert f"unsigned event above the chain's sealed head #{head.seq}" in check.reason
    assert check.unsigned_history == head.seq  # what the seal covers is still history
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError):
        call_command("verify_audit", unsigned_run.run_id, stdout=out, stderr=err)
    assert f"event #{forged.seq}" in out.getvalue() and "history sealed at" in err.getvalue()


def test_without_a_seal_the_same_event_passes_as_history_and_verify_audit_says_unsealed(
        unsigned_run, seal_at, app_role):  # noqa: F811
    forged = _forge(unsigned_run, app_role)
    assert verify_chain(unsigned_run).ok and verify_chain(unsigned_run).unsigned_history == forged.seq
    out, err = io.StringIO(), io.StringIO()
    call_command("verify_audit", unsigned_run.run_id, stdout=out, stderr=err)
    assert "history is unsealed" in err.getvalue() and out.getvalue().startswith(f"OK {unsigned_run.run_id}")


def test_a_chain_created_after_the_seal_has_no_unsigned_history(seal_at, run_factory, monkeypatch):
    _seal()
    run = run_factory()
    _append(run, 1)
    monkeypatch.setattr(audit, "event_signature", lambda digest: "")
    late = _append(run, 1)[0]
    check = verify_chain(run)
    assert not check.ok and check.broken_seq == late.seq
    assert "unsigned event in a chain the audit seal records no history of" in check.reason


def test_sealing_signs_no_event_and_is_done_once(unsigned_run, seal_at):
    before = list(AuditEvent.objects.order_by("pk").values_list("pk", "hash", "signature"))
    _seal()
    assert list(AuditEvent.objects.order_by("pk").values_list("pk", "hash", "signature")) == before
    body = json.loads(seal_at.read_text())
    head = AuditEvent.objects.filter(run=unsigned_run).order_by("-seq").first()
    assert body["chains"][unsigned_run.run_id] == {"seq": head.seq, "hash": head.hash}
    with pytest.raises(CommandError, match="sealed already"):
        _seal()


def test_an_edited_seal_is_no_seal(unsigned_run, seal_at):
    _seal()
    body = json.loads(seal_at.read_text())
    body["chains"][unsigned_run.run_id]["seq"] += 5  # room for forged unsigned events
    seal_at.write_text(json.dumps(body))
    assert load_seal().problem
    check = verify_chain(unsigned_run)
    assert not check.ok and "the audit seal does not hold" in check.reason
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("verify_audit", stdout=out)
    assert "BROKEN seal" in out.getvalue()


def test_a_trail_cut_below_the_sealed_head_is_named(unsigned_run, seal_at):
    from tests.reviews.test_audit import _raw

    _seal()
    assert seal_path() == seal_at
    head = AuditEvent.objects.filter(run=unsigned_run).order_by("-seq").first()
    _raw("DELETE FROM reviews_auditevent WHERE run_id = %s AND seq > 1", [unsigned_run.pk])
    Run.objects.filter(pk=unsigned_run.pk).update(
        audit_head_seq=1, audit_head_hash=AuditEvent.objects.get(run=unsigned_run, seq=1).hash)
    check = verify_chain(unsigned_run)
    assert not check.ok and f"the audit seal records chain head #{head.seq}" in check.reason


def test_a_final_run_whose_attestation_is_gone_is_named_unless_the_seal_lists_it(run_factory, seal_at):
    listed, later = run_factory(run_id="AAS-2026-09-25-sealed-01"), run_factory(run_id="AAS-2026-09-25-sealed-02")
    Run.objects.filter(pk=listed.pk).update(status=Run.Status.FINAL)
    _seal()
    assert json.loads(seal_at.read_text())["final_runs_without_attestation"] == [listed.run_id]
    Run.objects.filter(pk=later.pk).update(status=Run.Status.FINAL)
    assert verify_chain(Run.objects.get(pk=listed.pk)).ok
    check = verify_chain(Run.objects.get(pk=later.pk))
    assert not check.ok and "final run without a stored attestation" in check.reason

"""A trail the database cannot forge (issue 36 item 4, DESIGN §8 "Signed by a key the database never holds").

The app's database role may INSERT events (it must, to write them) and UPDATE the run row. Everything
that makes an event's hash is public (SHA-256 over the previous hash and the RFC 8785 payload), so that
role can append a correctly chained event and move the run's head onto it. Only the audit key, a file
the database never holds, makes an event's signature: verify_audit and `…/audit/verify/` name each
event whose signature is missing or wrong, and events written before signatures are unsigned history.
"""
from __future__ import annotations

import base64
import io
import secrets

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.utils import timezone

from reviews import audit
from reviews.audit import chain_payload, event_hash, verify_chain
from reviews.models import AuditEvent
from tests.reviews.test_audit import _append
from tests.reviews.test_audit_head import app_role  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db


def _forge(run, role: str | None, *, signature: str = "", action: str = "run.approved") -> AuditEvent:
    """A correctly chained event appended as `role` (None: the test's own connection), the run's head moved
    onto it, as anyone who can write rows can do: every input of the hash is public."""
    last = AuditEvent.objects.filter(run=run).order_by("-seq").first()
    forged = AuditEvent(run=run, seq=last.seq + 1, actor="user:mallory", action=action, object_type="run",
                        object_id=run.run_id, before=None, after={"approval": 99, "note": "looks fine"},
                        created_at=timezone.now(), prev_hash=last.hash)
    if hasattr(forged, "salt"):
        forged.salt = secrets.token_hex(16)
        forged.signature = signature
    forged.hash = event_hash(last.hash, chain_payload(forged))
    with transaction.atomic(), connection.cursor() as cursor:
        if role is not None:
            cursor.execute(f"SET LOCAL ROLE {connection.ops.quote_name(role)}")
        forged.save(force_insert=True)
        cursor.execute("UPDATE reviews_run SET audit_head_seq = %s, audit_head_hash = %s WHERE id = %s",
                       [forged.seq, forged.hash, run.pk])
    return forged


def test_an_event_the_app_role_inserts_and_chains_is_named_unsigned(app_role, run_factory, auditor):  # noqa: F811
    run = run_factory()
    _append(run, 2)
    forged = _forge(run, app_role)
    check = verify_chain(run)
    assert not check.ok
    assert check.broken_seq == forged.seq and check.broken_event_id == forged.pk
    assert "unsigned" in check.reason
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("verify_audit", run.run_id, stdout=out)
    assert f"event #{forged.seq}" in out.getvalue() and "unsigned" in out.getvalue()
    report = auditor.get(f"/api/runs/{run.run_id}/audit/verify/").json()
    assert report["ok"] is False and report["broken_seq"] == forged.seq and "unsigned" in report["reason"]
    assert [p["seq"] for p in report["signatures"]["failures"]] == [forged.seq]


def test_a_signature_made_by_another_key_or_copied_from_another_event_is_named(run_factory):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    run = run_factory()
    genuine = _append(run, 2)
    stranger = Ed25519PrivateKey.generate()
    first = _forge(run, None, signature=base64.b64encode(stranger.sign(b"anything")).decode())
    second = _forge(run, None, signature=genuine[-1].signature)
    check = verify_chain(run)
    assert not check.ok and check.broken_seq == first.seq and "does not verify" in check.reason
    assert [f.seq for f in check.signature_failures] == [first.seq, second.seq]


def test_every_event_written_now_is_salted_and_signed_by_the_audit_key(run_factory):
    from reviews.audit_keys import published_audit_keys, verifies

    run = run_factory()
    events = _append(run, 3)
    keys = published_audit_keys()
    assert keys and all(k.purpose == "audit" for k in keys)
    for event in AuditEvent.objects.filter(run=run):
        assert len(event.salt) == 32 and int(event.salt, 16) >= 0
        assert verifies([k.public_key for k in keys], event.hash, event.signature)
    assert len({e.salt for e in events}) == 3
    assert verify_chain(run).ok


def test_events_before_the_first_signed_one_are_unsigned_history_not_failures(run_factory, monkeypatch, auditor):
    with monkeypatch.context() as before_the_change:
        before_the_change.setattr(audit, "new_salt", lambda: "")
        before_the_change.setattr(audit, "event_signature", lambda digest: "")
        run = run_factory()
        old = _append(run, 2)
    _append(run, 2)
    check = verify_chain(run)
    assert check.ok and check.unsigned_history == old[-1].seq
    report = auditor.get(f"/api/runs/{run.run_id}/audit/verify/").json()
    assert report["ok"] is True and report["signatures"]["unsigned_history"] == old[-1].seq


def test_an_unsalted_event_after_the_first_salted_one_is_refused(run_factory, monkeypatch):
    run = run_factory()
    _append(run, 1)
    with monkeypatch.context() as downgraded:
        downgraded.setattr(audit, "new_salt", lambda: "")
        late = _append(run, 1)[0]
    check = verify_chain(run)
    assert not check.ok and check.broken_seq == late.seq and "unsalted" in check.reason


def test_the_audit_key_lives_in_a_file_and_never_in_the_database(run_factory):
    from django.conf import settings

    from reviews.audit_keys import load_audit_key

    key = load_audit_key()
    assert str(settings.AUDIT_KEY_PATH).endswith(".pem")
    run = run_factory()
    _append(run, 1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT string_agg(t::text, '') FROM reviews_auditevent t")
        dump = cursor.fetchone()[0]
    assert key.private_hex() not in dump


def test_events_signed_before_a_rotation_still_verify_after_it(run_factory, settings, tmp_path):
    from reviews.audit_keys import load_audit_key, published_audit_keys

    settings.AUDIT_KEY_PATH = str(tmp_path / "audit-ed25519.pem")
    call_command("signing_key", "ensure", stdout=io.StringIO())  # makes the audit key too (make run)
    first = load_audit_key().keyid
    run = run_factory()
    _append(run, 2)
    out = io.StringIO()
    call_command("audit_key", "rotate", stdout=out)
    assert f"retired {first}" in out.getvalue()
    assert load_audit_key().keyid != first
    _append(run, 2)
    assert verify_chain(run).ok
    retired = {k.keyid: k for k in published_audit_keys()}[first]
    assert retired.valid_until is not None and retired.as_api()["purpose"] == "audit"


def test_a_missing_audit_key_writes_no_event_in_production(run_factory, settings, tmp_path):
    from reviews.audit_keys import AuditKeyError

    run = run_factory()
    settings.AUDIT_KEY_PATH, settings.DEBUG = str(tmp_path / "none.pem"), False
    before = AuditEvent.objects.filter(run=run).count()
    with pytest.raises(AuditKeyError, match="no audit key"), transaction.atomic():
        _append(run, 1)
    assert AuditEvent.objects.filter(run=run).count() == before and not (tmp_path / "none.pem").exists()

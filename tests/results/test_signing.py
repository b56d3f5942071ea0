"""Signing keys on disk (results.signing), their command and GET /api/keys/ (DESIGN §7 "Signed", §9)."""
from __future__ import annotations

import io
import json
import os
import stat

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from aas_verify import load_keys
from aas_verify.dsse import parse_envelope, verify
from results.attestation import (
    PAYLOAD_TYPE,
    ApprovalEntry,
    AttestationInput,
    build_statement,
    envelope_bytes,
    sign_statement,
    statement_bytes,
)
from results.signing import SigningKeyError, create_key, load_signing_key, published_keys, rotate_key


@pytest.fixture
def keys(settings, tmp_path):
    settings.SIGNING_KEY_PATH = str(tmp_path / "signing" / "ed25519.pem")
    settings.SIGNING_PUBLIC_KEYS_DIR = ""
    return tmp_path / "signing"


def test_create_writes_a_private_key_only_its_owner_reads_and_publishes_its_public_half(keys):
    out = io.StringIO()
    call_command("signing_key", "create", stdout=out)
    key = load_signing_key(keys / "ed25519.pem")
    assert stat.S_IMODE(os.stat(keys / "ed25519.pem").st_mode) == 0o600
    assert out.getvalue() == f"created {key.keyid} at {keys / 'ed25519.pem'}\n"
    assert [k.keyid for k in published_keys(keys / "public")] == [key.keyid]
    assert "PRIVATE" not in "".join(p.read_text() for p in (keys / "public").iterdir())
    assert "PRIVATE" not in repr(key)


def test_create_refuses_to_overwrite_a_key(keys):
    call_command("signing_key", "create", stdout=io.StringIO())
    with pytest.raises(CommandError, match="already there; `python manage.py signing_key rotate` replaces it"):
        call_command("signing_key", "create", stdout=io.StringIO())


def test_rotate_keeps_the_retired_public_key_published_and_list_says_which_is_current(keys):
    call_command("signing_key", "create", stdout=io.StringIO())
    first = load_signing_key(keys / "ed25519.pem").keyid
    call_command("signing_key", "rotate", stdout=io.StringIO())
    second = load_signing_key(keys / "ed25519.pem").keyid
    assert first != second
    out = io.StringIO()
    call_command("signing_key", "list", stdout=out)
    lines = {line.split()[0]: line for line in out.getvalue().splitlines()}
    assert lines[second].endswith("current") and " retired " in lines[first]


def test_a_key_readable_by_others_is_refused(keys):
    create_key(keys / "ed25519.pem", keys / "public")
    os.chmod(keys / "ed25519.pem", 0o644)
    with pytest.raises(SigningKeyError, match="readable by others"):
        load_signing_key(keys / "ed25519.pem")


def test_a_missing_key_says_what_to_run(keys):
    with pytest.raises(SigningKeyError, match="create one with `python manage.py signing_key create`"):
        load_signing_key()


def statement_input(**overrides) -> AttestationInput:
    fields = dict(run_id="AAS-2026-10-02-demo-01", manifest_sha256="a" * 64, audit_head=(9, "b" * 64),
                  result_md_sha256="c" * 64, result_json_sha256="d" * 64, members={"memory.md": "e" * 64,
                                                                                   "epistemic.md": "f" * 64},
                  approvals=(ApprovalEntry(id=3, by="user:reviewer-1", at="2026-10-02T10:00:00+00:00",
                                           note="Checked."),), validation_warnings=1, quotations_total=4,
                  quotations_verified=3, snapshot_sha256="1" * 64)
    return AttestationInput(**(fields | overrides))


def test_the_statement_is_deterministic_and_lists_the_results_then_the_members():
    statement = build_statement(statement_input())
    assert statement_bytes(statement) == statement_bytes(build_statement(statement_input()))
    assert [s["name"] for s in statement["subject"]] == ["result.md", "result.json", "epistemic.md", "memory.md"]
    assert statement["predicate"]["audit_head"] == {"seq": 9, "hash": "b" * 64}
    assert statement["predicate"]["review_passes"] == [] and statement["predicate"]["adjudications"] == []


def test_the_envelope_verifies_with_the_verifiers_own_reading_of_dsse(keys):
    create_key(keys / "ed25519.pem", keys / "public")
    key = load_signing_key(keys / "ed25519.pem")
    envelope = parse_envelope(envelope_bytes(sign_statement(build_statement(statement_input()), key)))
    assert envelope.payload_type == PAYLOAD_TYPE and envelope.signatures[0][0] == key.keyid
    assert envelope.payload == statement_bytes(build_statement(statement_input()))
    found, why = verify(envelope, load_keys(key.public_key_pem.encode(), "key"))
    assert found is not None and found.keyid == key.keyid, why


@pytest.mark.urls("tests.results.urls")
def test_get_keys_lists_every_key_to_anyone_retired_ones_included(keys, db):
    create_key(keys / "ed25519.pem", keys / "public")
    retired, current = rotate_key(keys / "ed25519.pem", keys / "public")
    response = Client().get("/api/keys/")
    assert response.status_code == 200
    everything = response.json()["keys"]
    listed = {k["keyid"]: k for k in everything if k["purpose"] == "result"}
    assert set(listed) == {retired.keyid, current.keyid}
    assert [k["purpose"] for k in everything if k["purpose"] != "result"] == ["audit"]  # the session's audit key
    assert listed[retired.keyid]["retired"] and listed[current.keyid]["retired"] is None
    assert {k["algorithm"] for k in listed.values()} == {"ed25519"}
    assert all(k["public_key_pem"].startswith("-----BEGIN PUBLIC KEY-----") for k in listed.values())
    assert "PRIVATE" not in json.dumps(response.json())
    assert {k.keyid for k in load_keys(response.content, "GET /api/keys/") if k.purpose == "result"} == set(listed)


# --- issue 36: keys have a purpose and a validity window ---------------------------------------------------


def test_rotation_closes_the_old_keys_window_once_the_new_one_is_open(keys):
    create_key(keys / "ed25519.pem", keys / "public")
    retired, current = rotate_key(keys / "ed25519.pem", keys / "public")
    listed = {k.keyid: k for k in published_keys(keys / "public")}
    # The new window opens before the new key can sign, the old one closes once it can no longer sign: no gap.
    assert listed[retired.keyid].valid_from < listed[current.keyid].valid_from <= listed[retired.keyid].valid_until
    assert listed[current.keyid].valid_until is None
    assert {k.purpose for k in listed.values()} == {"result"}


def test_ensure_adds_purpose_and_window_to_keys_published_before_them(keys):
    create_key(keys / "ed25519.pem", keys / "public")
    retired, current = rotate_key(keys / "ed25519.pem", keys / "public")
    for meta in (keys / "public").glob("*.json"):  # as published before issue 36
        old = json.loads(meta.read_text())
        meta.write_text(json.dumps({name: old[name] for name in ("keyid", "created", "retired")}))
    out = io.StringIO()
    call_command("signing_key", "ensure", stdout=out)
    assert "added purpose, valid_from, valid_until to 2 published keys" in out.getvalue()
    written = {json.loads(m.read_text())["keyid"]: json.loads(m.read_text()) for m in (keys / "public").glob("*.json")}
    assert written[retired.keyid]["purpose"] == "result"
    assert written[retired.keyid]["valid_from"] == written[retired.keyid]["created"]
    assert written[retired.keyid]["valid_until"] == written[retired.keyid]["retired"]
    assert written[current.keyid]["valid_until"] is None


def test_list_prints_the_fingerprint_to_publish_out_of_band(keys):
    from cryptography.hazmat.primitives import serialization

    call_command("signing_key", "create", stdout=io.StringIO())
    key = load_signing_key(keys / "ed25519.pem")
    raw = key.private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    out = io.StringIO()
    call_command("signing_key", "list", stdout=out)
    assert f"fingerprint {__import__('hashlib').sha256(raw).hexdigest()}" in out.getvalue()
    assert " result " in out.getvalue()


@pytest.mark.urls("tests.results.urls")
def test_get_keys_gives_purpose_window_and_fingerprint_and_the_verifier_accepts_it(keys, db):
    create_key(keys / "ed25519.pem", keys / "public")
    retired, current = rotate_key(keys / "ed25519.pem", keys / "public")
    listed = {k["keyid"]: k for k in Client().get("/api/keys/").json()["keys"]}
    assert listed[retired.keyid]["purpose"] == listed[current.keyid]["purpose"] == "result"
    assert listed[current.keyid]["valid_from"] <= listed[retired.keyid]["valid_until"]
    assert listed[current.keyid]["valid_until"] is None
    loaded = {k.keyid: k for k in load_keys(json.dumps({"keys": list(listed.values())}).encode(), "GET /api/keys/")}
    assert {k: v.fingerprint for k, v in loaded.items()} == {k: v["fingerprint"] for k, v in listed.items()}

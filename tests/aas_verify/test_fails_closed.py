"""Issue 36 item 3: every verifier fails closed (DESIGN §7 "Verified offline, everything").

The attack: a real export whose result.md was edited, whose trail was re-hashed to match, and whose
statement was re-signed with a fresh Ed25519 key (its PEM put in the bundle). Checked with that key it is
a consistent bundle; `python -m aas_verify`, `manage.py verify_bundle` and `aas verify` must each refuse it
without a key the caller trusts (exit 2, naming why and the key it claims), and with the server's real key
or its pinned fingerprint (exit 1, naming the signer). A keys document whose key was retired before the
statement's date, lists it for another purpose, or lacks the window fields, is refused, named.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys

import pytest
from cryptography.hazmat.primitives import serialization
from django.core.management import CommandError, call_command

from aas_verify import load_keys, verify_files
from aas_verify.checks import statement_of
from aas_verify.cli import main
from aas_verify.trail import event_hash
from tests.aas_verify.bundle_files import manifest_json, zipped
from tests.aas_verify.test_forgeries import other_key, resign
from tests.conftest import ROOT

NOT_TRUSTED = "signature not checked against a trusted key"


def fingerprint(pem: str) -> str:
    """SHA-256 of the raw 32-byte Ed25519 public key: what an operator publishes out of band."""
    key = serialization.load_pem_public_key(pem.encode())
    return hashlib.sha256(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)).hexdigest()


def forge(bundle):
    """The attack of issue 36: result edited, trail re-hashed, statement re-signed, the forger's PEM inside."""
    files = bundle.copy()
    files["result.md"] += b"\nA conclusion the reviewer never approved.\n"
    result_sha = hashlib.sha256(files["result.md"]).hexdigest()
    audit = json.loads(files["audit.json"])
    prev = "0" * 64
    for event in audit["events"]:
        if event["action"] == "run.finalized":
            event["after"]["result_sha256"] = result_sha
        event["prev_hash"] = prev
        event["hash"] = prev = event_hash(audit["run"], event)
    audit["head"]["hash"] = prev
    files["audit.json"] = (json.dumps(audit, indent=2, ensure_ascii=False) + "\n").encode()
    statement = statement_of(files["attestation.dsse.json"])
    next(s for s in statement["subject"] if s["name"] == "result.md")["digest"]["sha256"] = result_sha
    head = statement["predicate"]["audit_head"]
    head["hash"] = next(e["hash"] for e in audit["events"] if e["seq"] == head["seq"])
    forger = other_key()
    files["public-key.pem"] = forger.public_key_pem.encode()
    resign(files, statement, forger)
    files["MANIFEST.json"] = manifest_json(files)
    return files, forger


@pytest.fixture
def forged(signed_bundle, tmp_path):
    files, forger = forge(signed_bundle)
    path = tmp_path / "forged.zip"
    path.write_bytes(zipped(files))
    server = tmp_path / "server.pem"
    server.write_text(signed_bundle.key.public_key_pem)
    return path, files, forger, server


def aas(*args) -> subprocess.CompletedProcess:
    """The `aas` client from its source tree, with the verifier importable as an installed one would be."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "client"), str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "aas_client.cli", *args], capture_output=True, text=True, check=False,
                          env=env, timeout=120, cwd=ROOT / "client")


def verify_bundle(*args) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("verify_bundle", *args, stdout=out, stderr=io.StringIO())
    except CommandError as error:
        return error.returncode, out.getvalue()
    return 0, out.getvalue()


def test_the_forgery_is_consistent_under_the_forgers_own_key(signed_bundle):
    files, forger = forge(signed_bundle)
    report = verify_files(files, load_keys(forger.public_key_pem.encode(), "forger.pem"))
    assert report.ok, [f.line() for f in report.failures]


def test_without_a_key_aas_verify_refuses_naming_the_key_the_bundle_claims(forged):
    path, _files, forger, _server = forged
    out = io.StringIO()
    assert main([str(path)], stdout=out) == 2, out.getvalue()
    assert NOT_TRUSTED in out.getvalue()
    assert f"claims to be signed by {fingerprint(forger.public_key_pem)}" in out.getvalue()
    assert not out.getvalue().startswith("OK")


def test_without_a_key_verify_bundle_refuses(forged):
    path, _files, forger, _server = forged
    code, out = verify_bundle(str(path))
    assert code == 2, out
    assert NOT_TRUSTED in out and f"claims to be signed by {fingerprint(forger.public_key_pem)}" in out


def test_without_a_key_aas_verify_the_client_refuses(forged):
    path, _files, forger, _server = forged
    done = aas("verify", str(path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert NOT_TRUSTED in done.stdout and fingerprint(forger.public_key_pem) in done.stdout


def test_with_the_servers_key_every_verifier_names_the_wrong_signer(forged):
    path, _files, forger, server = forged
    claim = f"claims to be signed by {fingerprint(forger.public_key_pem)}"
    out = io.StringIO()
    assert main([str(path), "--key", str(server)], stdout=out) == 1
    assert claim in out.getvalue() and "not signed by a trusted key" in out.getvalue()
    code, text = verify_bundle(str(path), "--key", str(server))
    assert code == 1 and claim in text
    done = aas("verify", str(path), "--key", str(server))
    assert done.returncode == 1 and claim in done.stdout, done.stdout + done.stderr


def test_with_the_servers_pinned_fingerprint_every_verifier_names_the_wrong_signer(forged, signed_bundle):
    path, _files, forger, _server = forged
    pin = fingerprint(signed_bundle.key.public_key_pem)
    claim = f"claims to be signed by {fingerprint(forger.public_key_pem)}"
    out = io.StringIO()
    assert main([str(path), "--key-fingerprint", pin], stdout=out) == 1
    assert claim in out.getvalue() and pin in out.getvalue()
    code, text = verify_bundle(str(path), "--key-fingerprint", pin)
    assert code == 1 and claim in text
    done = aas("verify", str(path), "--key-fingerprint", pin)
    assert done.returncode == 1 and claim in done.stdout, done.stdout + done.stderr


def test_a_clean_bundle_verifies_with_the_pinned_fingerprint_in_every_verifier(signed_bundle, tmp_path):
    path = tmp_path / "run.zip"
    path.write_bytes(zipped(signed_bundle.files))
    pin = fingerprint(signed_bundle.key.public_key_pem)
    out = io.StringIO()
    assert main([str(path), "--key-fingerprint", pin], stdout=out) == 0, out.getvalue()
    assert out.getvalue().splitlines()[-1].startswith("OK ")
    assert verify_bundle(str(path), "--key-fingerprint", pin.upper())[0] == 0
    done = aas("verify", str(path), "--key-fingerprint", pin)
    assert done.returncode == 0, done.stdout + done.stderr


def keys_document(bundle, **fields) -> bytes:
    entry = {"keyid": bundle.key.keyid, "algorithm": "ed25519", "public_key_pem": bundle.key.public_key_pem,
             "purpose": "result", "valid_from": "2025-01-01T00:00:00+00:00", "valid_until": None}
    entry.update(fields)
    return json.dumps({"keys": [{k: v for k, v in entry.items() if v is not ...}]}).encode()


def test_a_statement_dated_after_its_keys_retirement_fails_named(signed_bundle, tmp_path):
    path = tmp_path / "run.zip"
    path.write_bytes(zipped(signed_bundle.files))
    keys = tmp_path / "keys.json"
    keys.write_bytes(keys_document(signed_bundle, valid_until="2026-01-01T00:00:00+00:00"))
    out = io.StringIO()
    assert main([str(path), "--key", str(keys)], stdout=out) == 1, out.getvalue()
    assert "outside the validity window of key" in out.getvalue()
    assert "valid until 2026-01-01T00:00:00+00:00" in out.getvalue()
    code, text = verify_bundle(str(path), "--key", str(keys))
    assert code == 1 and "outside the validity window" in text
    done = aas("verify", str(path), "--key", str(keys))
    assert done.returncode == 1 and "outside the validity window" in done.stdout


def test_a_statement_dated_before_its_key_was_valid_fails_named(signed_bundle, tmp_path):
    path = tmp_path / "run.zip"
    path.write_bytes(zipped(signed_bundle.files))
    keys = tmp_path / "keys.json"
    keys.write_bytes(keys_document(signed_bundle, valid_from="2099-01-01T00:00:00+00:00"))
    out = io.StringIO()
    assert main([str(path), "--key", str(keys)], stdout=out) == 1
    assert "valid from 2099-01-01T00:00:00+00:00" in out.getvalue()


def test_a_key_listed_for_another_purpose_is_not_accepted_for_the_result(signed_bundle, tmp_path):
    path = tmp_path / "run.zip"
    path.write_bytes(zipped(signed_bundle.files))
    keys = tmp_path / "keys.json"
    keys.write_bytes(keys_document(signed_bundle, purpose="audit"))
    out = io.StringIO()
    assert main([str(path), "--key", str(keys)], stdout=out) == 1
    assert "its purpose is audit, not result" in out.getvalue()


@pytest.mark.parametrize("missing", ["purpose", "valid_from", "valid_until"])
def test_a_keys_document_without_the_window_and_purpose_is_refused(signed_bundle, tmp_path, capsys, missing):
    path = tmp_path / "run.zip"
    path.write_bytes(zipped(signed_bundle.files))
    keys = tmp_path / "keys.json"
    keys.write_bytes(keys_document(signed_bundle, **{missing: ...}))
    assert main([str(path), "--key", str(keys)], stdout=io.StringIO()) == 2
    assert f"keys[0] has no {missing}" in capsys.readouterr().err


def test_a_malformed_fingerprint_is_a_usage_error(signed_bundle, tmp_path):
    path = tmp_path / "run.zip"
    path.write_bytes(zipped(signed_bundle.files))
    assert main([str(path), "--key-fingerprint", "abc"], stdout=io.StringIO()) == 2


def test_a_key_listed_for_two_purposes_is_used_for_each_purpose_by_its_own_entry(signed_bundle, tmp_path):
    """The result key listed as `audit` too: its result entry accepts the statement; its audit entry is the audit
    key given, which signed none of the events, so each event is named (the session's audit key signed them)."""
    path = tmp_path / "run.zip"
    path.write_bytes(zipped(signed_bundle.files))
    audit, result = (json.loads(keys_document(signed_bundle, purpose=p))["keys"][0] for p in ("audit", "result"))
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [audit, result]}))
    out = io.StringIO()
    assert main([str(path), "--key", str(keys)], stdout=out) == 1, out.getvalue()
    failures = [line for line in out.getvalue().splitlines() if line.startswith("FAIL ")]
    assert failures and all("[signature]: " in line and "audit key given" in line for line in failures)


def with_audit_key(bundle, tmp_path):
    """The keys document as GET /api/keys/ gives it: the result key and the session's audit key."""
    from reviews.audit_keys import published_audit_keys

    document = json.loads(keys_document(bundle))
    document["keys"] += [key.as_api() for key in published_audit_keys()]
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(document))
    return keys


def test_with_the_audit_key_every_event_signature_is_checked_and_a_clean_bundle_passes(signed_bundle, tmp_path):
    path = tmp_path / "run.zip"
    path.write_bytes(zipped(signed_bundle.files))
    out = io.StringIO()
    assert main([str(path), "--key", str(with_audit_key(signed_bundle, tmp_path))], stdout=out) == 0, out.getvalue()
    assert "signatures not checked" not in out.getvalue()


def test_an_event_whose_signature_was_dropped_is_named_by_the_offline_verifier(signed_bundle, tmp_path):
    """The database role's forgery seen offline: an event without the audit key's signature, chain intact."""
    files = dict(signed_bundle.files)
    trail = json.loads(files["audit.json"])
    events = trail["events"] if isinstance(trail, dict) else trail
    events[-1]["signature"] = ""
    files["audit.json"] = json.dumps(trail).encode()
    path = tmp_path / "run.zip"
    path.write_bytes(zipped(files))
    out = io.StringIO()
    assert main([str(path), "--key", str(with_audit_key(signed_bundle, tmp_path))], stdout=out) == 1
    assert f"event #{events[-1]['seq']} [signature]" in out.getvalue() and "unsigned event" in out.getvalue()


def test_a_keys_document_whose_fingerprint_is_not_its_keys_is_refused(signed_bundle, tmp_path, capsys):
    path = tmp_path / "run.zip"
    path.write_bytes(zipped(signed_bundle.files))
    keys = tmp_path / "keys.json"
    keys.write_bytes(keys_document(signed_bundle, fingerprint="0" * 64))
    assert main([str(path), "--key", str(keys)], stdout=io.StringIO()) == 2
    assert "keys[0]: fingerprint '" + "0" * 64 + "' is not its public key's" in capsys.readouterr().err

"""Every forgery of issue 24 fails `aas_verify` naming what is wrong; a clean bundle passes (DESIGN §7).

The bundle is a real finalized run's export as the app writes it, signed by finalization itself
(tests/aas_verify/conftest.py). These tests touch no database.
"""
from __future__ import annotations

import base64
import hashlib
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aas_verify import load_keys, verify_files
from aas_verify.checks import statement_of
from results.attestation import envelope_bytes, sign_statement
from results.signing import SigningKey, key_id, public_pem
from tests.aas_verify.bundle_files import manifest_json


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def lines_of(files, keys=None) -> list[str]:
    return [failure.line() for failure in verify_files(files, keys).failures]


def given_key(bundle):
    return load_keys(bundle.key.public_key_pem.encode(), "--key server.pem")


def audit_of(files) -> dict:
    return json.loads(files["audit.json"])


def put_audit(files, audit) -> None:
    files["audit.json"] = (json.dumps(audit, indent=2, ensure_ascii=False) + "\n").encode()
    files["MANIFEST.json"] = manifest_json(files)


def resign(files, statement, key) -> None:
    files["attestation.dsse.json"] = envelope_bytes(sign_statement(statement, key))
    files["MANIFEST.json"] = manifest_json(files)


def other_key() -> SigningKey:
    private = Ed25519PrivateKey.generate()
    return SigningKey(key_id(private.public_key()), private, public_pem(private.public_key()))


def test_a_clean_bundle_passes_against_the_servers_key(signed_bundle):
    report = verify_files(signed_bundle.copy(), given_key(signed_bundle))
    assert report.ok, [f.line() for f in report.failures]
    assert report.keyid == signed_bundle.key.keyid and report.events >= 4 and report.notes == []


def test_without_a_key_it_is_not_verified_and_names_the_key_the_bundle_claims(signed_bundle):
    report = verify_files(signed_bundle.copy())
    assert not report.ok and report.exit_code == 2 and report.keyid is None
    claimed = given_key(signed_bundle)[0].fingerprint
    assert [f.line() for f in report.failures] == [(
        "attestation.dsse.json [signatures]: signature not checked against a trusted key: give --key FILE or "
        "--key-fingerprint SHA256 obtained out of band; a key carried in the bundle is never trusted on its own, "
        f"and the bundle claims to be signed by {claimed}")]


def test_result_md_edited_and_manifest_json_recomputed(signed_bundle):
    files = signed_bundle.copy()
    files["result.md"] += b"\nAn afterthought the reviewer never saw.\n"
    files["MANIFEST.json"] = manifest_json(files)
    found = lines_of(files, given_key(signed_bundle))
    assert any(line.startswith("result.md [subject.digest.sha256]: SHA-256 ") for line in found), found
    assert any("[after.result_sha256]: run.finalized records result_sha256" in line and
               f"result.md hashes to {sha(files['result.md'])}" in line for line in found), found


def test_the_approved_actor_changed_in_audit_json(signed_bundle):
    files = signed_bundle.copy()
    audit = audit_of(files)
    approved = next(e for e in audit["events"] if e["action"] == "run.approved")
    approved["actor"] = "user:mallory"
    put_audit(files, audit)
    found = lines_of(files, given_key(signed_bundle))
    seq = approved["seq"]
    assert any(line.startswith(f"audit.json event #{seq} [hash]: (run.approved) content does not match its hash")
               for line in found), found
    assert (f"audit.json event #{seq} [actor]: run.approved actor is 'user:mallory'; the signed statement says "
            "'user:reviewer-1' approved") in found


def test_the_approved_actor_changed_and_every_hash_after_it_recomputed(signed_bundle):
    """A consistent rewrite of the trail: the chain holds, but no longer reaches the attested head."""
    from aas_verify.trail import event_hash

    files = signed_bundle.copy()
    audit = audit_of(files)
    prev = "0" * 64
    for event in audit["events"]:
        if event["action"] == "run.approved":
            event["actor"] = "user:mallory"
        event["prev_hash"] = prev
        event["hash"] = prev = event_hash(audit["run"], event)
    audit["head"]["hash"] = prev
    put_audit(files, audit)
    found = lines_of(files, given_key(signed_bundle))
    head = statement_of(files["attestation.dsse.json"])["predicate"]["audit_head"]
    assert any(line.startswith(f"audit.json event #{head['seq']} [hash]: event #{head['seq']} hashes to") and
               "the trail up to finalization was rewritten" in line for line in found), found
    assert any("[actor]: run.approved actor is 'user:mallory'" in line for line in found), found


@pytest.mark.parametrize("rewrite_head", [False, True], ids=["head-kept", "head-rewritten"])
def test_the_last_three_audit_events_dropped(signed_bundle, rewrite_head):
    files = signed_bundle.copy()
    audit = audit_of(files)
    dropped = audit["events"][-3:]
    audit["events"] = audit["events"][:-3]
    if rewrite_head:
        audit["head"] = {"seq": audit["events"][-1]["seq"], "hash": audit["events"][-1]["hash"]}
    put_audit(files, audit)
    found = lines_of(files, given_key(signed_bundle))
    attested = statement_of(files["attestation.dsse.json"])["predicate"]["audit_head"]["seq"]
    assert attested in [e["seq"] for e in dropped]
    assert any(line.startswith(f"audit.json event #{attested} [head]: the attested chain head, event #{attested}") and
               "the trail was cut" in line for line in found), found
    if not rewrite_head:
        assert any(line.startswith("audit.json [head]: the run's chain head is event #") for line in found), found


def test_memory_md_altered_with_its_pins_rewritten(signed_bundle):
    files = signed_bundle.copy()
    old = sha(files["memory.md"])
    files["memory.md"] = files["memory.md"].replace(b"cheatsheet", b"cheat-sheet", 1)
    new = sha(files["memory.md"])
    files["ARTIFACT.yaml"] = files["ARTIFACT.yaml"].replace(old.encode(), new.encode())
    files["MANIFEST.json"] = manifest_json(files)
    found = lines_of(files, given_key(signed_bundle))
    assert not any("ARTIFACT.yaml pins" in line or "MANIFEST.json lists" in line for line in found)
    assert any(line.startswith(f"memory.md: SHA-256 {new} differs from the hash {old} that result.md (Run identity)")
               for line in found), found
    assert any(line.startswith(f"memory.md: SHA-256 {new} differs from the hash {old} that result.json")
               for line in found), found
    assert any(line.startswith("memory.md [subject.digest.sha256]") for line in found), found
    assert any(line.startswith("ARTIFACT.yaml [predicate.manifest_sha256]") for line in found), found


def test_a_signature_made_with_another_key(signed_bundle):
    """Everything rewritten consistently, but signed without the server's private key."""
    files = signed_bundle.copy()
    forger = other_key()
    resign(files, statement_of(files["attestation.dsse.json"]), forger)
    files["public-key.pem"] = forger.public_key_pem.encode()
    files["MANIFEST.json"] = manifest_json(files)
    found = lines_of(files, given_key(signed_bundle))
    server = given_key(signed_bundle)[0].fingerprint
    claimed = load_keys(forger.public_key_pem.encode(), "forger")[0].fingerprint
    assert found == [f"attestation.dsse.json [signatures]: signature: not signed by a trusted key: no signature "
                     f"verifies against {server} (--key server.pem); the bundle claims to be signed by {claimed} "
                     f"(the envelope names key ID {forger.keyid}, a hint)"]


def test_a_signature_by_another_key_than_the_bundles_own_fails_even_without_key(signed_bundle):
    files = signed_bundle.copy()
    resign(files, statement_of(files["attestation.dsse.json"]), other_key())
    assert any(line.startswith("attestation.dsse.json [signatures]: signature: no signature verifies")
               for line in lines_of(files))


def test_an_envelope_whose_payload_was_edited(signed_bundle):
    files = signed_bundle.copy()
    envelope = json.loads(files["attestation.dsse.json"])
    statement = statement_of(files["attestation.dsse.json"])
    statement["predicate"]["approvals"][0]["note"] = "Checked nothing."
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    files["attestation.dsse.json"] = json.dumps(envelope).encode()
    files["MANIFEST.json"] = manifest_json(files)
    found = lines_of(files, given_key(signed_bundle))
    assert any(line.startswith("attestation.dsse.json [signatures]: signature: not signed by a trusted key: no "
                               "signature verifies") for line in found), found
    assert any(line.endswith("[after.note]: run.approved note differs from the note the signed statement records")
               for line in found), found


def test_a_signed_statement_whose_subject_digest_differs_from_result_md(signed_bundle):
    files = signed_bundle.copy()
    statement = statement_of(files["attestation.dsse.json"])
    subject = next(s for s in statement["subject"] if s["name"] == "result.md")
    subject["digest"]["sha256"] = "ab" * 32
    resign(files, statement, signed_bundle.key)
    found = lines_of(files, given_key(signed_bundle))
    assert found == [f"result.md [subject.digest.sha256]: SHA-256 {sha(files['result.md'])} differs from the signed "
                     f"statement's subject digest {'ab' * 32}"]


def test_a_trail_with_a_gap_in_its_sequence(signed_bundle):
    files = signed_bundle.copy()
    audit = audit_of(files)
    removed = audit["events"].pop(1)
    put_audit(files, audit)
    found = lines_of(files, given_key(signed_bundle))
    seq = removed["seq"]
    assert (f"audit.json event #{seq + 1} [seq]: sequence gap: expected event #{seq}, found #{seq + 1} "
            "(1 event missing)") in found
    assert any(line.startswith(f"audit.json event #{seq + 1} [prev_hash]") for line in found), found


def test_a_missing_signed_part_is_named(signed_bundle):
    for name in ("attestation.dsse.json", "public-key.pem", "result.json", "audit.json"):
        files = signed_bundle.copy()
        del files[name]
        files["MANIFEST.json"] = manifest_json(files)
        assert f"{name}: missing from the bundle" in lines_of(files, given_key(signed_bundle))


def test_a_member_file_left_unpinned_is_named(signed_bundle):
    files = signed_bundle.copy()
    files["extra.md"] = b"# smuggled\n"
    files["MANIFEST.json"] = manifest_json(files)
    found = lines_of(files, given_key(signed_bundle))
    assert "extra.md: member file not pinned in ARTIFACT.yaml" in found


def test_the_signed_approval_names_the_chain_head_its_run_approved_event_records(signed_bundle):
    statement = statement_of(signed_bundle.files["attestation.dsse.json"])
    approval = statement["predicate"]["approvals"][0]
    approved = next(e for e in audit_of(signed_bundle.files)["events"] if e["action"] == "run.approved")
    before = next(e for e in audit_of(signed_bundle.files)["events"] if e["seq"] == approved["seq"] - 1)
    assert approval["audit_head"] == approved["after"]["audit_head"] == {"seq": before["seq"], "hash": before["hash"]}


def test_an_approval_head_that_differs_from_its_run_approved_event(signed_bundle):
    """Signed with the server's own key (an insider): the statement's approval says it saw more of the trail."""
    files = signed_bundle.copy()
    statement = statement_of(files["attestation.dsse.json"])
    approval = statement["predicate"]["approvals"][0]
    approval["audit_head"] = {"seq": approval["audit_head"]["seq"] + 1, "hash": "f" * 64}
    resign(files, statement, signed_bundle.key)
    found = lines_of(files, given_key(signed_bundle))
    assert any("[after.audit_head]: run.approved records the chain head" in line
               and f"the signed statement says approval {approval['id']} signed off" in line for line in found), found


def test_an_approval_head_agreed_by_statement_and_event_but_not_by_the_trail(signed_bundle):
    """The run.approved event and the statement both rewritten to claim a head the trail does not have."""
    from aas_verify.trail import event_hash

    files = signed_bundle.copy()
    audit, statement = audit_of(files), statement_of(files["attestation.dsse.json"])
    forged = {"seq": 1, "hash": "e" * 64}
    prev = "0" * 64
    for event in audit["events"]:
        if event["action"] == "run.approved":
            event["after"]["audit_head"] = forged
        event["prev_hash"] = prev
        event["hash"] = prev = event_hash(audit["run"], event)
    audit["head"]["hash"] = prev
    statement["predicate"]["audit_head"]["hash"] = prev
    statement["predicate"]["approvals"][0]["audit_head"] = forged
    put_audit(files, audit)
    resign(files, statement, signed_bundle.key)
    found = lines_of(files, given_key(signed_bundle))
    assert any(line.startswith("attestation.dsse.json [predicate.approvals[0].audit_head]: approval ")
               and "which is not the trail's event just before its run.approved" in line for line in found), found


def test_a_predicate_without_review_passes_or_adjudications_lists(signed_bundle):
    files = signed_bundle.copy()
    statement = statement_of(files["attestation.dsse.json"])
    del statement["predicate"]["review_passes"]
    statement["predicate"]["adjudications"] = {}
    resign(files, statement, signed_bundle.key)
    found = lines_of(files, given_key(signed_bundle))
    assert "attestation.dsse.json [predicate.review_passes]: the statement's review_passes is not a list" in found
    assert "attestation.dsse.json [predicate.adjudications]: the statement's adjudications is not a list" in found

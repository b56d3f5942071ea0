"""aas_verify and the audit trail's salts and signatures (issue 36 items 1 and 4, DESIGN §8).

Events are hashed in the salted form (the unsalted one only before a chain's first salted event), and,
given the server's audit public key by the caller, every event's signature is checked: an event appended
with its chain re-hashed and the head moved (what the database role can do) is named unsigned.
"""
from __future__ import annotations

import base64

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aas_verify import load_keys, verify_files
from aas_verify.trail import event_hash
from tests.aas_verify.test_forgeries import audit_of, given_key, put_audit


def audit_keys():
    from reviews.audit_keys import published_audit_keys

    return [key for published in published_audit_keys()
            for key in load_keys(published.public_key_pem.encode(), "--audit-key audit.pem")]


def lines_of(files, bundle) -> list[str]:
    return [f.line() for f in verify_files(files, given_key(bundle), audit_keys=audit_keys()).failures]


def test_every_event_of_a_clean_bundle_is_salted_and_signed(signed_bundle):
    events = audit_of(signed_bundle.copy())["events"]
    assert all(len(e["salt"]) == 32 and e["signature"] for e in events)
    report = verify_files(signed_bundle.copy(), given_key(signed_bundle), audit_keys=audit_keys())
    assert report.ok, [f.line() for f in report.failures]
    assert report.notes == []


def _append_forged(files, *, signature: str = "") -> int:
    """A run.approved appended to audit.json, correctly chained, the head moved: the database role's forgery."""
    audit = audit_of(files)
    last = audit["events"][-1]
    forged = {"seq": last["seq"] + 1, "actor": "user:mallory", "action": "run.approved", "object_type": "run",
              "object_id": audit["run"], "before": None, "after": {"approval": 99, "note": "fine"},
              "created_at": last["created_at"], "prev_hash": last["hash"], "salt": "ab" * 16,
              "signature": signature}
    forged["hash"] = event_hash(audit["run"], forged)
    audit["events"].append(forged)
    audit["head"] = {"seq": forged["seq"], "hash": forged["hash"]}
    put_audit(files, audit)
    return forged["seq"]


def test_an_appended_unsigned_event_is_named(signed_bundle):
    files = signed_bundle.copy()
    seq = _append_forged(files)
    found = lines_of(files, signed_bundle)
    assert any(f"audit.json event #{seq} [signature]" in line and "unsigned event" in line for line in found), found
    # Without the audit key the chain alone holds: that is what the signatures are for.
    assert not any("signature" in f.line() for f in verify_files(files, given_key(signed_bundle)).failures)


def test_an_event_signed_by_another_key_is_named(signed_bundle):
    files = signed_bundle.copy()
    stranger = Ed25519PrivateKey.generate()
    seq = _append_forged(files, signature=base64.b64encode(stranger.sign(b"x" * 64)).decode())
    found = lines_of(files, signed_bundle)
    assert any(f"event #{seq} [signature]" in line and "does not verify" in line for line in found), found


def test_unsigned_and_unsalted_history_before_the_first_signed_event_is_a_note(signed_bundle):
    """The first event as written before the change: no salt (re-hashed in the unsalted form), no signature;
    every later event re-chained onto it, so only their signatures break (their hashes changed)."""
    files = signed_bundle.copy()
    audit = audit_of(files)
    first = audit["events"][0]
    first["salt"], first["signature"] = "", ""
    for previous, event in zip([None, *audit["events"]], audit["events"]):
        if previous is not None:
            event["prev_hash"] = previous["hash"]
        event["hash"] = event_hash(audit["run"], event)
    audit["head"]["hash"] = audit["events"][-1]["hash"]
    put_audit(files, audit)
    report = verify_files(files, given_key(signed_bundle), audit_keys=audit_keys())
    chain = [f.line() for f in report.failures if f.field in ("prev_hash", "salt", "seq") or "was edited" in f.message]
    signatures = [f.seq for f in report.failures if f.field == "signature"]
    assert chain == [] and signatures == [e["seq"] for e in audit["events"][1:]]
    assert "audit.json: events #1 to #1 are unsigned history (written before audit signatures)" in report.notes


def test_an_unsalted_event_after_the_first_salted_one_is_named(signed_bundle):
    files = signed_bundle.copy()
    audit = audit_of(files)
    for index in (2, 3):
        event = audit["events"][index]
        event["prev_hash"] = audit["events"][index - 1]["hash"]
        if index == 2:
            event["salt"] = ""
        event["hash"] = event_hash(audit["run"], event)
    put_audit(files, audit)
    found = [f.line() for f in verify_files(files, given_key(signed_bundle)).failures]
    assert any("event #3 [salt]" in line and "unsalted event after the chain's first salted event #1" in line
               for line in found), found

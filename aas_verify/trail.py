"""The audit trail of an export (`audit.json`): every hash recomputed, the sequence unbroken from 1.

An event's hash is SHA-256 over its predecessor's hash (64 ASCII hex digits,
64 zeros before event #1) followed by the RFC 8785 bytes of

    {run, seq, actor, action, object_type, object_id, before, after, created_at, prev_hash, salt}

with `run` the run ID that `audit.json` names at its top. `salt` (32 hex digits) is in the payload
only when the event has one: events written before salts are hashed in the unsalted form, which is
accepted only before the chain's first salted event. Each event's `signature` (base64 Ed25519 of its
hash by the server's audit key) is checked by `trail_signatures` against audit keys the caller gives.

Speed: most events hold no float and no key beyond U+FFFF, and for those the
standard library's C encoder (sorted keys, no whitespace, no ASCII escaping)
writes the same bytes as RFC 8785. So each event is hashed that way first,
and only when that hash differs from the recorded one is it recomputed with
the exact canonical form (`jcs.canonical`) before a failure is reported. A
match by the quick form is as sound as one by the exact form: both are
serialisations that parse back to the event as read, and the recorded hash
commits to exactly one byte string.

The quick form is written without the encoder's per-call set-up (about 0.7 µs
a call, more than encoding a small object): the payload's ten top-level keys
are fixed, so when its string fields are strings and `seq` an integer, the
object is laid out in their sorted order directly and only `before` and
`after` go through the C encoder, made once (`json.encoder.c_make_encoder`);
any other event takes the encoder's ordinary path. tests/aas_verify/test_jcs.py
holds the two equal to `jcs.canonical` and to `rfc8785`.
"""
from __future__ import annotations

import hashlib
import json
import operator
from dataclasses import dataclass, field
from json.encoder import c_make_encoder, encode_basestring

from .jcs import CanonicalizationError, canonical
from .report import Failure

AUDIT = "audit.json"
GENESIS = "0" * 64
QUICK = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
CONTENT_FIELDS = ("seq", "actor", "action", "object_type", "object_id", "before", "after", "created_at",
                  "prev_hash")


@dataclass
class Trail:
    run_id: str | None = None
    events: list[dict] = field(default_factory=list)
    head: dict | None = None  # audit.json's own record of the run row's chain head
    by_seq: dict[int, dict] = field(default_factory=dict)


def payload_of(run_id: str, event: dict) -> dict:
    payload = {name: event.get(name) for name in CONTENT_FIELDS}
    payload["run"] = run_id
    if event.get("salt"):
        payload["salt"] = event["salt"]
    return payload


def event_hash(run_id: str, event: dict) -> str:
    """The hash of the event's content, in the exact RFC 8785 form."""
    return hashlib.sha256(event["prev_hash"].encode("ascii") + canonical(payload_of(run_id, event))).hexdigest()


def _refuse(value):
    raise TypeError(f"{type(value).__name__} is not a JSON value")


# The C encoder of _QUICK, made once; None where the interpreter has no C accelerator.
_C_ENCODE = (c_make_encoder(None, _refuse, encode_basestring, None, ":", ",", True, False, False)
             if c_make_encoder is not None else None)
_TEXT_FIELDS = ("action", "actor", "created_at", "object_id", "object_type", "prev_hash")
_text_fields = operator.itemgetter(*_TEXT_FIELDS)
_STRINGS = {str}


def _value(value) -> str:
    return "".join(_C_ENCODE(value, 0)) if _C_ENCODE is not None else QUICK.encode(value)


def quick_form(run_json: str, event: dict) -> str:
    """The payload in the quick form: `run_json` is the run ID as a JSON string. ValueError or TypeError
    when a value has no JSON form."""
    try:
        texts = _text_fields(event)
    except KeyError:
        texts = ()
    salt = event.get("salt")
    if (_C_ENCODE is None or type(event.get("seq")) is not int or set(map(type, texts)) != _STRINGS
            or (salt and type(salt) is not str)):
        return QUICK.encode(payload_of(json.loads(run_json), event))
    salted = f'"salt":{encode_basestring(salt)},' if salt else ""
    action, actor, created_at, object_id, object_type, prev_hash = map(encode_basestring, texts)
    after, before = event.get("after"), event.get("before")
    return (f'{{"action":{action},"actor":{actor},"after":{"null" if after is None else _value(after)},'
            f'"before":{"null" if before is None else _value(before)},"created_at":{created_at},'
            f'"object_id":{object_id},"object_type":{object_type},"prev_hash":{prev_hash},"run":{run_json},'
            f'{salted}"seq":{event["seq"]}}}')


def _quick_hash(run_json: str, event: dict) -> str | None:
    try:
        return hashlib.sha256((event["prev_hash"] + quick_form(run_json, event)).encode("utf-8")).hexdigest()
    except (ValueError, TypeError, UnicodeEncodeError):
        return None


def _where(event: dict) -> str:
    return f"({event.get('action')})" if isinstance(event.get("action"), str) else ""


def read_trail(data: bytes | None, failures: list[Failure]) -> Trail:
    trail = Trail()
    if data is None:
        return trail
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        failures.append(Failure(AUDIT, f"not UTF-8 JSON ({error})"))
        return trail
    if not isinstance(document, dict) or not isinstance(document.get("events"), list):
        failures.append(Failure(AUDIT, 'expected {"run", "head", "events": [...]}'))
        return trail
    trail.run_id = document.get("run") if isinstance(document.get("run"), str) else None
    if trail.run_id is None:
        failures.append(Failure(AUDIT, "names no run", field="run"))
    trail.head = document.get("head") if isinstance(document.get("head"), dict) else None
    trail.events = [e for e in document["events"] if isinstance(e, dict)]
    if len(trail.events) != len(document["events"]):
        failures.append(Failure(AUDIT, "an event is not a JSON object", field="events"))
    return trail


def check_chain(trail: Trail, failures: list[Failure]) -> None:
    """Each event's hash from its content and predecessor; the sequence 1, 2, 3, … with no gap.

    After a broken event the check goes on from the hash that event states, so one
    edit is reported at its own event and not again at every later one.
    """
    expected_seq, prev_hash, salted = 1, GENESIS, None
    run_json = encode_basestring(trail.run_id or "")
    by_seq = trail.by_seq
    for event in trail.events:
        seq, recorded = event.get("seq"), event.get("hash")
        # The common case in one test: the next number, linked to its predecessor, its hash recomputed.
        if (seq == expected_seq and type(seq) is int and event.get("prev_hash") == prev_hash
                and type(recorded) is str and (salted is None or event.get("salt"))
                and _quick_hash(run_json, event) == recorded):
            by_seq.setdefault(seq, event)
            expected_seq, prev_hash = seq + 1, recorded
            salted = salted or (seq if event.get("salt") else None)
            continue
        if not isinstance(seq, int) or isinstance(seq, bool):
            failures.append(Failure(AUDIT, f"event at position {expected_seq} has no integer seq", field="seq"))
            return
        trail.by_seq.setdefault(seq, event)
        if seq != expected_seq:
            what = (f"sequence gap: expected event #{expected_seq}, found #{seq} "
                    f"({seq - expected_seq} event{'s' if seq - expected_seq != 1 else ''} missing)"
                    if seq > expected_seq else f"sequence out of order: expected event #{expected_seq}, found #{seq}")
            failures.append(Failure(AUDIT, what, seq=seq, field="seq"))
        if event.get("prev_hash") != prev_hash:
            failures.append(Failure(AUDIT, f"{_where(event)} prev_hash {event.get('prev_hash')!r} is not the previous "
                                           f"event's hash {prev_hash}", seq=seq, field="prev_hash"))
        if not isinstance(event.get("prev_hash"), str) or not isinstance(event.get("hash"), str):
            failures.append(Failure(AUDIT, f"{_where(event)} hash or prev_hash missing", seq=seq, field="hash"))
            return
        if salted is not None and not event.get("salt"):
            failures.append(Failure(AUDIT, f"{_where(event)} unsalted event after the chain's first salted event "
                                           f"#{salted}: not written by the server", seq=seq, field="salt"))
        salted = salted or (seq if event.get("salt") else None)
        if _quick_hash(run_json, event) == event["hash"]:
            expected_seq, prev_hash = seq + 1, event["hash"]
            continue
        try:
            recomputed = event_hash(trail.run_id or "", event)
        except (CanonicalizationError, UnicodeEncodeError) as error:
            failures.append(Failure(AUDIT, f"{_where(event)} content cannot be canonicalised: {error}", seq=seq,
                                    field="content"))
        else:
            if recomputed != event["hash"]:
                failures.append(Failure(AUDIT, f"{_where(event)} content does not match its hash (recomputed "
                                               f"{recomputed}, recorded {event['hash']}): the event was edited",
                                        seq=seq, field="hash"))
        expected_seq, prev_hash = seq + 1, event["hash"]
    if trail.head is None:
        failures.append(Failure(AUDIT, "carries no chain head {seq, hash} of the run", field="head"))
        return
    last = trail.events[-1] if trail.events else {"seq": 0, "hash": GENESIS}
    if (trail.head.get("seq"), trail.head.get("hash")) != (last.get("seq"), last.get("hash")):
        failures.append(Failure(AUDIT, f"the run's chain head is event #{trail.head.get('seq')} "
                                       f"(hash {trail.head.get('hash')}), but the trail ends at event "
                                       f"#{last.get('seq')} (hash {last.get('hash')}): the trail was cut or extended",
                                field="head"))


def check_attested_head(trail: Trail, predicate: dict, *, result_sha256: str | None, manifest_sha256: str | None,
                        failures: list[Failure]) -> None:
    """The statement's chain head is an event of this trail, and it is the finalization of this result."""
    head = predicate.get("audit_head")
    if not isinstance(head, dict) or not isinstance(head.get("seq"), int):
        failures.append(Failure("attestation.dsse.json", "the statement records no audit chain head",
                                field="predicate.audit_head"))
        return
    seq, digest = head["seq"], head.get("hash")
    event = trail.by_seq.get(seq)
    if event is None:
        ends = trail.events[-1].get("seq") if trail.events else 0
        failures.append(Failure(AUDIT, f"the attested chain head, event #{seq} (hash {digest}), is not in the trail, "
                                       f"which ends at event #{ends}: the trail was cut", seq=seq, field="head"))
        return
    if event.get("hash") != digest:
        failures.append(Failure(AUDIT, f"event #{seq} hashes to {event.get('hash')}, the attestation's chain head "
                                       f"records {digest}: the trail up to finalization was rewritten",
                                seq=seq, field="hash"))
    if event.get("action") != "run.finalized":
        failures.append(Failure(AUDIT, f"the attested head event #{seq} is {event.get('action')!r}, not run.finalized",
                                seq=seq, field="action"))
    after = event.get("after") if isinstance(event.get("after"), dict) else {}
    if result_sha256 is not None and after.get("result_sha256") != result_sha256:
        failures.append(Failure(AUDIT, f"run.finalized records result_sha256 {after.get('result_sha256')}, "
                                       f"result.md hashes to {result_sha256}", seq=seq, field="after.result_sha256"))
    if manifest_sha256 is not None and after.get("manifest_sha256") != manifest_sha256:
        failures.append(Failure(AUDIT, f"run.finalized records manifest_sha256 {after.get('manifest_sha256')}, "
                                       f"ARTIFACT.yaml hashes to {manifest_sha256}", seq=seq,
                                field="after.manifest_sha256"))


def check_approvals(trail: Trail, predicate: dict, failures: list[Failure]) -> None:
    """Each approval the statement records is a run.approved event before the head, by the same actor and note."""
    approvals = predicate.get("approvals")
    head = predicate.get("audit_head", {}).get("seq") if isinstance(predicate.get("audit_head"), dict) else None
    if not isinstance(approvals, list) or not approvals:
        failures.append(Failure("attestation.dsse.json", "the statement records no approval", field="predicate.approvals"))
        return
    approved = [e for e in trail.events if e.get("action") == "run.approved"
                and isinstance(e.get("seq"), int) and (head is None or e["seq"] <= head)]
    for index, approval in enumerate(approvals):
        if not isinstance(approval, dict):
            failures.append(Failure("attestation.dsse.json", "not an object", field=f"predicate.approvals[{index}]"))
            continue
        event = next((e for e in reversed(approved) if isinstance(e.get("after"), dict)
                      and e["after"].get("approval") == approval.get("id")), None)
        if event is None:
            failures.append(Failure(AUDIT, f"no run.approved event for approval {approval.get('id')} "
                                           f"(by {approval.get('by')}) before the attested head",
                                    field="action"))
            continue
        if event.get("actor") != approval.get("by"):
            failures.append(Failure(AUDIT, f"run.approved actor is {event.get('actor')!r}; the signed statement "
                                           f"says {approval.get('by')!r} approved", seq=event["seq"], field="actor"))
        if event["after"].get("note") != approval.get("note"):
            failures.append(Failure(AUDIT, "run.approved note differs from the note the signed statement records",
                                    seq=event["seq"], field="after.note"))
        _check_approval_head(trail, approval, event, index, failures)


def _check_approval_head(trail: Trail, approval: dict, event: dict, index: int, failures: list[Failure]) -> None:
    """The chain head the statement says the approval signed off is the one its run.approved event records,
    and an event of this trail with that hash, just before it (null only where the event records none)."""
    signed, recorded = approval.get("audit_head"), event["after"].get("audit_head")
    where = f"predicate.approvals[{index}].audit_head"
    if signed is None and recorded is None:
        return  # an approval made before approvals recorded their head
    if not isinstance(signed, dict) or signed != recorded:
        failures.append(Failure(AUDIT, f"run.approved records the chain head {recorded}, the signed statement "
                                       f"says approval {approval.get('id')} signed off {signed}",
                                seq=event["seq"], field="after.audit_head"))
        return
    before = event["seq"] - 1
    before_hash = GENESIS if before == 0 else trail.by_seq.get(before, {}).get("hash")
    if (signed.get("seq"), signed.get("hash")) != (before, before_hash):
        failures.append(Failure("attestation.dsse.json", f"approval {approval.get('id')} signed off event "
                                f"#{signed.get('seq')} (hash {signed.get('hash')}), which is not the trail's event "
                                f"just before its run.approved #{event['seq']}", field=where))



def _has_event(trail: Trail, action: str, **expected) -> bool:
    """Some event of `action` whose `after` holds every expected value (`actor` is the event's own)."""
    for event in trail.events:
        after = event.get("after")
        if event.get("action") != action or not isinstance(after, dict):
            continue
        if all((event.get("actor") if name == "actor" else after.get(name)) == value
               for name, value in expected.items()):
            return True
    return False


def check_reviews(trail: Trail, predicate: dict, failures: list[Failure]) -> None:
    """Each review pass the statement records is a pass.submitted event by that reviewer, and each
    adjudication a conflict.settled event with that decision on that item, by that adjudicator."""
    for index, review in enumerate(predicate.get("review_passes") or []):
        review = review if isinstance(review, dict) else {}
        if not _has_event(trail, "pass.submitted", **{"pass": review.get("pass"), "reviewer": review.get("reviewer")}):
            failures.append(Failure(AUDIT, f"no pass.submitted event for review pass {review.get('pass')} by "
                                           f"{review.get('reviewer')}, which the signed statement records",
                                    field=f"predicate.review_passes[{index}]"))
    for index, settled in enumerate(predicate.get("adjudications") or []):
        settled = settled if isinstance(settled, dict) else {}
        if not _has_event(trail, "conflict.settled", item=settled.get("item"), decision=settled.get("decision"),
                          actor=settled.get("adjudicator")):
            failures.append(Failure(AUDIT, f"no conflict.settled event for the adjudication of {settled.get('item')} "
                                           f"({settled.get('decision')} by {settled.get('adjudicator')}), which the "
                                           "signed statement records", field=f"predicate.adjudications[{index}]"))

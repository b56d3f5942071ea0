"""aas_verify's own RFC 8785 writes exactly the bytes the app's chain hashes (reviews.audit, via `rfc8785`)."""
from __future__ import annotations

import math
import struct

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from aas_verify.jcs import CanonicalizationError, canonical
from reviews.audit import canonical_json, plain_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_it_agrees_with_the_apps_canonical_form_on_what_the_trail_stores(value):
    stored = plain_json(value)
    assert canonical(stored) == canonical_json(stored)


@pytest.mark.parametrize("bits", [0x0000000000000001, 0x3EB0C6F7A0B5ED8D, 0x44B52D02C7E14AF6, 0x7FEFFFFFFFFFFFFF,
                                  0x4340000000000000, 0x3FF0000000000001, 0xC3DFFFFFFFFFFFFF])
def test_it_writes_numbers_as_ecmascript_does(bits):
    value = struct.unpack(">d", bits.to_bytes(8, "big"))[0]
    assert canonical(value) == rfc8785.dumps(value)


def test_it_sorts_keys_by_utf16_code_units_not_code_points():
    value = {"\U0001f600": 1, "\ufb33": 2, "a": 3}
    assert canonical(value) == rfc8785.dumps(value) == '{"a":3,"\U0001f600":1,"\ufb33":2}'.encode()


@pytest.mark.parametrize("value", [math.nan, math.inf, 2**53, "\ud800", {1: "x"}, object()])
def test_it_refuses_what_rfc8785_cannot_carry(value):
    with pytest.raises(CanonicalizationError):
        canonical(value)


@pytest.mark.parametrize("after", [{"ratio": 1.0, "big": 1e16}, {"\U0001f600": 1, "\ufb33": 2}, {"n": 5, "s": "é\n"}])
def test_the_trail_check_recomputes_the_apps_hashes_whether_or_not_the_quick_form_applies(after):
    """Floats and keys beyond U+FFFF make the standard library's form differ: the exact one must then hold."""
    from aas_verify.report import Failure  # noqa: F401
    from aas_verify.trail import GENESIS, Trail, check_chain
    from reviews.audit import event_hash as app_event_hash

    events, prev = [], GENESIS
    for seq in (1, 2):
        event = {"seq": seq, "actor": "token:a", "action": "x", "object_type": "run", "object_id": "R",
                 "before": None, "after": plain_json(after), "created_at": "2026-10-02T10:00:00.000001+00:00",
                 "prev_hash": prev}
        event["hash"] = prev = app_event_hash(prev, event | {"run": "R"})
        events.append(event)
    failures = []
    check_chain(Trail(run_id="R", events=events, head={"seq": 2, "hash": prev}), failures)
    assert failures == []
    events[0]["after"] = {**events[0]["after"], "extra": 1}
    check_chain(Trail(run_id="R", events=events, head={"seq": 2, "hash": prev}), failures)
    assert [f.seq for f in failures] == [1] and failures[0].field == "hash"


trail_events = st.fixed_dictionaries({
    "seq": st.integers(1, 2**53 - 1) | st.booleans() | st.none(),
    "actor": st.text(), "action": st.text(), "object_type": st.text(),
    "object_id": st.text() | st.none() | st.integers(0, 9),
    "created_at": st.text(), "prev_hash": st.text(),
    "before": json_values, "after": json_values,
})


@settings(max_examples=400, deadline=None)
@given(trail_events, st.text())
def test_the_quick_form_laid_out_by_hand_is_the_standard_encoders_sorted_form(event, run_id):
    """The trail's fast path writes the payload's fixed keys in order itself: it must be byte for byte what
    the encoder with sorted keys writes, and RFC 8785's where that has no float and no key beyond U+FFFF."""
    from json.encoder import encode_basestring

    from aas_verify.trail import QUICK, payload_of, quick_form

    event = plain_json(event)
    try:
        expected = QUICK.encode(payload_of(run_id, event))
    except ValueError:
        return  # a value with no JSON form: both paths refuse it, and the exact one reports it
    assert quick_form(encode_basestring(run_id), event) == expected
    if not _has_float(event) and not any(ord(c) > 0xFFFF for c in expected):
        assert expected.encode("utf-8") == canonical(payload_of(run_id, event))


def _has_float(value) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False

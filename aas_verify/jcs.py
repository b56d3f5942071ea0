"""RFC 8785 (JSON Canonicalization Scheme), written for this verifier alone.

The app hashes its audit events with the `rfc8785` package; the verifier
must be an independent reader, so it carries its own canonical form, checked
against the app's by tests/aas_verify/test_jcs.py. What RFC 8785 asks:

- objects: members sorted by their names' UTF-16 code units, no whitespace;
- strings: UTF-8; only `"`, `\\` and the controls below U+0020 escaped, as
  `\\b \\t \\n \\f \\r` or `\\u00xx` (lower-case hex); everything else literal;
- numbers: ECMAScript's Number.prototype.toString of the IEEE 754 double;
  integers beyond ±(2^53 − 1) are refused (I-JSON), as are NaN and infinities.
"""
from __future__ import annotations

import math

SAFE_INT = 2**53 - 1
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


class CanonicalizationError(ValueError):
    """A value RFC 8785 cannot carry (a number out of range, a lone surrogate, a non-JSON type)."""


def _string(value: str) -> str:
    out = ['"']
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char < " ":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _number(value: float) -> str:
    """ECMAScript Number::toString (ECMA-262 §6.1.6.1.20) from Python's shortest round-trip digits."""
    if math.isnan(value) or math.isinf(value):
        raise CanonicalizationError(f"{value!r} is not a JSON number")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    every = whole + fraction
    digits = every.lstrip("0")
    # ECMAScript's n: the decimal point sits after `point` of `digits` (negative: zeros before them)
    point = len(whole) + int(exponent or 0) - (len(every) - len(digits))
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= point <= 21:
        text = digits + "0" * (point - k)
    elif 0 < point <= 21:
        text = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        text = "0." + "0" * (-point) + digits
    else:
        exp = point - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if exp >= 0 else "-") + str(abs(exp))
    return sign + text


def _encode(value, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        if not -SAFE_INT <= value <= SAFE_INT:
            raise CanonicalizationError(f"integer {value} is outside ±(2^53 − 1)")
        out.append(str(value))
    elif isinstance(value, float):
        out.append(_number(value))
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        for index, key in enumerate(sorted(value, key=_utf16_key)):
            if not isinstance(key, str):
                raise CanonicalizationError(f"object key {key!r} is not a string")
            if index:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    else:
        raise CanonicalizationError(f"{type(value).__name__} is not a JSON value")


def _utf16_key(key) -> bytes:
    if not isinstance(key, str):
        raise CanonicalizationError(f"object key {key!r} is not a string")
    return key.encode("utf-16-be", "surrogatepass")


def canonical(value) -> bytes:
    """The RFC 8785 bytes of a value decoded from JSON; CanonicalizationError when it has none."""
    out: list[str] = []
    _encode(value, out)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError as error:
        raise CanonicalizationError(f"a lone surrogate in a string ({error.reason})") from None

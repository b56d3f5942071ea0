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
# The standard library's string encoder (the C one where there is one), without ensure_ascii, escapes
# exactly what RFC 8785 does: `"`, `\\`, \b \t \n \f \r by name and every other control as \u00xx.
from json.encoder import encode_basestring

SAFE_INT = 2**53 - 1


class CanonicalizationError(ValueError):
    """A value RFC 8785 cannot carry (a number out of range, a lone surrogate, a non-JSON type)."""


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
    kind = type(value)
    if kind is str:
        out.append(encode_basestring(value))
    elif kind is dict:
        keys = list(value)
        for key in keys:
            if type(key) is not str:
                raise CanonicalizationError(f"object key {key!r} is not a string")
        # Code point order is UTF-16 code unit order unless a key holds a character beyond U+FFFF.
        keys.sort(key=None if all(key.isascii() for key in keys) else _utf16_key)
        out.append("{")
        for index, key in enumerate(keys):
            if index:
                out.append(",")
            out.append(encode_basestring(key))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    elif kind is int:
        if not -SAFE_INT <= value <= SAFE_INT:
            raise CanonicalizationError(f"integer {value} is outside ±(2^53 − 1)")
        out.append(str(value))
    elif value is None:
        out.append("null")
    elif kind is bool:
        out.append("true" if value else "false")
    elif kind is float:
        out.append(_number(value))
    elif kind is list or kind is tuple:
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise CanonicalizationError(f"{kind.__name__} is not a JSON value")


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def canonical(value) -> bytes:
    """The RFC 8785 bytes of a value decoded from JSON; CanonicalizationError when it has none."""
    out: list[str] = []
    _encode(value, out)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError as error:
        raise CanonicalizationError(f"a lone surrogate in a string ({error.reason})") from None

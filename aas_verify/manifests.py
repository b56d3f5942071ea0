"""The bundle's two manifests: ARTIFACT.yaml (member pins) and MANIFEST.json (every other file).

ARTIFACT.yaml is read in exactly the form the exporter writes, without a
YAML library: a `type:` line, then `members:` and, per member file (names
sorted), `  NAME:` and `    sha256: HEX`, a name that YAML would misread
being written as a JSON string. An export holds nothing else, so any other
line is a failure naming its line number, never a guess.
"""
from __future__ import annotations

import json
import re

_HEX = re.compile(r"^[0-9a-f]{64}$")
_PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$")


class ManifestError(ValueError):
    """A manifest that is not in the exporter's form; the message names the line or entry."""


def _name(text: str, line: int) -> str:
    if text.startswith('"'):
        try:
            value = json.loads(text)
        except ValueError:
            raise ManifestError(f"line {line}: malformed quoted name {text}") from None
        if not isinstance(value, str):
            raise ManifestError(f"line {line}: a name must be a string")
        return value
    if not _PLAIN.match(text):
        raise ManifestError(f"line {line}: name {text!r} is neither plain nor a JSON string")
    return text


def artifact_pins(data: bytes) -> tuple[str, dict[str, str]]:
    """`(type, {member file: sha256})` of an ARTIFACT.yaml."""
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as error:
        raise ManifestError(f"not UTF-8 ({error})") from None
    if lines[-1] != "":
        raise ManifestError("does not end with a newline")
    lines = lines[:-1]
    if len(lines) < 2 or not lines[0].startswith("type: "):
        raise ManifestError("line 1: expected `type: …`")
    doc_type = _name(lines[0][len("type: "):], 1)
    if lines[1] == "members: {}" and len(lines) == 2:
        return doc_type, {}
    if lines[1] != "members:":
        raise ManifestError("line 2: expected `members:`")
    pins: dict[str, str] = {}
    body = lines[2:]
    if not body or len(body) % 2:
        raise ManifestError(f"line {len(lines)}: expected pairs of `  NAME:` and `    sha256: HEX` lines")
    for index in range(0, len(body), 2):
        number = index + 3
        head, pin = body[index], body[index + 1]
        if not head.startswith("  ") or head.startswith("   ") or not head.endswith(":"):
            raise ManifestError(f"line {number}: expected `  NAME:`")
        name = _name(head[2:-1], number)
        if not pin.startswith("    sha256: ") or not _HEX.match(pin[len("    sha256: "):]):
            raise ManifestError(f"line {number + 1}: expected `    sha256:` and 64 lower-case hex digits")
        if name in pins:
            raise ManifestError(f"line {number}: {name} pinned twice")
        pins[name] = pin[len("    sha256: "):]
    return doc_type, pins


def export_listing(data: bytes) -> dict[str, str]:
    """`{file: sha256}` of a MANIFEST.json (`{"files": {name: sha256}}`)."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ManifestError(f"not UTF-8 JSON ({error})") from None
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, dict):
        raise ManifestError('expected {"files": {name: sha256}}')
    for name, digest in files.items():
        if not isinstance(digest, str) or not _HEX.match(digest):
            raise ManifestError(f"{name}: not 64 lower-case hex digits")
    return files

"""Hashes, the run manifest `ARTIFACT.yaml` and member file names (DESIGN §1, §6).

Pure: bytes in, plain data out; no ORM. `check_pins` checks the manifest
against a bundle's files (read from their archive by `records.archive_reading`);
`members_of` names each member's role from its file name; `build_manifest`
writes the run manifest whose SHA-256 is the run's manifest hash.

This is the one home of pin checking and the manifest text: records imports
run directories with it, and results builds its export bundles
(`results.bundles`) and recomputes the approved manifest on top of it.

Our own exports add `result.md`, `audit.json` and `MANIFEST.json`
(`{"files": {name: sha256}}` for every other file). When a bundle carries
`MANIFEST.json`, those extras are not members unless `ARTIFACT.yaml` pins
them, and they are checked against `MANIFEST.json` instead, so a tampered
export is refused on re-import too. Without it, every file other than
`ARTIFACT.yaml` is a member and must be pinned.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import BinaryIO

import yaml

from .archive_reading import CHUNK_SIZE, BundleError

SET_TYPE = "agentic-systems/types/agentic-system-analysis-set.md"
MANIFEST_NAME = "ARTIFACT.yaml"
EXPORT_MANIFEST_NAME = "MANIFEST.json"
RESULT_NAME = "result.md"
AUDIT_NAME = "audit.json"
RESULT_JSON_NAME = "result.json"
ENVELOPE_NAME = "attestation.dsse.json"
PUBLIC_KEY_NAME = "public-key.pem"
# The run's source snapshot in an export: its description, and the archive itself when small enough.
SOURCE_SNAPSHOT_NAME = "source/SNAPSHOT.json"
SOURCE_ARCHIVE_NAMES = ("source/snapshot.tar.gz", "source/snapshot.zip")
EXPORT_EXTRAS = (RESULT_NAME, RESULT_JSON_NAME, AUDIT_NAME, ENVELOPE_NAME, PUBLIC_KEY_NAME, EXPORT_MANIFEST_NAME,
                 SOURCE_SNAPSHOT_NAME, *SOURCE_ARCHIVE_NAMES)

ROLE_BY_FILENAME = {
    "overview.md": "overview",
    "runtime.md": "runtime",
    "memory.md": "memory",
    "workflow.md": "workflow",
    "epistemic.md": "epistemic",
    "reconciliation.md": "reconciliation",
    "boundary.md": "boundary",
    "memory-profile.md": "memory-profile",
    "synthesis.md": "synthesis",
    "result.md": "result",
    "report-verification.md": "report-verification",
    "profile-verification.md": "profile-verification",
    "synthesis-verification.md": "synthesis-verification",
    # How an exported run names an imported finished result, so that it cannot collide
    # with the export's own result.md (see member_filename).
    "imported-result.md": "result",
}
_VERIFICATION_RE = re.compile(r"^verification[A-Za-z0-9._-]*\.md$")
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
_PLAIN_YAML_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$")


# --- hashing and the manifest ---------------------------------------------


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_stream(fileobj: BinaryIO, *, chunk_size: int = CHUNK_SIZE) -> str:
    """SHA-256 (lower-case hex) of everything left in `fileobj`, read in chunks."""
    digest = hashlib.sha256()
    while chunk := fileobj.read(chunk_size):
        digest.update(chunk)
    return digest.hexdigest()


def pins_of(files: Mapping[str, bytes]) -> dict[str, str]:
    """`{name: sha256 hex}` of each file's exact bytes."""
    return {name: sha256_hex(data) for name, data in files.items()}


def _yaml_key(name: str) -> str:
    if _PLAIN_YAML_KEY.match(name) and yaml.safe_load(name) == name:
        return name
    return json.dumps(name, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def build_manifest(pins: Mapping[str, str], *, doc_type: str = SET_TYPE) -> str:
    """`ARTIFACT.yaml` text pinning each member file name to its SHA-256 hex, names sorted."""
    lines = [f"type: {_yaml_key(doc_type)}", "members:"]
    for name in sorted(pins):
        lines.append(f"  {_yaml_key(name)}:")
        lines.append(f"    sha256: {pins[name]}")
    if not pins:
        lines[-1] = "members: {}"
    return "\n".join(lines) + "\n"


def manifest_sha256(text: str) -> str:
    """The run's manifest hash: SHA-256 of the manifest's UTF-8 bytes."""
    return sha256_hex(text.encode("utf-8"))


def member_filename(role: str) -> str:
    """A member's file name in run manifests and exports: `<role>.md`.

    A `result` member (a finished result imported as the run's input, like seed 000) is
    `imported-result.md`: in an export, `result.md` is the run's own final result.
    """
    return "imported-result.md" if role == "result" else f"{role}.md"


def manifest_fields(manifest: Mapping) -> dict:
    """The manifest's fields other than its pins (`type`, `worker:`, …), as read."""
    return {str(key): value for key, value in manifest.items() if key != "members"} if isinstance(manifest, Mapping) else {}


def role_for_filename(name: str) -> str | None:
    if name in ROLE_BY_FILENAME:
        return ROLE_BY_FILENAME[name]
    if _VERIFICATION_RE.match(name):
        return "verification"
    return None


# --- pins -----------------------------------------------------------------


def read_manifest(files: Mapping[str, bytes]) -> dict:
    """The parsed ARTIFACT.yaml; BundleError naming it when missing or malformed."""
    if MANIFEST_NAME not in files:
        raise BundleError(f"{MANIFEST_NAME}: missing from the bundle")
    try:
        document = yaml.safe_load(files[MANIFEST_NAME].decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BundleError(f"{MANIFEST_NAME}: malformed, not readable as UTF-8 YAML ({reason})") from None
    if not isinstance(document, dict):
        raise BundleError(f"{MANIFEST_NAME}: malformed, expected a mapping with `type` and `members`")
    if not isinstance(document.get("members"), dict):
        raise BundleError(f"{MANIFEST_NAME}: malformed, `members` must be a mapping of file names to pins")
    return document


def _read_pins(files: Mapping[str, bytes]) -> tuple[dict[str, str], list[str], set[str]]:
    """Pins from ARTIFACT.yaml, every problem with the manifest itself, and every name it mentions."""
    try:
        document = read_manifest(files)
    except BundleError as error:
        return {}, list(error.problems), set()
    problems = []
    if document.get("type") is not None and not isinstance(document.get("type"), str):
        problems.append(f"{MANIFEST_NAME}: malformed, `type` must be a string")
    pins: dict[str, str] = {}
    named = {str(name) for name in document["members"]}
    for name, pin in document["members"].items():
        if not isinstance(name, str) or not name:
            problems.append(f"{MANIFEST_NAME}: malformed pin name {name!r}")
            continue
        digest = pin.get("sha256") if isinstance(pin, dict) else None
        if not isinstance(digest, str) or not _SHA256_HEX.match(digest):
            problems.append(f"{name}: malformed pin in {MANIFEST_NAME}, expected `sha256:` with 64 lower-case hex digits")
            continue
        pins[name] = digest
    return pins, problems, named


def _export_manifest_problems(files: Mapping[str, bytes]) -> list[str]:
    """Every file of an export checked against its MANIFEST.json."""
    try:
        document = json.loads(files[EXPORT_MANIFEST_NAME].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return [f"{EXPORT_MANIFEST_NAME}: malformed, not UTF-8 JSON"]
    listed = document.get("files") if isinstance(document, dict) else None
    if not isinstance(listed, dict):
        return [f"{EXPORT_MANIFEST_NAME}: malformed, expected {{\"files\": {{name: sha256}}}}"]
    hashes: dict[str, str] = {}
    problems = []
    for name, digest in listed.items():
        if not isinstance(digest, str) or not _SHA256_HEX.match(digest):
            problems.append(f"{name}: malformed entry in {EXPORT_MANIFEST_NAME}")
        else:
            hashes[name] = digest
    if problems and not hashes:
        return problems
    for name in sorted(files):
        if name == EXPORT_MANIFEST_NAME:
            continue
        actual = sha256_hex(files[name])
        if name not in hashes:
            problems.append(f"{name}: not listed in {EXPORT_MANIFEST_NAME}")
        elif actual != hashes[name]:
            problems.append(f"{name}: SHA-256 mismatch, {EXPORT_MANIFEST_NAME} lists {hashes[name]}, "
                            f"the file's bytes hash to {actual}")
    for name in sorted(hashes):
        if name not in files:
            problems.append(f"{name}: listed in {EXPORT_MANIFEST_NAME} but missing from the bundle")
    return problems


def pin_problems(files: Mapping[str, bytes]) -> tuple[dict[str, str], list[str]]:
    """The pins of a bundle and every problem with them, each naming its file (see the module docstring)."""
    pins, problems, named = _read_pins(files)
    is_export = EXPORT_MANIFEST_NAME in files
    if problems and not named:
        # Without a readable manifest, "not pinned" would be said of every file.
        return pins, problems + (_export_manifest_problems(files) if is_export else [])
    for name in sorted(pins):
        if name not in files:
            problems.append(f"{name}: pinned in {MANIFEST_NAME} but missing from the bundle")
            continue
        actual = sha256_hex(files[name])
        if actual != pins[name]:
            problems.append(f"{name}: SHA-256 mismatch, {MANIFEST_NAME} pins {pins[name]}, "
                            f"the file's bytes hash to {actual}")
    for name in sorted(files):
        if name == MANIFEST_NAME or name in named or (is_export and name in EXPORT_EXTRAS):
            continue
        problems.append(f"{name}: member file not pinned in {MANIFEST_NAME}")
    if is_export:
        problems += _export_manifest_problems(files)
    return pins, problems


def check_pins(files: Mapping[str, bytes]) -> dict[str, str]:
    """`{member file: sha256}` when every pin holds; else BundleError listing each problem by file.

    Refused: ARTIFACT.yaml missing or malformed, a malformed pin, a pinned file
    missing, a SHA-256 mismatch, a member file that is not pinned, and in an
    export a MANIFEST.json that does not match the bytes.
    """
    pins, problems = pin_problems(files)
    if problems:
        raise BundleError("; ".join(problems), problems=problems)
    return pins


def members_of(pins: Mapping[str, str]) -> dict[str, str]:
    """`{member file: role}`; BundleError naming a file whose name gives no role, or two files one role."""
    roles: dict[str, str] = {}
    problems = []
    taken: dict[str, str] = {}
    for name in sorted(pins):
        role = role_for_filename(name)
        if role is None:
            known = ", ".join([*ROLE_BY_FILENAME, "verification*.md"])
            problems.append(f"{name}: not a member file name this application knows ({known})")
        elif role in taken:
            problems.append(f"{name}: a second file for role {role} (after {taken[role]}); a run has one member per role")
        else:
            taken[role] = name
            roles[name] = role
    if problems:
        raise BundleError("; ".join(problems), problems=problems)
    return roles

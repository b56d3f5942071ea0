"""Every check of DESIGN §7 "Verified offline", on a bundle's files (layout in the package docstring)."""
from __future__ import annotations

import base64
import hashlib
import json
import re

from . import dsse, trail, trail_signatures
from .archive import ArchiveError, read_bundle
from .manifests import ManifestError, artifact_pins, export_listing
from .report import Failure, Report

ARTIFACT, MANIFEST, RESULT_MD, RESULT_JSON = "ARTIFACT.yaml", "MANIFEST.json", "result.md", "result.json"
ENVELOPE, PUBLIC_KEY, AUDIT = "attestation.dsse.json", "public-key.pem", trail.AUDIT
SNAPSHOT, SNAPSHOT_ARCHIVES = "source/SNAPSHOT.json", ("source/snapshot.tar.gz", "source/snapshot.zip")
REQUIRED = (ARTIFACT, MANIFEST, RESULT_MD, RESULT_JSON, AUDIT, ENVELOPE, PUBLIC_KEY)
EXTRAS = frozenset({MANIFEST, RESULT_MD, RESULT_JSON, AUDIT, ENVELOPE, PUBLIC_KEY, SNAPSHOT, *SNAPSHOT_ARCHIVES})
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "urn:aas-review:predicate:final-result:v1"
DEFAULT_MAX_BYTES = 200 * 1024 * 1024

_IDENTITY_LINE = re.compile(r"^- `(?P<name>[^`]+)`: (?P<role>\S+) report, version (?P<version>\d+), "
                            r"SHA-256 `(?P<sha>[0-9a-f]{64})`$")
_RECONCILED_LINE = re.compile(r"^- (?P<name>.+) SHA-256: (?P<sha>[0-9a-f]{64}) \(verified\)$")
_MANIFEST_LINE = re.compile(r"^Run manifest SHA-256: (?P<sha>[0-9a-f]{64}) \(verified\)$", re.M)


def member_file(role: str) -> str:
    """A member's file name in an export: `<role>.md`; an imported finished result is `imported-result.md`."""
    return "imported-result.md" if role == "result" else f"{role}.md"


class _Hashes(dict):
    """SHA-256 of each file, computed once."""

    def __init__(self, files: dict[str, bytes]) -> None:
        super().__init__()
        self.files = files

    def __missing__(self, name: str) -> str:
        digest = self[name] = hashlib.sha256(self.files[name]).hexdigest()
        return digest


def _check_listing(files, hashes, failures) -> None:
    try:
        listed = export_listing(files[MANIFEST])
    except ManifestError as error:
        failures.append(Failure(MANIFEST, f"malformed: {error}"))
        return
    for name in sorted(files):
        if name == MANIFEST:
            continue
        if name not in listed:
            failures.append(Failure(name, f"not listed in {MANIFEST}"))
        elif listed[name] != hashes[name]:
            failures.append(Failure(name, f"SHA-256 mismatch, {MANIFEST} lists {listed[name]}, "
                                          f"the file's bytes hash to {hashes[name]}"))
    for name in sorted(set(listed) - set(files)):
        failures.append(Failure(name, f"listed in {MANIFEST} but missing from the bundle"))


def _check_pins(files, hashes, failures) -> dict[str, str]:
    try:
        _type, pins = artifact_pins(files[ARTIFACT])
    except ManifestError as error:
        failures.append(Failure(ARTIFACT, f"malformed: {error}"))
        return {}
    for name, pin in sorted(pins.items()):
        if name not in files:
            failures.append(Failure(name, f"pinned in {ARTIFACT} but missing from the bundle"))
        elif pin != hashes[name]:
            failures.append(Failure(name, f"SHA-256 mismatch, {ARTIFACT} pins {pin}, the file's bytes hash to "
                                          f"{hashes[name]}"))
    for name in sorted(set(files) - set(pins) - EXTRAS - {ARTIFACT}):
        failures.append(Failure(name, f"member file not pinned in {ARTIFACT}"))
    return pins


def _check_snapshot(files, hashes, failures) -> None:
    if SNAPSHOT not in files:
        failures += [Failure(name, f"a source archive without {SNAPSHOT}") for name in SNAPSHOT_ARCHIVES
                     if name in files]
        return
    try:
        description = json.loads(files[SNAPSHOT])
        name, digest = description["archive"], description["archive_sha256"]
    except (ValueError, KeyError, TypeError):
        failures.append(Failure(SNAPSHOT, "malformed, expected archive and archive_sha256"))
        return
    if name is not None and name not in files:
        failures.append(Failure(name, f"named in {SNAPSHOT} but missing from the bundle"))
    elif name is not None and hashes[name] != digest:
        failures.append(Failure(name, f"SHA-256 mismatch, {SNAPSHOT} records {digest}, the archive hashes to "
                                      f"{hashes[name]}"))


def _read_statement(files, keys, report) -> dict:
    """The signed statement, after checking the envelope's signature (the statement is read either way)."""
    failures = report.failures
    try:
        envelope = dsse.parse_envelope(files[ENVELOPE])
    except dsse.EnvelopeError as error:
        failures.append(Failure(ENVELOPE, f"malformed: {error}"))
        return {}
    if keys is None:
        try:
            keys = dsse.load_keys(files[PUBLIC_KEY], f"the bundle's {PUBLIC_KEY}")
        except dsse.EnvelopeError as error:
            failures.append(Failure(PUBLIC_KEY, str(error)))
            keys = []
        report.notes.append(f"the signature was checked against the bundle's own {PUBLIC_KEY}: compare its key ID "
                            "with GET /api/keys/ or another copy obtained separately, or pass --key")
    key, why = dsse.verify(envelope, keys)
    if key is None:
        failures.append(Failure(ENVELOPE, f"signature: {why}", field="signatures"))
    else:
        report.keyid, report.key_origin = key.keyid, key.origin
    try:
        statement = json.loads(envelope.payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        failures.append(Failure(ENVELOPE, f"payload is not UTF-8 JSON ({error})", field="payload"))
        return {}
    if not isinstance(statement, dict):
        failures.append(Failure(ENVELOPE, "payload is not a JSON object", field="payload"))
        return {}
    if statement.get("_type") != STATEMENT_TYPE:
        failures.append(Failure(ENVELOPE, f"_type is {statement.get('_type')!r}, not {STATEMENT_TYPE}", field="_type"))
    if statement.get("predicateType") != PREDICATE_TYPE:
        failures.append(Failure(ENVELOPE, f"predicateType is {statement.get('predicateType')!r}, not {PREDICATE_TYPE}",
                                field="predicateType"))
    return statement


def _check_subjects(statement, files, hashes, pins, failures) -> None:
    subjects = statement.get("subject")
    if not isinstance(subjects, list):
        failures.append(Failure(ENVELOPE, "the statement has no subject list", field="subject"))
        return
    named: dict[str, str] = {}
    for index, subject in enumerate(subjects):
        digest = subject.get("digest", {}).get("sha256") if isinstance(subject, dict) and isinstance(
            subject.get("digest"), dict) else None
        if not isinstance(digest, str) or not isinstance(subject.get("name"), str):
            failures.append(Failure(ENVELOPE, "a subject without name and digest.sha256", field=f"subject[{index}]"))
            continue
        named[subject["name"]] = digest
    for name in [RESULT_MD, RESULT_JSON, *sorted(pins)]:
        if name not in named:
            failures.append(Failure(name, "not a subject of the signed statement", field="subject"))
        elif name in files and named[name] != hashes[name]:
            failures.append(Failure(name, f"SHA-256 {hashes[name]} differs from the signed statement's subject "
                                          f"digest {named[name]}", field="subject.digest.sha256"))
    for name in sorted(set(named) - {RESULT_MD, RESULT_JSON} - set(pins)):
        failures.append(Failure(name, "a subject of the signed statement, but not a file of the bundle",
                                field="subject"))


def _check_member_hashes(files, hashes, pins, run_id, failures) -> None:
    """The member hashes that result.md and result.json write, against the member files."""
    members = set(pins)
    try:
        data = json.loads(files[RESULT_JSON])
        listed = [(m["name"], m["role"], m["sha256"]) for m in data["members"]]
        front = data["front_matter"]
    except (ValueError, KeyError, TypeError):
        failures.append(Failure(RESULT_JSON, "malformed, expected front_matter and members [{name, role, sha256}]"))
        listed, front = [], {}
    if run_id is not None and isinstance(front, dict) and front.get("run-id") != run_id:
        failures.append(Failure(RESULT_JSON, f"run-id {front.get('run-id')!r} is not the attested run {run_id}",
                                field="front_matter.run-id"))
    _compare(RESULT_JSON, [(n, member_file(str(r)), s) for n, r, s in listed], files, hashes, members, failures)

    text = files[RESULT_MD].decode("utf-8", "replace")
    identity = _section(text, "## Run identity", first=True)
    lines = [m for m in (_IDENTITY_LINE.match(line) for line in identity) if m]
    files_by_name = {m["name"]: member_file(m["role"]) for m in lines}
    _compare(f"{RESULT_MD} (Run identity)", [(m["name"], member_file(m["role"]), m["sha"]) for m in lines],
             files, hashes, members, failures)
    reconciled = [m for m in (_RECONCILED_LINE.match(line) for line in _section(text, "## Reconciliation")) if m]
    _compare(f"{RESULT_MD} (Reconciliation)",
             [(m["name"], files_by_name.get(m["name"], m["name"]), m["sha"]) for m in reconciled],
             files, hashes, members, failures)
    stated = _MANIFEST_LINE.findall("\n".join(_section(text, "## Reconciliation")))
    if ARTIFACT in files and stated and stated[-1] != hashes[ARTIFACT]:
        failures.append(Failure(ARTIFACT, f"SHA-256 {hashes[ARTIFACT]} differs from the run manifest hash "
                                          f"{stated[-1]} that {RESULT_MD} states"))


def _section(text: str, heading: str, *, first: bool = False) -> list[str]:
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line == heading]
    if not starts:
        return []
    start = starts[0] if first else starts[-1]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1:end]


def _compare(where, listed, files, hashes, members, failures) -> None:
    seen = set()
    for shown, name, digest in listed:
        seen.add(name)
        if name not in files:
            failures.append(Failure(where.split(" ")[0], f"lists member {shown} ({name}), which the bundle lacks"))
        elif digest != hashes[name]:
            failures.append(Failure(name, f"SHA-256 {hashes[name]} differs from the hash {digest} that {where} "
                                          f"lists for {shown}"))
    if listed:
        for name in sorted(members - seen):
            failures.append(Failure(name, f"a pinned member that {where} does not list"))
    else:
        failures.append(Failure(where.split(" ")[0], f"{where} lists no member hash"))


def verify_files(files: dict[str, bytes], keys: list[dsse.PublicKey] | None = None, *,
                 audit_keys: list[dsse.PublicKey] | None = None) -> Report:
    """Every check on the bundle's files; `keys` None means the bundle's own public-key.pem. With
    `audit_keys` (the server's audit public keys, from the caller), every audit event's signature too."""
    report = Report(files=len(files))
    failures = report.failures
    missing = [name for name in REQUIRED if name not in files]
    failures += [Failure(name, "missing from the bundle") for name in missing]
    hashes = _Hashes(files)
    if MANIFEST in files:
        _check_listing(files, hashes, failures)
    pins = _check_pins(files, hashes, failures) if ARTIFACT in files else {}
    _check_snapshot(files, hashes, failures)
    statement = _read_statement(files, keys, report) if ENVELOPE in files else {}
    predicate = statement.get("predicate") if isinstance(statement.get("predicate"), dict) else {}
    if statement and not predicate:
        failures.append(Failure(ENVELOPE, "the statement has no predicate", field="predicate"))
    if statement:
        _check_subjects(statement, files, hashes, pins, failures)
    for name in ("review_passes", "adjudications"):
        if predicate and not isinstance(predicate.get(name), list):
            failures.append(Failure(ENVELOPE, f"the statement's {name} is not a list", field=f"predicate.{name}"))
    run_id = predicate.get("run_id") if isinstance(predicate.get("run_id"), str) else None
    manifest_sha = hashes[ARTIFACT] if ARTIFACT in files else None
    if predicate and predicate.get("manifest_sha256") != manifest_sha:
        failures.append(Failure(ARTIFACT, f"SHA-256 {manifest_sha} differs from the manifest hash "
                                          f"{predicate.get('manifest_sha256')} the signed statement records",
                                field="predicate.manifest_sha256"))
    if RESULT_JSON in files and RESULT_MD in files:
        _check_member_hashes(files, hashes, pins, run_id, failures)
    audit = trail.read_trail(files.get(AUDIT), failures)
    report.events = len(audit.events)
    if AUDIT in files:
        if run_id is not None and audit.run_id is not None and audit.run_id != run_id:
            failures.append(Failure(AUDIT, f"the trail of run {audit.run_id}, not of the attested run {run_id}",
                                    field="run"))
        trail.check_chain(audit, failures)
        if audit_keys is not None:
            trail_signatures.check_signatures(audit, audit_keys, failures, report.notes)
        if predicate:
            trail.check_attested_head(audit, predicate, result_sha256=hashes[RESULT_MD] if RESULT_MD in files else None,
                                      manifest_sha256=manifest_sha, failures=failures)
            trail.check_approvals(audit, predicate, failures)
            trail.check_reviews(audit, predicate, failures)
    return report


def verify_bundle(data: bytes, keys: list[dsse.PublicKey] | None = None, *,
                  max_bytes: int = DEFAULT_MAX_BYTES, audit_keys: list[dsse.PublicKey] | None = None) -> Report:
    """Every check on an export bundle's bytes (zip or tar.gz)."""
    try:
        files = read_bundle(data, max_bytes=max_bytes)
    except ArchiveError as error:
        return Report(failures=[Failure("bundle", str(error).removeprefix("bundle: "))])
    return verify_files(files, keys, audit_keys=audit_keys)


def statement_of(envelope_json: bytes) -> dict:
    """The (unverified) statement inside an envelope, for tools and tests that want to read it."""
    return json.loads(base64.b64decode(json.loads(envelope_json)["payload"]))

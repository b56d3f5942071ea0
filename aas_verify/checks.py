"""Every check of DESIGN §7 "Verified offline", on a bundle's files (layout in the package docstring)."""
from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable

from . import dsse, keys, trail, trail_signatures
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


NOT_TRUSTED = "signature not checked against a trusted key"
RESULT_PURPOSE = "result"  # the statement's signing key's purpose (keys.PURPOSES)


def _check_signature(envelope: dsse.Envelope, files, trust: keys.Trust, report: Report) -> keys.PublicKey | None:
    """The trusted key a signature of the envelope verifies against, for the result; None with a failure if none.
    The bundle's own key is only named ("claims to be signed by …"), or compared with a pinned fingerprint."""
    failures, carried = report.failures, None
    try:
        carried = keys.load_public_key(files[PUBLIC_KEY], f"the bundle's {PUBLIC_KEY}") if PUBLIC_KEY in files else None
    except keys.KeyFileError as error:
        failures.append(Failure(PUBLIC_KEY, str(error)))
    claim = f"the bundle carries no usable {PUBLIC_KEY}"
    if carried is not None and dsse.verify(envelope, [carried])[0] is not None:
        report.claimed_fingerprint = carried.fingerprint
        claim = f"the bundle claims to be signed by {carried.fingerprint}"
    elif carried is not None:
        claim = f"the bundle's {PUBLIC_KEY} ({carried.fingerprint}) does not verify it either"
    named = ", ".join(keyid or "(none)" for keyid, _ in envelope.signatures)
    if not trust.given:
        report.untrusted = True
        failures.append(Failure(ENVELOPE, f"{NOT_TRUSTED}: give --key FILE or --key-fingerprint SHA256 obtained out "
                                          f"of band; a key carried in the bundle is never trusted on its own, and "
                                          f"{claim}", field="signatures"))
        if report.claimed_fingerprint is None and carried is not None:
            failures.append(Failure(ENVELOPE, f"signature: no signature verifies against the bundle's own "
                                              f"{PUBLIC_KEY} ({carried.fingerprint}); the envelope names key {named}",
                                    field="signatures"))
        return None
    candidates = trust.candidates(carried)
    fit = [k for k in candidates if k.purpose in (None, RESULT_PURPOSE)]  # a PEM states no purpose
    key, _why = dsse.verify(envelope, fit)
    other = None if key else dsse.verify(envelope, [k for k in candidates if k not in fit])[0]
    if other is not None:
        failures.append(Failure(ENVELOPE, f"signature: by key {other.fingerprint} ({other.origin}), but its purpose is "
                                          f"{other.purpose}, not {RESULT_PURPOSE}", field="signatures"))
        return None
    if key is None:
        failures.append(Failure(ENVELOPE, f"signature: not signed by a trusted key: no signature verifies against "
                                          f"{trust.describe(candidates)}; {claim} (the envelope names key ID "
                                          f"{named}, a hint)", field="signatures"))
        return None
    report.keyid, report.key_origin, report.fingerprint = key.keyid, key.origin, key.fingerprint
    return key


def _check_date(key: keys.PublicKey, audit: trail.Trail, predicate: dict, report: Report) -> None:
    """The statement's date (its attested `run.finalized` event's `created_at`, bound to the signature through
    that event's hash) lies in the signing key's validity window."""
    report.key_window = key.window()
    if key.valid_from is None:  # a PEM or a pinned fingerprint: the OK line says "no validity window known"
        return
    head = predicate.get("audit_head") if isinstance(predicate.get("audit_head"), dict) else {}
    event = audit.by_seq.get(head.get("seq")) if isinstance(head.get("seq"), int) else None
    try:
        dated = keys.parse_time((event or {}).get("created_at"), "created_at")
    except keys.KeyFileError:
        report.failures.append(Failure(ENVELOPE, f"the statement's date is unknown (its attested head is no event of "
                                                 f"the trail with a created_at), so key {key.fingerprint}'s validity "
                                                 f"window ({key.window()}) cannot be checked",
                                       field="predicate.audit_head"))
        return
    if not key.covers(dated):
        report.failures.append(Failure(ENVELOPE, f"the statement is dated {event['created_at']} (its run.finalized "
                                                 f"event #{head['seq']}), outside the validity window of key "
                                                 f"{key.fingerprint} ({key.origin}): {key.window()}",
                                       field="signatures"))


def _read_statement(files, trust, report) -> tuple[dict, keys.PublicKey | None]:
    """The signed statement and the trusted key its signature verified against (the statement is read either way)."""
    failures = report.failures
    try:
        envelope = dsse.parse_envelope(files[ENVELOPE])
    except dsse.EnvelopeError as error:
        failures.append(Failure(ENVELOPE, f"malformed: {error}"))
        return {}, None
    signer = _check_signature(envelope, files, trust, report)
    try:
        statement = json.loads(envelope.payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        failures.append(Failure(ENVELOPE, f"payload is not UTF-8 JSON ({error})", field="payload"))
        return {}, signer
    if not isinstance(statement, dict):
        failures.append(Failure(ENVELOPE, "payload is not a JSON object", field="payload"))
        return {}, signer
    if statement.get("_type") != STATEMENT_TYPE:
        failures.append(Failure(ENVELOPE, f"_type is {statement.get('_type')!r}, not {STATEMENT_TYPE}", field="_type"))
    if statement.get("predicateType") != PREDICATE_TYPE:
        failures.append(Failure(ENVELOPE, f"predicateType is {statement.get('predicateType')!r}, not {PREDICATE_TYPE}",
                                field="predicateType"))
    return statement, signer


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


def verify_files(files: dict[str, bytes], trusted: list[keys.PublicKey] | None = None, *,
                 fingerprints: Iterable[str] = (), audit_keys: list[keys.PublicKey] | None = None) -> Report:
    """Every check on the bundle's files; the signature against the `trusted` keys and pinned `fingerprints`
    (hex SHA-256 of raw public keys) the caller supplies: with neither, the report fails "not checked".
    With `audit_keys` (the server's audit public keys, from the caller), every audit event's signature too."""
    trust = keys.Trust(tuple(trusted or ()), frozenset(map(keys.pinned, fingerprints)))
    report = Report(files=len(files))
    failures = report.failures
    missing = [name for name in REQUIRED if name not in files]
    failures += [Failure(name, "missing from the bundle") for name in missing]
    hashes = _Hashes(files)
    if MANIFEST in files:
        _check_listing(files, hashes, failures)
    pins = _check_pins(files, hashes, failures) if ARTIFACT in files else {}
    _check_snapshot(files, hashes, failures)
    statement, signer = _read_statement(files, trust, report) if ENVELOPE in files else ({}, None)
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
    if signer is not None and predicate:
        _check_date(signer, audit, predicate, report)
    return report


def verify_bundle(data: bytes, trusted: list[keys.PublicKey] | None = None, *, fingerprints: Iterable[str] = (),
                  max_bytes: int = DEFAULT_MAX_BYTES, audit_keys: list[keys.PublicKey] | None = None) -> Report:
    """Every check on an export bundle's bytes (zip or tar.gz), as `verify_files`."""
    try:
        files = read_bundle(data, max_bytes=max_bytes)
    except ArchiveError as error:
        return Report(failures=[Failure("bundle", str(error).removeprefix("bundle: "))])
    return verify_files(files, trusted, fingerprints=fingerprints, audit_keys=audit_keys)


def statement_of(envelope_json: bytes) -> dict:
    """The (unverified) statement inside an envelope, for tools and tests that want to read it."""
    return json.loads(base64.b64decode(json.loads(envelope_json)["payload"]))

"""DESIGN §11 "offline verification": aas_verify on a bundle with a 2 MB member and 1,000 audit events,
against bare SHA-256 of the bundle's bytes plus a JSON parse of its trail (best of 20, timed alternately).

Pure: the bundle is built here with the app's own pure pieces (the manifest text, the export zip, the
statement and envelope of results.attestation, RFC 8785 chain hashes) and a throw-away key; no database.
`bench/benchmark.py verify` runs it, or `python bench/verify_bench.py` alone.
"""
from __future__ import annotations

import hashlib
import io
import json
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import rfc8785  # noqa: E402
from bench_common import alternately  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

EVENTS = 1_000
MEMBER_BYTES = 2 * 1024 * 1024
RUN_ID = "AAS-2026-10-02-bench-01"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_bundle() -> tuple[bytes, bytes]:
    """(zip bytes, server public key PEM) of a consistent, signed bundle."""
    from records.manifests import build_manifest, pins_of
    from results.bundles import write_export_zip
    from results.attestation import ApprovalEntry, AttestationInput, build_statement, envelope_bytes, sign_statement
    from results.signing import SigningKey, key_id, public_pem

    line = b"- MEM-OBJ-%d: a remembered fact, with its provenance and the code that writes it.\n"
    memory = b"# Memory report\n\n" + b"".join(line % n for n in range(MEMBER_BYTES // len(line % 1000)))
    members = {"memory.md": memory, "runtime.md": b"# Runtime report\n\nRT-OBJ-1: the loop.\n"}
    artifact = build_manifest(pins_of(members)).encode()
    identity = "\n".join(f"- `{name}`: {name[:-3]} report, version 1, SHA-256 `{sha(data)}`"
                         for name, data in sorted(members.items()))
    reconciled = "\n".join(f"- {name} SHA-256: {sha(data)} (verified)" for name, data in sorted(members.items()))
    result_md = (f"---\n{{}}\n---\n\n# Bench\n\n## Run identity\n\nMember reports:\n\n{identity}\n\n"
                 f"## Reconciliation\n\n{reconciled}\n\nRun manifest SHA-256: {sha(artifact)} (verified)\n").encode()
    result_json = rfc8785.dumps({"front_matter": {"run-id": RUN_ID}, "members": [
        {"name": n, "role": n[:-3], "version": 1, "sha256": sha(d)} for n, d in sorted(members.items())]})
    events, prev = [], "0" * 64
    for seq in range(1, EVENTS + 1):
        action = {EVENTS - 2: "run.approved", EVENTS: "run.finalized"}.get(seq, "member.uploaded")
        after = {"sha256": sha(str(seq).encode()), "note": "x" * 40, "n": seq}
        if action == "run.approved":
            signed_off = (seq - 1, prev)
            after = {"manifest_sha256": sha(artifact), "note": "Checked.", "approval": 1,
                     "audit_head": {"seq": seq - 1, "hash": prev}}
        if action == "run.finalized":
            after = {"result_sha256": sha(result_md), "manifest_sha256": sha(artifact)}
        event = {"seq": seq, "actor": "token:agent-1", "action": action, "object_type": "run", "object_id": RUN_ID,
                 "before": None, "after": after, "created_at": f"2026-10-02T10:00:{seq % 60:02d}.000001+00:00",
                 "prev_hash": prev}
        event["hash"] = prev = sha(prev.encode() + rfc8785.dumps(event | {"run": RUN_ID}))
        events.append(event)
    audit = (json.dumps({"run": RUN_ID, "head": {"seq": EVENTS, "hash": prev}, "events": events}, indent=2)
             + "\n").encode()
    private = Ed25519PrivateKey.generate()
    key = SigningKey(key_id(private.public_key()), private, public_pem(private.public_key()))
    statement = build_statement(AttestationInput(
        run_id=RUN_ID, manifest_sha256=sha(artifact), audit_head=(EVENTS, prev), result_md_sha256=sha(result_md),
        result_json_sha256=sha(result_json), members=pins_of(members),
        approvals=(ApprovalEntry(id=1, by="token:agent-1", at="2026-10-02T10:00:00+00:00", note="Checked.",
                                 audit_head=signed_off),)))
    files = dict(members) | {"ARTIFACT.yaml": artifact, "result.md": result_md, "result.json": result_json,
                             "audit.json": audit, "public-key.pem": key.public_key_pem.encode(),
                             "attestation.dsse.json": envelope_bytes(sign_statement(statement, key))}
    files["MANIFEST.json"] = json.dumps({"files": pins_of(files)}, indent=2, sort_keys=True).encode()
    return write_export_zip(files), key.public_key_pem.encode()  # as the app exports it


def best(fn, times: int = 5) -> float:
    timings = []
    for _ in range(times):
        start = time.perf_counter()
        fn()
        timings.append(time.perf_counter() - start)
    return min(timings)


def bench_verify(report=lambda name, value, unit="", note="": print(f"{name}: {value} {unit} {note}")) -> float:
    from aas_verify import load_keys, verify_bundle
    from aas_verify.archive import read_bundle

    bundle, pem = build_bundle()
    keys = load_keys(pem, "bench key")
    outcome = verify_bundle(bundle, keys)
    assert outcome.ok, [f.line() for f in outcome.failures]
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        trail = archive.read("audit.json")
    # Best of 20 each, timed alternately (best of 5 of each, timed apart, moved the ratio 2.0x-3.4x here).
    verifier, baseline = map(min, alternately(lambda: verify_bundle(bundle, keys),
                                              lambda: (hashlib.sha256(bundle).hexdigest(), json.loads(trail)), 20))
    # What any check costs before it starts: reading the zip's files (with their CRC-32s) and hashing each.
    floor = best(lambda: [hashlib.sha256(data).hexdigest() for data in read_bundle(bundle, max_bytes=1 << 30).values()])
    report("verify: bundle", f"{len(bundle) / 1e6:.2f}", "MB", f"(2 MB member, {EVENTS} audit events)")
    report("verify: aas_verify", f"{verifier * 1000:.1f}", "ms")
    report("verify: bare SHA-256 + JSON parse of the trail", f"{baseline * 1000:.1f}", "ms")
    report("verify: read + SHA-256 of the bundle's files alone", f"{floor * 1000:.1f}", "ms",
           f"({floor / baseline:.2f}x the baseline)")
    report("verify: ratio", f"{verifier / baseline:.2f}", "x", "(target <= 3x, DESIGN §11)")
    return verifier / baseline


if __name__ == "__main__":
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()
    bench_verify()

"""aas_verify: check an exported run bundle offline (DESIGN §7 "Verified offline, everything").

Imports the standard library and `cryptography`, nothing of Django or the
application, and needs no settings, database or SECRET_KEY.

The bundle layout verified (a zip or tar.gz; one top-level folder is stripped):

    ARTIFACT.yaml          member pins, exactly as the exporter writes them:
                             type: <set type>
                             members:
                               <member file>:
                                 sha256: <64 hex>
                           (names sorted; a name YAML would misread as a JSON string)
    <member files>         every current member version, exact bytes, named
                           `<role>.md` (`imported-result.md` for a `result` member)
    result.md              the final result's exact bytes
    result.json            the result as data: at least `front_matter` (with `run-id`)
                           and `members` [{name, role, version, sha256}]; its exact
                           bytes are a subject of the statement (the exporter writes
                           the RFC 8785 form of the stored data)
    audit.json             {"run": RUN_ID, "head": {"seq": N, "hash": H},
                            "events": [{seq, actor, action, object_type, object_id,
                                        before, after, created_at, prev_hash, hash,
                                        salt, signature}, ...]}
                           every event of the run, oldest first, `created_at` exactly
                           the string hashed (with `salt` when not empty); `signature`
                           the audit key's Ed25519 of `hash`; `head` the run row's
                           chain head at export
    attestation.dsse.json  the DSSE envelope {payloadType: "application/vnd.in-toto+json",
                           payload: base64(statement), signatures: [{keyid, sig}]}
    public-key.pem         the Ed25519 public key (SubjectPublicKeyInfo PEM) it was signed with
    MANIFEST.json          {"files": {name: sha256}} for every other file of the bundle
    source/SNAPSHOT.json   optional: {archive_sha256, archive, ...}, and the archive it names
    source/snapshot.tar.gz (or .zip)

The statement (in-toto Statement v1) is

    {"_type": "https://in-toto.io/Statement/v1",
     "subject": [{"name": "result.md", "digest": {"sha256": …}}, {"name": "result.json", …},
                 one per member file, named as in ARTIFACT.yaml],
     "predicateType": "urn:aas-review:predicate:final-result:v1",
     "predicate": {"run_id", "manifest_sha256", "audit_head": {"seq", "hash"},
                   "approvals": [{"id", "by", "at", "note", "audit_head": {"seq", "hash"} | null}],
                   "review_passes": [...], "adjudications": [...], "validation": {"errors", "warnings"},
                   "quotations": {"verified", "total", "snapshot_sha256"}, "revises": RUN_ID | null}}

where `audit_head` is the `run.finalized` event itself (finalization signs in the
transaction that writes it), each approval's `id` is the `approval` that its
`run.approved` event records, and its `audit_head` the chain head that event records
(`after.audit_head`: the trail's event just before it; null only for an approval made
before approvals recorded one). `review_passes` and `adjudications` are lists.

Checks, each failure naming the file and, where it applies, the event and the field:
every ARTIFACT.yaml pin and MANIFEST.json hash against the bytes; every member file
pinned; the member hashes written in result.md (Run identity, Reconciliation, the run
manifest hash) and result.json against the member files; every audit event's hash
recomputed from its content and predecessor, the sequence unbroken from 1, the salted
form after the first salted event, the trail's end equal to its recorded head, and,
given the server's audit keys (`audit_keys=`), every event's signature after the
first signed one; the attested head present in the trail with
its hash, a `run.finalized` whose result and manifest hashes are result.md's and
ARTIFACT.yaml's; each attested approval matching its `run.approved` event (actor,
note, the chain head it signed off, which must be the trail's event before it); every subject
digest against the bytes; and the envelope's Ed25519 signature against a key the caller trusts
(`keys.py`): `--key` (a PEM or the keys document of `GET /api/keys/`, retired keys included, each
key accepted only for its purpose and for a statement dated within its window) or
`--key-fingerprint` (SHA-256 of the raw public key). Without one the report fails "signature not
checked against a trusted key" (exit 2): the bundle's own key is only named, never trusted.
"""
from .checks import PREDICATE_TYPE, STATEMENT_TYPE, verify_bundle, verify_files
from .dsse import pae
from .keys import PURPOSES, KeyFileError, PublicKey, fingerprint, key_id, load_keys
from .report import Failure, Report

__all__ = ["PREDICATE_TYPE", "PURPOSES", "STATEMENT_TYPE", "Failure", "KeyFileError", "PublicKey", "Report",
           "fingerprint", "key_id", "load_keys", "pae", "verify_bundle", "verify_files"]

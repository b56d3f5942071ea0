"""The run exported in the set layout: pins, current members, result, audit trail (DESIGN §4)."""
from __future__ import annotations

import json

from django.core.serializers.json import DjangoJSONEncoder

from records.services import current_versions, member_files, quotations
from reviews.audit import chain_head
from reviews.models import AuditEvent, Run

from .. import bundles
from ..models import Attestation, Result

def audit_json(run: Run) -> bytes:
    """The run's audit events, oldest first, each with its content and chain hash, and the run row's chain
    head (`head`), read first: under READ COMMITTED an event committed between the two reads lies beyond
    the head, which the verifier reports as a trail extended, never as one cut."""
    seq, digest = chain_head(run)
    events = [
        {
            "seq": e.seq, "actor": e.actor, "action": e.action, "object_type": e.object_type,
            "object_id": e.object_id, "before": e.before, "after": e.after,
            "created_at": e.created_at.isoformat(timespec="microseconds"),
            "prev_hash": e.prev_hash, "hash": e.hash, "salt": e.salt, "signature": e.signature,
        }
        for e in AuditEvent.objects.filter(run=run).order_by("seq")
    ]
    return (json.dumps({"run": run.run_id, "head": {"seq": seq, "hash": digest}, "events": events}, indent=2, ensure_ascii=False,
                       cls=DjangoJSONEncoder) + "\n").encode("utf-8")


def export_bundle(*, run: Run) -> bytes:
    """The run as a zip in the set layout: pins, current members, result.md and result.json, audit.json,
    the signed statement and its public key (once final), MANIFEST.json."""
    versions = current_versions(run, content=True)
    result = Result.objects.filter(run=run).first()
    attestation = Attestation.objects.filter(result=result).first() if result is not None else None
    signed = {}
    if attestation is not None:  # exactly the bytes signed, and the public half of the key that signed them
        signed = {"result_json": attestation.result_json.encode("utf-8"),
                  "envelope": attestation.envelope.encode("utf-8"),
                  "public_key_pem": attestation.public_key_pem.encode("ascii")}
    entries = bundles.export_entries(
        member_files(versions), audit_json=audit_json(run),
        result_md=result.markdown.encode("utf-8") if result is not None else None,
        source=quotations.export_source(run, bundles.source_entries), **signed,
    )
    return bundles.write_export_zip(entries)

"""The run exported in the set layout: pins, current members, result, audit trail (DESIGN §4)."""
from __future__ import annotations

import json

from django.core.serializers.json import DjangoJSONEncoder

from records.services import current_versions, member_files, quotations
from reviews.models import AuditEvent, Run

from .. import bundles
from ..models import Result

def audit_json(run: Run) -> bytes:
    """The run's audit events, oldest first, with their chain hashes."""
    events = [
        {
            "seq": e.seq, "actor": e.actor, "action": e.action, "object_type": e.object_type,
            "object_id": e.object_id, "before": e.before, "after": e.after,
            "created_at": e.created_at.isoformat(timespec="microseconds"),
            "prev_hash": e.prev_hash, "hash": e.hash,
        }
        for e in AuditEvent.objects.filter(run=run).order_by("seq")
    ]
    return (json.dumps({"run": run.run_id, "events": events}, indent=2, ensure_ascii=False,
                       cls=DjangoJSONEncoder) + "\n").encode("utf-8")


def export_bundle(*, run: Run) -> bytes:
    """The run as a zip in the set layout: pins, current members, result, audit, MANIFEST.json."""
    versions = current_versions(run, content=True)
    result = Result.objects.filter(run=run).first()
    entries = bundles.export_entries(
        member_files(versions), audit_json=audit_json(run),
        result_md=result.markdown.encode("utf-8") if result is not None else None,
        source=quotations.export_source(run, bundles.source_entries),
    )
    return bundles.write_export_zip(entries)

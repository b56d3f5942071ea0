"""Revising a final run (DESIGN §3): the next run, same boundary, current member versions, decisions kept.

A final run is closed for good; to change a finished analysis a reviewer revises it. The new run
gets the next run ID (`…-03` after `…-02`), the same identity and boundary, every current member
version's exact bytes, and the decisions carried over as a re-upload carries them (the bytes are
identical, so every decision keeps its state, rationale, decider and the hashes it was made on).
Both runs are linked (`Run.revises`, `Run.revised_by`) and each gets an audit event; the final run and its result
are never touched.
"""
from __future__ import annotations

import re

from django.db import transaction
from django.db.models import F

from records import services as records_services
from records.models import IntegrationIssue, MemberVersion, Record
from records.services.snapshots import carry_snapshot
from reviews.actions import Action
from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run
from reviews.services import RUN_FIELDS, create_run

from ..models import AmendmentDecision, CanonicalRecord, IssueDecision, KindCounter, Mapping
from ..errors import StateConflict

_RUN_NUMBER = re.compile(r"^(?P<stem>.+)-(?P<number>\d+)$")


class NotRevisable(StateConflict):
    """Only a final run can be revised, and only once (its successor is the one to revise next)."""

    code = "not_revisable"


def next_run_id(run_id: str, taken=lambda run_id: Run.objects.filter(run_id=run_id).exists()) -> str:
    """The run ID after `run_id`: its trailing number plus one, as wide as before (`…-02` → `…-03`),
    skipping IDs already taken."""
    match = _RUN_NUMBER.match(run_id)
    stem, number, width = (match["stem"], int(match["number"]), len(match["number"])) if match else (run_id, 1, 2)
    while True:
        number += 1
        candidate = f"{stem}-{number:0{width}d}"
        if not taken(candidate):
            return candidate


def revise_run(*, run: Run, actor: Actor, user=None) -> Run:
    """Create the final run's successor with its members and decisions; returns the new run."""
    with transaction.atomic():
        locked = lock_run(run)
        if locked.status != Run.Status.FINAL:
            raise NotRevisable(f"run {locked.run_id} is {locked.status}: only a final run is revised "
                               f"(reopen an approved run instead)")
        existing = Run.objects.filter(revises=locked).only("run_id").first()
        if existing is not None:
            raise NotRevisable(f"run {locked.run_id} was already revised by {existing.run_id}; revise that one")
        fields = {name: getattr(locked, name) for name in RUN_FIELDS if name != "run_id"}
        successor = create_run(actor=actor, user=user, run_id=next_run_id(locked.run_id), revises=locked, **fields)
        versions = list(MemberVersion.objects.filter(member__run=locked, member__current_version_id=F("id"))
                        .select_related("member").order_by("member__role"))
        new_versions = {}
        # Every member stored first, then parsed: a parse validates the run once no member waits for its
        # parse, so copying them one by one validated each half-copied set (112-240 errors, issue 22).
        for version in versions:
            created, _ = records_services.ingest_member_report(
                run=successor, role=version.member.role, filename=version.filename, content=bytes(version.content),
                actor=actor)
            new_versions[version.pk] = created
        for created in new_versions.values():
            # Parsed now, so the decisions can be carried onto the new records in this transaction; the
            # queued parse then finds nothing to claim.
            records_services.parse_member_version(version_pk=created.pk, actor=actor)
        carried = _carry_decisions(locked, successor, new_versions)
        snapshot = carry_snapshot(source_run=locked, target_run=successor)
        if snapshot is not None:
            carried["source_snapshot"] = snapshot.archive_sha256
        members = {v.member.role: v.sha256 for v in versions}
        record_event(run=successor, actor=actor, action=Action.RUN_REVISION_CREATED, object_type="run",
                     object_id=successor.run_id,
                     after={"revises": locked.run_id, "result_sha256": _result_sha256(locked), "members": members,
                            "carried": carried})
        record_event(run=locked, actor=actor, action=Action.RUN_REVISED, object_type="run", object_id=locked.run_id,
                     after={"successor": successor.run_id, "members": members, "carried": carried})
    return successor


def _result_sha256(run: Run) -> str:
    result = getattr(run, "result", None)
    return result.sha256 if result is not None else ""


def _carry_decisions(old: Run, new: Run, versions: dict[int, MemberVersion]) -> dict[str, int]:
    """Copy the shared set, mappings, issue and amendment decisions onto the new run's identical versions."""
    for counter in KindCounter.objects.filter(run=old):
        KindCounter.objects.create(run=new, kind=counter.kind, last_number=counter.last_number)
    canonical = [CanonicalRecord(run=new, canonical_id=c.canonical_id, kind=c.kind, number=c.number, label=c.label,
                                 text=c.text, origin=c.origin, source_record_id=c.source_record_id, state=c.state,
                                 rationale=c.rationale)
                 for c in CanonicalRecord.objects.filter(run=old).order_by("pk")]
    CanonicalRecord.objects.bulk_create(canonical)

    new_records = {(r.member_version_id, r.ordinal): r for r in
                   Record.objects.filter(member_version__in=list(versions.values()))}
    decided = ("state", "rationale", "decided_by", "decided_at", "decided_member_sha256", "decided_content_sha256")
    mappings = []
    for m in Mapping.objects.filter(run=old).select_related("source_record").order_by("pk"):
        record = m.source_record
        new_version = versions.get(record.member_version_id) if record is not None else None
        mappings.append(Mapping(
            run=new, source=m.source, relation=m.relation, target=m.target, origin=m.origin, score=m.score,
            reason=m.reason, proposed_by=m.proposed_by, origin_key=m.origin_key, created_at=m.created_at,
            source_record=new_records.get((new_version.pk, record.ordinal)) if new_version is not None else None,
            **{name: getattr(m, name) for name in decided}))
    Mapping.objects.bulk_create(mappings)

    new_issues = {(i.member_version_id, i.index): i for i in
                  IntegrationIssue.objects.filter(member_version__in=list(versions.values()))}
    issues = []
    for d in IssueDecision.objects.filter(run=old, issue__member_version_id__in=list(versions)).select_related("issue"):
        issue = new_issues.get((versions[d.issue.member_version_id].pk, d.issue.index))
        if issue is not None:
            issues.append(IssueDecision(run=new, issue=issue, **{name: getattr(d, name) for name in decided}))
    IssueDecision.objects.bulk_create(issues)

    by_key = {(m.origin, m.origin_key): m for m in Mapping.objects.filter(run=new).exclude(origin_key="")}
    amendments = []
    for a in AmendmentDecision.objects.filter(run=old, member_version_id__in=list(versions)).select_related("mapping"):
        linked = by_key.get((a.mapping.origin, a.mapping.origin_key)) if a.mapping is not None else None
        amendments.append(AmendmentDecision(
            run=new, member_version=versions[a.member_version_id], kind=a.kind, index=a.index, text=a.text,
            references=a.references, line=a.line, content_sha256=a.content_sha256, mapping=linked,
            **{name: getattr(a, name) for name in decided}))
    AmendmentDecision.objects.bulk_create(amendments)
    return {"canonical_records": len(canonical), "mappings": len(mappings), "issue_decisions": len(issues),
            "amendment_decisions": len(amendments)}

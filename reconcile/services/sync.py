"""Syncing the run's current member versions into canonical records, mappings and issue decisions."""
from __future__ import annotations

import re
from collections import defaultdict

from django.db import transaction
from django.db.models import Q

from records.models import IntegrationIssue, MemberReport, MemberVersion, Record, Role
from records import parsed as parse_cache
from reviews.actions import Action
from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run

from .. import suggestions
from ..models import CanonicalRecord, IssueDecision, Mapping
from .amendments import sync_amendments
from .corrections import raise_from_verification
from .summary import SyncSummary
from .canonical_ids import insert_all, raise_counter, resolver, canonical_id_for
from .mappings import mark_mapping_stale
from .snapshots import canonical_snapshot, issue_snapshot
from ..statements import relation_for, statement_key, superseded_pairs
from ..vocabulary import APP_PROPOSER, LOCKED_STATUSES, READY_STATUSES, SEEDING_ROLES, State




def _ready_versions(run: Run) -> dict[str, MemberVersion]:
    """Current version per role, for members whose records are stored (parsed or validated)."""
    members = (MemberReport.objects.filter(run=run, current_version__isnull=False)
               .select_related("current_version").defer("current_version__content"))
    return {m.role: m.current_version for m in members if m.current_version.status in READY_STATUSES}


def sync_run(*, run: Run, actor: Actor) -> SyncSummary:
    """Bring the run's canonical records, mappings and issue decisions up to date with its current
    member versions. Idempotent: a second call with nothing new changes nothing and audits nothing."""
    summary = SyncSummary()
    with transaction.atomic():
        # One writer per run at a time: sync and decisions take the run's row lock first.
        locked = lock_run(run)
        if locked.status in LOCKED_STATUSES:
            summary.skipped = f"run is {locked.status}"
            return summary
        versions = _ready_versions(locked)
        _seed_canonical(locked, versions, summary, actor)
        _carry_over_mappings(locked, versions, summary, actor)
        _carry_over_issues(locked, versions, summary, actor)
        _statement_mappings(locked, versions, summary)
        sync_amendments(locked, versions, summary, actor)
        for version in versions.values():  # a verification's Blockers become requests to the members they name
            summary.corrections_raised += len(raise_from_verification(run=locked, version=version, actor=actor))
        _suggest_mappings(locked, versions, summary)
        _create_issue_decisions(locked, versions, summary)
        if summary.changed:
            record_event(run=locked, actor=actor, action=Action.RECONCILE_SYNCED, object_type="run",
                         object_id=locked.run_id, after=summary.as_dict()
                         | {"members": {role: v.sha256 for role, v in sorted(versions.items())}})
    return summary


def _withdrawn_reason(origin: str, version: MemberVersion) -> str:
    return f"removed from {origin} v{version.version}"


# The rationale sync writes when a seeding member's new version no longer declares a record; only a
# record withdrawn this way comes back by itself (a reviewer's rejection stays).
WITHDRAWN_RE = re.compile(r"^removed from (?:runtime|result) v\d+$")


def _seed_canonical(run: Run, versions: dict[str, MemberVersion], summary: SyncSummary, actor: Actor) -> None:
    """The runtime's and an imported result's declarations seed the shared set. A record their
    current version no longer declares is withdrawn (rejected, "removed from runtime vN"); declared
    again later, it is reactivated under the same ID. Numbers are never given to another record."""
    seeds: list[tuple[str, Record]] = []
    seeding: dict[str, MemberVersion] = {}
    for role, origin in ((Role.RESULT, CanonicalRecord.Origin.RESULT), (Role.RUNTIME, CanonicalRecord.Origin.RUNTIME)):
        version = versions.get(role)
        if version is not None:
            seeding[origin] = version
            records = Record.objects.filter(member_version=version, record_type=Record.Type.DECLARATION)
            seeds += [(origin, record) for record in records.order_by("ordinal")]
    if not seeding:
        return
    existing = {c.canonical_id: c for c in CanonicalRecord.objects.filter(run=run)}
    top: dict[str, int] = {}
    fresh: list[tuple[CanonicalRecord, Record]] = []  # inserted together below, in one statement
    for origin, record in seeds:
        canonical_id, number = canonical_id_for(record.record_id)
        if number is not None:
            top[record.kind] = max(top.get(record.kind, 0), number)
        current = existing.get(canonical_id)
        if current is None:
            created = CanonicalRecord(run=run, canonical_id=canonical_id, kind=record.kind, number=number,
                                      label=record.label, text=record.text, origin=origin,
                                      source_record_id=record.record_id)
            existing[canonical_id] = created
            fresh.append((created, record))
        elif current.origin == origin and current.source_record_id == record.record_id:
            if current.state == CanonicalRecord.State.REJECTED and WITHDRAWN_RE.match(current.rationale):
                before = canonical_snapshot(current)
                current.state, current.rationale = CanonicalRecord.State.ACTIVE, ""
                current.label, current.text, current.version = record.label, record.text, current.version + 1
                current.save(update_fields=["state", "rationale", "label", "text", "version"])
                summary.canonical_reactivated += 1
                record_event(run=run, actor=actor, action=Action.CANONICAL_REACTIVATED, object_type="canonical_record",
                             object_id=canonical_id, before=before, after=canonical_snapshot(current)
                             | {"member_sha256": seeding[origin].sha256, "member_version": seeding[origin].version})
            elif (current.label, current.text) != (record.label, record.text):
                current.label, current.text, current.version = record.label, record.text, current.version + 1
                current.save(update_fields=["label", "text", "version"])
                summary.canonical_updated += 1
        elif current.source_record_id != record.record_id and f"{canonical_id} from {record.record_id}" not in summary.conflicts:
            summary.conflicts.append(f"{canonical_id} from {record.record_id}: already held by {current.source_record_id or current.origin}")
    for (created, record), inserted in zip(fresh, insert_all([created for created, _record in fresh])):
        if inserted:
            summary.canonical_created += 1
        else:
            del existing[created.canonical_id]
            summary.conflicts.append(f"{created.canonical_id} from {record.record_id}: number already allocated")
    for kind, number in sorted(top.items()):
        raise_counter(run, kind, number)
    declared = {(origin, record.record_id) for origin, record in seeds}
    for current in existing.values():
        version = seeding.get(current.origin)
        if (version is None or current.state != CanonicalRecord.State.ACTIVE
                or (current.origin, current.source_record_id) in declared):
            continue
        _withdraw(run, current, _withdrawn_reason(current.origin, version), version, summary, actor)


def _withdraw(run: Run, record: CanonicalRecord, reason: str, version: MemberVersion, summary: SyncSummary,
              actor: Actor) -> None:
    """Take a seeded record its member no longer declares out of the shared set; decisions that
    joined member records to it become stale (their target is gone)."""
    before = canonical_snapshot(record)
    record.state, record.rationale, record.version = CanonicalRecord.State.REJECTED, reason, record.version + 1
    record.save(update_fields=["state", "rationale", "version"])
    summary.canonical_withdrawn += 1
    record_event(run=run, actor=actor, action=Action.CANONICAL_WITHDRAWN, object_type="canonical_record",
                 object_id=record.canonical_id, before=before,
                 after=canonical_snapshot(record) | {"member_sha256": version.sha256, "member_version": version.version})
    for mapping in Mapping.objects.filter(run=run, target=record.canonical_id, state=State.ACCEPTED).order_by("pk"):
        mark_mapping_stale(run, mapping, actor, summary, f"target {record.canonical_id} {reason}")


def _declarations_of(versions: dict[str, MemberVersion]) -> dict[tuple[int, str], Record]:
    records = Record.objects.filter(member_version_id__in=[v.pk for v in versions.values()],
                                    record_type=Record.Type.DECLARATION).select_related("member_version")
    return {(r.member_version.member_id, r.record_id): r for r in records}


def _carry_over_mappings(run: Run, versions: dict[str, MemberVersion], summary: SyncSummary, actor: Actor) -> None:
    """Mappings whose source record belongs to a replaced version follow the record to the new one:
    unchanged content keeps the decision, changed or removed content makes a decision stale."""
    current_ids = [v.pk for v in versions.values()]
    member_ids = [v.member_id for v in versions.values()]
    moved = list(Mapping.objects.filter(run=run, source_record__member_version__member_id__in=member_ids)
                 .exclude(source_record__member_version_id__in=current_ids)
                 .select_related("source_record__member_version").order_by("pk"))
    if not moved:
        return
    new_records = _declarations_of(versions)
    for mapping in moved:
        old = mapping.source_record
        new = new_records.get((old.member_version.member_id, mapping.source))
        decided = mapping.state in (State.ACCEPTED, State.REJECTED)
        basis = mapping.decided_content_sha256 if decided and mapping.decided_content_sha256 else old.content_sha256
        if new is not None and new.content_sha256 == basis and mapping.state != State.STALE:
            mapping.source_record = new
            mapping.version += 1
            mapping.save(update_fields=["source_record", "version"])
            summary.carried_over += 1
            continue
        if new is None and mapping.state == State.STALE:
            continue  # already stale on a removed record: nothing new to say
        before_state = mapping.state
        if new is not None:
            mapping.source_record = new
        becomes_stale = mapping.state != State.STALE and (decided or new is None)
        if becomes_stale:
            mapping.state = State.STALE
        mapping.version += 1
        mapping.save(update_fields=["source_record", "state", "version"])
        if becomes_stale:
            summary.marked_stale += 1
            record_event(run=run, actor=actor, action=Action.MAPPING_MARKED_STALE, object_type="mapping",
                         object_id=mapping.pk,
                         before={"state": before_state, "content_sha256": basis},
                         after={"state": State.STALE, "content_sha256": new.content_sha256 if new else None,
                                "reason": "record changed" if new else "record removed",
                                "member_sha256": new.member_version.sha256 if new else None})
        else:
            summary.carried_over += 1


def _carry_over_issues(run: Run, versions: dict[str, MemberVersion], summary: SyncSummary, actor: Actor) -> None:
    """Decisions on a replaced version's issues move to the new version's issues: an unchanged issue
    (same content hash) keeps its decision; an issue changed in place (same position) brings its
    decision as stale; a removed issue's decision is marked stale where it stands."""
    for version in versions.values():
        old_decisions = list(IssueDecision.objects.filter(run=run, issue__member_version__member_id=version.member_id)
                             .exclude(issue__member_version=version)
                             .select_related("issue").order_by("issue__member_version_id", "issue__index"))
        if not old_decisions:
            continue
        free = list(IntegrationIssue.objects.filter(member_version=version, decision__isnull=True).order_by("index"))
        by_sha: dict[str, list[IntegrationIssue]] = defaultdict(list)
        for issue in free:
            by_sha[issue.content_sha256].append(issue)
        taken: set[int] = set()
        unmatched = []
        for decision in old_decisions:
            same = [i for i in by_sha.get(decision.issue.content_sha256, []) if i.pk not in taken]
            if same and decision.state != State.STALE:
                taken.add(same[0].pk)
                decision.issue = same[0]
                decision.version += 1
                decision.save(update_fields=["issue", "version"])
                summary.carried_over += 1
            else:
                unmatched.append(decision)
        by_index = {i.index: i for i in free if i.pk not in taken}
        for decision in unmatched:
            new = by_index.pop(decision.issue.index, None)
            decided = decision.state in (State.ACCEPTED, State.REJECTED)
            if new is None and not decided:
                continue  # undecided or already stale on a removed issue: it no longer counts
            before = issue_snapshot(decision)
            if new is not None:
                decision.issue = new
            if decided:
                decision.state = State.STALE
            decision.version += 1
            decision.save(update_fields=["issue", "state", "version"])
            if decided:
                summary.marked_stale += 1
                record_event(run=run, actor=actor, action=Action.ISSUE_MARKED_STALE, object_type="issue_decision",
                             object_id=decision.pk, before=before,
                             after=issue_snapshot(decision) | {"reason": "issue changed" if new else "issue removed"})
            else:
                summary.carried_over += 1


def _statement_mappings(run: Run, versions: dict[str, MemberVersion], summary: SyncSummary) -> None:
    """Mappings a reconciliation or an imported result states, each created once (`origin_key`)."""
    wanted: list[Mapping] = []
    canonical_ids = set(CanonicalRecord.objects.filter(run=run).values_list("canonical_id", flat=True))
    declared = None
    for role, origin in ((Role.RECONCILIATION, Mapping.Origin.RECONCILIATION), (Role.RESULT, Mapping.Origin.RESULT)):
        version = versions.get(role)
        if version is None:
            continue
        report = parse_cache.version_report(version)  # the parse task's report, not a second parse
        stated: list[tuple[str, str, str, str]] = []
        for statement in report.mappings:
            relation = relation_for(statement.disposition, statement.target, canonical_ids)
            target = "" if relation == Mapping.Relation.NO_COUNTERPART else statement.target
            stated.append((statement.source, relation, target,
                           f"{role} line {statement.line}: {statement.source} → {statement.target or '∅'}"
                           f" ({statement.disposition})"))
        for amendment in report.amendments:
            if amendment.kind != "amendment":
                continue
            for old, new in superseded_pairs(amendment.text):
                stated.append((old, Mapping.Relation.SUPERSEDES, new,
                               f"{role} line {amendment.line}: Amendment: {old} is superseded by {new}"))
        if not stated:
            continue
        if declared is None:
            declared = {record_id: record for (_member, record_id), record in _declarations_of(versions).items()}
            resolve = resolver(run)
        for source, relation, target, reason in stated:
            resolved = resolve(target)
            wanted.append(Mapping(
                run=run, source=source, source_record=declared.get(source), relation=relation, target=resolved,
                origin=origin, reason=reason + (f"; target read as {resolved}" if resolved != target else ""),
                proposed_by=f"member:{role}", origin_key=statement_key(source, relation, target),
            ))
    if not wanted:
        return
    have = set(Mapping.objects.filter(run=run, origin__in=[Mapping.Origin.RECONCILIATION, Mapping.Origin.RESULT])
               .values_list("origin", "origin_key"))
    new = []
    for mapping in wanted:
        if (mapping.origin, mapping.origin_key) in have:
            continue
        have.add((mapping.origin, mapping.origin_key))
        new.append(mapping)
    summary.mappings_created += sum(insert_all(new))


def _suggest_mappings(run: Run, versions: dict[str, MemberVersion], summary: SyncSummary) -> None:
    """A suggestion for every declaration of a non-seeding member that no mapping covers yet.
    A source gets at most one suggestion ever: a rejected suggestion is not made again."""
    other_ids = [v.pk for role, v in versions.items() if role not in SEEDING_ROLES]
    if not other_ids:
        return
    records = list(Record.objects.filter(member_version_id__in=other_ids, record_type=Record.Type.DECLARATION)
                   .order_by("member_version_id", "ordinal"))
    if not records:
        return
    covered = set(Mapping.objects.filter(run=run)
                  .filter(Q(state__in=[State.PROPOSED, State.ACCEPTED, State.STALE]) | Q(origin=Mapping.Origin.SUGGESTED))
                  .values_list("source", flat=True))
    canonical = list(CanonicalRecord.objects.filter(run=run, state=CanonicalRecord.State.ACTIVE))
    own = {c.canonical_id for c in canonical if c.source_record_id == c.canonical_id}
    index = suggestions.Index(suggestions.Candidate(c.canonical_id, c.kind, c.label, c.text, c.source_record_id)
                              for c in canonical)
    made = []
    for record in records:
        if record.record_id in covered or record.record_id in own:
            continue
        covered.add(record.record_id)
        suggestion = index.suggest(
            suggestions.Source(record.record_id, record.kind, record.label, record.body or record.text))
        made.append(Mapping(run=run, source=record.record_id, source_record=record, relation=suggestion.relation,
                            target=suggestion.target, origin=Mapping.Origin.SUGGESTED, score=suggestion.score,
                            reason=suggestion.reason, proposed_by=APP_PROPOSER, origin_key=record.record_id))
    summary.suggestions_created += sum(insert_all(made))


def _create_issue_decisions(run: Run, versions: dict[str, MemberVersion], summary: SyncSummary) -> None:
    issues = IntegrationIssue.objects.filter(member_version_id__in=[v.pk for v in versions.values()],
                                             decision__isnull=True).order_by("member_version_id", "index")
    created = IssueDecision.objects.bulk_create([IssueDecision(run=run, issue=issue) for issue in issues],
                                                ignore_conflicts=True)
    summary.issue_decisions_created += len(created)

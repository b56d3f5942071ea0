"""Reconciliation: canonical records, mappings and decisions (DESIGN.md §2, §5, §10).

Every function here is keyword-only and writes one audit event per state
change, through `reviews.audit.record_event`, in the same transaction.

Relations read "source <relation> target", with one exception forced by how
reconciliations write them: `supersedes` comes from `Amendment: X is
superseded by Y`, and the mapping's source is the member record X whose
referent is absorbed, its target Y's canonical record. So for `supersedes`
the *target* supersedes the *source*.

Decisions use optimistic concurrency: one conditional UPDATE on
(pk, version); a reviewer holding an older version gets `StaleVersion`
carrying the row as it is now (HTTP 409).

Amendments and unresolved conflicts (`AmendmentDecision`) are accepted,
rejected or carried into the result's Limitations. A supersession amendment
is the one exception: its supersedes mapping is the decision and the
amendment follows it (see `decide_amendment`), so the two never disagree.
"""
from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Collection

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Max, Q
from django.utils import timezone

from records.ids import parse_id
from records.models import IntegrationIssue, MemberReport, MemberVersion, Record, Role
from records.parsing import parse_report
from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run, TransitionError

from . import suggestions
from .models import AmendmentDecision, CanonicalRecord, Decidable, IssueDecision, KindCounter, Mapping

ACCEPT, REJECT, REOPEN, CARRY = "accept", "reject", "reopen", "carry"
DECISIONS = (ACCEPT, REJECT, REOPEN)
# An amendment or an unresolved conflict can also be carried into the result's Limitations.
AMENDMENT_DECISIONS = (ACCEPT, REJECT, CARRY, REOPEN)

# A run in these states has been signed off: its decisions are frozen until a reviewer reopens it.
LOCKED_STATUSES = {Run.Status.APPROVED, Run.Status.FINALIZING, Run.Status.FINAL}

# Member versions whose records and issues are in the database.
READY_STATUSES = (MemberVersion.Status.PARSED, MemberVersion.Status.VALIDATED)

# Roles whose declarations the app does not suggest mappings for: they seed the shared set.
SEEDING_ROLES = (Role.RUNTIME, Role.RESULT)

APP_PROPOSER = "app"

State = Decidable.State

_ID = r"`?(?P<id>(?:(?:RT|MEM|EPI)-)?(?:CMP|OBJ|RTE|CLM|ABS|BAP)-(?:\d+|[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*){0,2}))`?"
SUPERSEDED_RE = re.compile(r"\s*" + _ID + r"\s+is\s+superseded\s+by\s+")
# One superseding ID, then optionally ", ", " and " or ", and " before the next.
_NEXT_ID_RE = re.compile(_ID + r"(?![A-Za-z0-9-])(?P<sep>,\s*(?:and\s+)?|\s+and\s+)?")


class ProposalError(Exception):
    """Bad input for a proposal or decision; `field` names the part of the request at fault (HTTP 400)."""

    def __init__(self, message: str, field: str = ""):
        super().__init__(message)
        self.message = message
        self.field = field


class StateConflict(TransitionError):
    """A well-formed request that the run's or the item's current state refuses (HTTP 409).

    Not a ProposalError: the input is fine, the moment is not. Callers that show errors catch
    StaleVersion first (it carries the current row), then StateConflict (409), then ProposalError (400).
    """

    def __init__(self, message: str, field: str = ""):
        super().__init__(message)
        self.message = message
        self.field = field

    code = "conflict"  # the API's error code


class RunLocked(StateConflict):
    """The run is approved, finalizing or final: reopen it before changing decisions."""

    code = "run_locked"

    def __init__(self, message: str):
        super().__init__(message, "run")


class InvalidDecision(StateConflict):
    """The decision does not apply to the item's current state, e.g. accepting it twice."""

    code = "invalid_decision"

    def __init__(self, message: str):
        super().__init__(message, "decision")


class TargetNotSettled(InvalidDecision):
    """Accepting waits for another decision: the target is a member record that has not entered the
    shared set yet (no accepted same or new mapping of its own); it can be the target once it has."""

    code = "target_not_settled"

    def __init__(self, target: str):
        StateConflict.__init__(self, f"{target} is a member record, not yet a canonical record of the run: "
                                     f"accept {target}'s own mapping first", "target")


class StaleVersion(StateConflict):
    """The item changed since the caller read it; `current` is the row as it is now (HTTP 409)."""

    code = "stale_version"

    def __init__(self, current):
        self.current = current
        super().__init__(
            f"{type(current).__name__.lower()} {current.pk} is at version {current.version} "
            f"({current.state}); reload it and decide again", "version",
        )


@dataclass
class SyncSummary:
    canonical_created: int = 0
    canonical_updated: int = 0
    canonical_withdrawn: int = 0
    canonical_reactivated: int = 0
    mappings_created: int = 0
    suggestions_created: int = 0
    issue_decisions_created: int = 0
    amendment_decisions_created: int = 0
    carried_over: int = 0
    marked_stale: int = 0
    conflicts: list[str] = field(default_factory=list)
    skipped: str = ""

    @property
    def changed(self) -> bool:
        return any((self.canonical_created, self.canonical_updated, self.canonical_withdrawn,
                    self.canonical_reactivated, self.mappings_created,
                    self.suggestions_created, self.issue_decisions_created, self.amendment_decisions_created,
                    self.carried_over,
                    self.marked_stale))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- IDs -----------------------------------------------------------------------------------------

def canonical_id_for(record_id: str) -> tuple[str, int | None]:
    """The canonical ID a runtime or result declaration seeds: numbered → bare, slug → itself."""
    parsed = parse_id(record_id)
    if parsed is None:
        return record_id, None
    _prefix, kind, tail = parsed
    if tail.isdigit():
        return f"{kind}-{int(tail)}", int(tail)
    return record_id, None


def _kind_of(record_id: str) -> str:
    parsed = parse_id(record_id)
    return parsed[1] if parsed else ""


def resolve_stated_id(stated: str, canonical_ids: Collection[str], accepted_targets: dict[str, str]) -> str:
    """The canonical ID a stated target means: itself, its bare numbered form (`RT-RTE-7` → `RTE-7`),
    or the canonical record a member record (`MEM-OBJ-2`) was accepted into by a same or new mapping
    (`accepted_targets`: source → target). Unresolvable: as given. Pure, so that sync, decisions and
    the result read a stated ID the same way."""
    if not stated or stated in canonical_ids:
        return stated
    parsed = parse_id(stated)
    if parsed and parsed[2].isdigit() and parsed[0] in ("", "RT"):
        bare, _ = canonical_id_for(stated)
        if bare in canonical_ids:
            return bare
    return accepted_targets.get(stated, stated)


def accepted_targets(mappings) -> dict[str, str]:
    """source → target of accepted same and new mappings (the first accepted one per source)."""
    targets: dict[str, str] = {}
    for mapping in sorted(mappings, key=lambda m: m.pk):
        if (mapping.state == State.ACCEPTED and mapping.target
                and mapping.relation in (Mapping.Relation.SAME, Mapping.Relation.NEW)):
            targets.setdefault(mapping.source, mapping.target)
    return targets


def _resolver(run: Run):
    canonical_ids = set(CanonicalRecord.objects.filter(run=run).values_list("canonical_id", flat=True))
    accepted = accepted_targets(Mapping.objects.filter(run=run, state=State.ACCEPTED).only(
        "pk", "source", "relation", "target", "state"))
    return lambda stated: resolve_stated_id(stated, canonical_ids, accepted)


def _resolve_target(run: Run, target: str) -> str:
    return _resolver(run)(target) if target else target


def _insert_once(row) -> bool:
    """Insert `row`; False when a unique constraint says it (or what it stands for) exists already."""
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:
        return False
    return True


def _raise_counter(run: Run, kind: str, number: int) -> None:
    counter, _ = KindCounter.objects.get_or_create(run=run, kind=kind)
    KindCounter.objects.filter(pk=counter.pk, last_number__lt=number).update(last_number=number)


def _next_number(run: Run, kind: str) -> int:
    """The next canonical number of a kind: above every number ever allocated (never reused)."""
    KindCounter.objects.get_or_create(run=run, kind=kind)
    counter = KindCounter.objects.select_for_update().get(run=run, kind=kind)
    top = CanonicalRecord.objects.filter(run=run, kind=kind).aggregate(m=Max("number"))["m"] or 0
    number = max(counter.last_number, top) + 1
    counter.last_number = number
    counter.save(update_fields=["last_number"])
    return number


# --- snapshots for the audit trail ---------------------------------------------------------------

def mapping_snapshot(mapping: Mapping) -> dict[str, Any]:
    return {"source": mapping.source, "relation": mapping.relation, "target": mapping.target,
            "state": mapping.state, "version": mapping.version, "origin": mapping.origin,
            "rationale": mapping.rationale}


def issue_snapshot(decision: IssueDecision) -> dict[str, Any]:
    return {"issue": decision.issue_id, "state": decision.state, "version": decision.version,
            "rationale": decision.rationale, "content_sha256": decision.issue.content_sha256}


def amendment_snapshot(amendment: AmendmentDecision) -> dict[str, Any]:
    return {"kind": amendment.kind, "member_version": amendment.member_version_id, "index": amendment.index,
            "line": amendment.line, "state": amendment.state, "version": amendment.version,
            "rationale": amendment.rationale, "content_sha256": amendment.content_sha256,
            "mapping": amendment.mapping_id}


def canonical_snapshot(record: CanonicalRecord) -> dict[str, Any]:
    return {"canonical_id": record.canonical_id, "kind": record.kind, "origin": record.origin,
            "state": record.state, "version": record.version, "rationale": record.rationale}


# --- sync ----------------------------------------------------------------------------------------

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
        _sync_amendments(locked, versions, summary, actor)
        _suggest_mappings(locked, versions, summary)
        _create_issue_decisions(locked, versions, summary)
        if summary.changed:
            record_event(run=locked, actor=actor, action="reconcile.synced", object_type="run",
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
    for origin, record in seeds:
        canonical_id, number = canonical_id_for(record.record_id)
        if number is not None:
            top[record.kind] = max(top.get(record.kind, 0), number)
        current = existing.get(canonical_id)
        if current is None:
            created = CanonicalRecord(run=run, canonical_id=canonical_id, kind=record.kind, number=number,
                                      label=record.label, text=record.text, origin=origin,
                                      source_record_id=record.record_id)
            if not _insert_once(created):
                summary.conflicts.append(f"{canonical_id} from {record.record_id}: number already allocated")
                continue
            existing[canonical_id] = created
            summary.canonical_created += 1
        elif current.origin == origin and current.source_record_id == record.record_id:
            if current.state == CanonicalRecord.State.REJECTED and WITHDRAWN_RE.match(current.rationale):
                before = canonical_snapshot(current)
                current.state, current.rationale = CanonicalRecord.State.ACTIVE, ""
                current.label, current.text, current.version = record.label, record.text, current.version + 1
                current.save(update_fields=["state", "rationale", "label", "text", "version"])
                summary.canonical_reactivated += 1
                record_event(run=run, actor=actor, action="canonical.reactivated", object_type="canonical_record",
                             object_id=canonical_id, before=before, after=canonical_snapshot(current)
                             | {"member_sha256": seeding[origin].sha256, "member_version": seeding[origin].version})
            elif (current.label, current.text) != (record.label, record.text):
                current.label, current.text, current.version = record.label, record.text, current.version + 1
                current.save(update_fields=["label", "text", "version"])
                summary.canonical_updated += 1
        elif current.source_record_id != record.record_id and f"{canonical_id} from {record.record_id}" not in summary.conflicts:
            summary.conflicts.append(f"{canonical_id} from {record.record_id}: already held by {current.source_record_id or current.origin}")
    for kind, number in sorted(top.items()):
        _raise_counter(run, kind, number)
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
    record_event(run=run, actor=actor, action="canonical.withdrawn", object_type="canonical_record",
                 object_id=record.canonical_id, before=before,
                 after=canonical_snapshot(record) | {"member_sha256": version.sha256, "member_version": version.version})
    for mapping in Mapping.objects.filter(run=run, target=record.canonical_id, state=State.ACCEPTED).order_by("pk"):
        _mark_mapping_stale(run, mapping, actor, summary, f"target {record.canonical_id} {reason}")


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
            record_event(run=run, actor=actor, action="mapping.marked_stale", object_type="mapping",
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
                record_event(run=run, actor=actor, action="issue.marked_stale", object_type="issue_decision",
                             object_id=decision.pk, before=before,
                             after=issue_snapshot(decision) | {"reason": "issue changed" if new else "issue removed"})
            else:
                summary.carried_over += 1


def _relation_for(disposition: str, target: str, canonical_ids: set[str]) -> str:
    words = disposition.lower()
    if "part" in words:
        return Mapping.Relation.PART_OF
    if "supersed" in words:
        return Mapping.Relation.SUPERSEDES
    if not target or any(w in words for w in ("reject", "no counterpart", "no-counterpart", "dropped", "withdrawn")):
        return Mapping.Relation.NO_COUNTERPART
    if target in canonical_ids:
        return Mapping.Relation.SAME
    if any(w in words for w in ("regist", "new", "allocat", "added")):
        return Mapping.Relation.NEW
    return Mapping.Relation.SAME


def statement_key(source: str, relation: str, target: str) -> str:
    """The `origin_key` of a mapping a reconciliation or result states, from the IDs as stated."""
    return f"{source}|{relation}|{target}"


def superseded_pairs(text: str) -> list[tuple[str, str]]:
    """`X is superseded by Y[, Z][ and W]` → [(X, Y), (X, Z), (X, W)]; any other amendment → []."""
    match = SUPERSEDED_RE.match(text)
    if not match:
        return []
    old, pos, targets = match.group("id"), match.end(), []
    while (following := _NEXT_ID_RE.match(text, pos)) is not None:
        targets.append(following.group("id"))
        if not following.group("sep"):
            break
        pos = following.end()
    return [(old, target) for target in targets]


def _statement_mappings(run: Run, versions: dict[str, MemberVersion], summary: SyncSummary) -> None:
    """Mappings a reconciliation or an imported result states, each created once (`origin_key`)."""
    wanted: list[Mapping] = []
    canonical_ids = set(CanonicalRecord.objects.filter(run=run).values_list("canonical_id", flat=True))
    declared = None
    for role, origin in ((Role.RECONCILIATION, Mapping.Origin.RECONCILIATION), (Role.RESULT, Mapping.Origin.RESULT)):
        version = versions.get(role)
        if version is None:
            continue
        content = MemberVersion.objects.filter(pk=version.pk).values_list("content", flat=True).get()
        report = parse_report(bytes(content).decode("utf-8", errors="replace"))
        stated: list[tuple[str, str, str, str]] = []
        for statement in report.mappings:
            relation = _relation_for(statement.disposition, statement.target, canonical_ids)
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
            resolve = _resolver(run)
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
    for mapping in wanted:
        if (mapping.origin, mapping.origin_key) in have:
            continue
        have.add((mapping.origin, mapping.origin_key))
        if _insert_once(mapping):
            summary.mappings_created += 1


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
    for record in records:
        if record.record_id in covered or record.record_id in own:
            continue
        covered.add(record.record_id)
        suggestion = index.suggest(
            suggestions.Source(record.record_id, record.kind, record.label, record.body or record.text))
        mapping = Mapping(run=run, source=record.record_id, source_record=record, relation=suggestion.relation,
                          target=suggestion.target, origin=Mapping.Origin.SUGGESTED, score=suggestion.score,
                          reason=suggestion.reason, proposed_by=APP_PROPOSER, origin_key=record.record_id)
        if _insert_once(mapping):
            summary.suggestions_created += 1


def _create_issue_decisions(run: Run, versions: dict[str, MemberVersion], summary: SyncSummary) -> None:
    issues = IntegrationIssue.objects.filter(member_version_id__in=[v.pk for v in versions.values()],
                                             decision__isnull=True).order_by("member_version_id", "index")
    created = IssueDecision.objects.bulk_create([IssueDecision(run=run, issue=issue) for issue in issues],
                                                ignore_conflicts=True)
    summary.issue_decisions_created += len(created)


# --- amendments and unresolved conflicts ---------------------------------------------------------

# The members whose `X is superseded by Y` amendments sync turns into mappings, with those mappings' origin.
STATING_ORIGINS = {Role.RECONCILIATION: Mapping.Origin.RECONCILIATION, Role.RESULT: Mapping.Origin.RESULT}
CARRIED = AmendmentDecision.State.CARRIED
DECIDED_STATES = (State.ACCEPTED, State.REJECTED, CARRIED)


def amendment_sha256(kind: str, text: str) -> str:
    """The content hash of one paragraph as labelled: `Amendment: …` or `Unresolved conflict: …`."""
    return hashlib.sha256(f"{AmendmentDecision.KIND_LABELS.get(kind, kind)}: {text}".encode("utf-8")).hexdigest()


def stated_paragraphs(version: MemberVersion) -> list[dict[str, Any]]:
    """The version's amendment and conflict paragraphs (kind, text, line, references) in order, as the
    parser stored them; paragraph i (from 1) is `AmendmentDecision.index` i."""
    parsed = version.parsed or {}
    if "amendments" in parsed:
        return list(parsed["amendments"])
    content = MemberVersion.objects.filter(pk=version.pk).values_list("content", flat=True).get()
    return [asdict(a) for a in parse_report(bytes(content).decode("utf-8", errors="replace")).amendments]


def supersession_keys(role: str, kind: str, text: str) -> list[tuple[str, str]]:
    """(origin, origin_key) of each supersedes mapping sync derives from this paragraph; [] when the
    paragraph states no supersession (a value amendment, a conflict, or a member sync does not read)."""
    origin = STATING_ORIGINS.get(role)
    if origin is None or kind != AmendmentDecision.Kind.AMENDMENT:
        return []
    return [(origin, statement_key(old, Mapping.Relation.SUPERSEDES, new)) for old, new in superseded_pairs(text)]


def current_amendment_decisions(run: Run):
    """Decisions on the paragraphs of each member's current version (what approval waits for)."""
    return AmendmentDecision.objects.filter(run=run, member_version__member__current_version=F("member_version"))


def _linked_mappings(run: Run, amendment: AmendmentDecision) -> list[Mapping]:
    """The supersedes mappings that decide `amendment` (in the order it states them); [] for any other."""
    keys = supersession_keys(amendment.member_version.member.role, amendment.kind, amendment.text)
    if not keys:
        return []
    found = {(m.origin, m.origin_key): m for m in Mapping.objects.filter(
        run=run, origin__in=[origin for origin, _ in keys], origin_key__in=[key for _, key in keys])}
    return list({found[k].pk: found[k] for k in keys if k in found}.values())


def _followed_values(amendment: AmendmentDecision, mappings: list[Mapping]) -> dict[str, Any]:
    """The decision an amendment reads from its supersedes mappings: stale if any is stale, open while
    any is open, accepted when all are, else rejected; the rationale and decider are theirs."""
    states = {m.state for m in mappings}
    if State.STALE in states:
        return {"state": State.STALE}
    if State.PROPOSED in states:
        return dict(state=State.PROPOSED, decided_by="", decided_at=None, decided_member_sha256="",
                    decided_content_sha256="")
    last = max(mappings, key=lambda m: (m.decided_at is not None, m.decided_at or amendment.created_at, m.pk))
    return dict(
        state=State.ACCEPTED if states == {State.ACCEPTED} else State.REJECTED,
        rationale="; ".join(dict.fromkeys(m.rationale.strip() for m in mappings if m.rationale.strip())),
        decided_by=last.decided_by, decided_at=last.decided_at,
        decided_member_sha256=amendment.member_version.sha256, decided_content_sha256=amendment.content_sha256,
    )


def _follow(amendment: AmendmentDecision, mappings: list[Mapping], *, keep_stale: bool) -> bool:
    """Make `amendment` read its mappings' decision; True when its state or decision changed.
    With keep_stale (sync), a stale amendment stays stale while its mappings are merely open."""
    first = mappings[0].pk if mappings else None
    if not mappings:
        if amendment.mapping_id is not None:
            amendment.mapping_id = None
            amendment.save(update_fields=["mapping"])
        return False
    values = _followed_values(amendment, mappings) | {"mapping_id": first}
    if keep_stale and amendment.state == State.STALE and values["state"] == State.PROPOSED:
        values = {"mapping_id": first}
    changed = [name for name, value in values.items() if getattr(amendment, name) != value]
    if not changed:
        return False
    for name in changed:
        setattr(amendment, name, values[name])
    decision_changed = changed != ["mapping_id"]
    if decision_changed:
        amendment.version += 1
    amendment.save(update_fields=[name.removesuffix("_id") for name in changed]
                   + (["version"] if decision_changed else []))
    return decision_changed


def _follow_decided_mapping(run: Run, mapping: Mapping) -> list[dict[str, Any]]:
    """After a reviewer decided `mapping`, the current amendments it decides follow it; returns what
    changed, for the mapping's own audit event (the one event of that decision)."""
    role = {origin: role for role, origin in STATING_ORIGINS.items()}.get(mapping.origin)
    if role is None or mapping.relation != Mapping.Relation.SUPERSEDES or not mapping.origin_key:
        return []
    followed = []
    rows = (current_amendment_decisions(run).filter(kind=AmendmentDecision.Kind.AMENDMENT,
                                                    member_version__member__role=role)
            .select_related("member_version__member").order_by("pk"))
    for row in rows:
        if (mapping.origin, mapping.origin_key) not in supersession_keys(role, row.kind, row.text):
            continue
        if _follow(row, _linked_mappings(run, row), keep_stale=False):
            followed.append({"amendment": row.pk, "state": row.state, "version": row.version})
    return followed


def _move_amendment(row: AmendmentDecision, version: MemberVersion, index: int, paragraph: dict[str, Any]) -> None:
    row.member_version, row.index = version, index
    row.kind, row.text, row.line = paragraph["kind"], paragraph["text"], paragraph["line"]
    row.references = list(paragraph.get("references") or [])
    row.content_sha256 = amendment_sha256(row.kind, row.text)


def _sync_amendments(run: Run, versions: dict[str, MemberVersion], summary: SyncSummary, actor: Actor) -> None:
    """One decision per `Amendment:` / `Unresolved conflict:` paragraph of each current member version,
    made once. A re-upload moves decisions to the new version as issue decisions move: an unchanged
    paragraph (same content hash) keeps its decision; one changed in place (same position) brings its
    decision as stale; a removed paragraph's decision is marked stale where it stands (both audited
    `amendment.marked_stale`). Then every supersession follows its mapping(s)."""
    for role, version in sorted(versions.items()):
        paragraphs = dict(enumerate(stated_paragraphs(version), start=1))
        rows = list(AmendmentDecision.objects.filter(run=run, member_version__member_id=version.member_id)
                    .select_related("member_version__member").order_by("-member_version_id", "index"))
        taken = {row.index for row in rows if row.member_version_id == version.pk}
        by_sha: dict[str, list[int]] = defaultdict(list)
        for index, paragraph in paragraphs.items():
            if index not in taken:
                by_sha[amendment_sha256(paragraph["kind"], paragraph["text"])].append(index)
        unmatched = []
        for row in (r for r in rows if r.member_version_id != version.pk):
            same = [i for i in by_sha.get(row.content_sha256, []) if i not in taken]
            if same and row.state != State.STALE:
                taken.add(same[0])
                _move_amendment(row, version, same[0], paragraphs[same[0]])
                row.version += 1
                row.save(update_fields=["member_version", "index", "kind", "text", "line", "references",
                                        "content_sha256", "version"])
                summary.carried_over += 1
            else:
                unmatched.append(row)
        for row in unmatched:
            index = row.index if row.index in paragraphs and row.index not in taken else None
            decided = row.state in DECIDED_STATES
            if index is None and not decided:
                continue  # undecided or already stale on a removed paragraph: it no longer counts
            before = amendment_snapshot(row)
            if index is not None:
                taken.add(index)
                _move_amendment(row, version, index, paragraphs[index])
            if decided:
                row.state = State.STALE
            row.version += 1
            row.save(update_fields=["member_version", "index", "kind", "text", "line", "references",
                                    "content_sha256", "state", "version"])
            if not decided:
                summary.carried_over += 1
                continue
            summary.marked_stale += 1
            record_event(run=run, actor=actor, action="amendment.marked_stale", object_type="amendment_decision",
                         object_id=row.pk, before=before,
                         after=amendment_snapshot(row) | {"member": role, "member_sha256": version.sha256,
                                                          "reason": "paragraph changed" if index else "paragraph removed"})
            if index is not None:
                # The changed paragraph's supersession is decided anew: its decided mappings go stale with it.
                for mapping in _linked_mappings(run, row):
                    if mapping.state in (State.ACCEPTED, State.REJECTED):
                        _mark_mapping_stale(run, mapping, actor, summary,
                                            f"amendment at line {row.line} of the {role} report changed")
        for index, paragraph in sorted(paragraphs.items()):
            if index in taken:
                continue
            created = AmendmentDecision(run=run, member_version=version, index=index, kind=paragraph["kind"],
                                        text=paragraph["text"], line=paragraph["line"],
                                        references=list(paragraph.get("references") or []),
                                        content_sha256=amendment_sha256(paragraph["kind"], paragraph["text"]))
            if _insert_once(created):
                summary.amendment_decisions_created += 1
    _follow_mappings(run, summary, actor)


def _mark_mapping_stale(run: Run, mapping: Mapping, actor: Actor, summary: SyncSummary, reason: str) -> None:
    before = {"state": mapping.state, "target": mapping.target}
    mapping.state, mapping.version = State.STALE, mapping.version + 1
    mapping.save(update_fields=["state", "version"])
    summary.marked_stale += 1
    record_event(run=run, actor=actor, action="mapping.marked_stale", object_type="mapping", object_id=mapping.pk,
                 before=before, after={"state": State.STALE, "reason": reason})


def _follow_mappings(run: Run, summary: SyncSummary, actor: Actor) -> None:
    """Each current supersession amendment reads its mappings' decision (sync may have made one stale)."""
    rows = (current_amendment_decisions(run)
            .filter(kind=AmendmentDecision.Kind.AMENDMENT, member_version__member__role__in=list(STATING_ORIGINS))
            .select_related("member_version__member").order_by("pk"))
    for row in rows:
        before = amendment_snapshot(row)
        if not _follow(row, _linked_mappings(run, row), keep_stale=True):
            continue
        became_stale = row.state == State.STALE
        if became_stale:
            summary.marked_stale += 1
        else:
            summary.carried_over += 1
        record_event(run=run, actor=actor,
                     action="amendment.marked_stale" if became_stale else "amendment.followed_mapping",
                     object_type="amendment_decision", object_id=row.pk, before=before,
                     after=amendment_snapshot(row) | {"reason": "its supersedes mapping decides it"})


# --- proposals -----------------------------------------------------------------------------------

def _ensure_open(run: Run) -> None:
    """Take the run's row lock (first, as every writer of a run does: see reviews.audit.lock_run) and
    refuse while the run is approved or later. Holding it also keeps approval from slipping in
    between a decision's check and its write."""
    status = lock_run(run).status
    if status in LOCKED_STATUSES:
        raise RunLocked(f"run {run.run_id} is {status}: reopen it before changing its reconciliation")


def current_declaration(run: Run, record_id: str) -> Record | None:
    """The declaration of `record_id` in a current member version, if any."""
    return (Record.objects.filter(run=run, record_id=record_id, record_type=Record.Type.DECLARATION,
                                  member_version__member__current_version=F("member_version"))
            .select_related("member_version__member").first())


def _check_target(run: Run, *, source: str, kind: str, relation: str, target: str,
                  allow_own: bool = False) -> None:
    """Raise ProposalError unless `target` suits `relation` for a source of `kind`."""
    if relation == Mapping.Relation.NO_COUNTERPART:
        if target:
            raise ProposalError("a no-counterpart mapping takes no target; leave target empty", "target")
        return
    if not target:
        if relation == Mapping.Relation.NEW:
            return  # the app allocates on accept
        raise ProposalError(f"a {relation} mapping needs a target: the canonical record {source} maps to", "target")
    parsed = parse_id(target)
    if parsed is None or parsed[1] == "SRC":
        raise ProposalError(f"target {target!r} is not a record ID (e.g. OBJ-5 or RT-OBJ-store)", "target")
    if kind and parsed[1] != kind:
        raise ProposalError(f"kinds differ: {source} is {kind} but {target} is {parsed[1]}", "target")
    existing = CanonicalRecord.objects.filter(run=run, canonical_id=target).first()
    if relation == Mapping.Relation.NEW:
        if parsed[2].isdigit() and parsed[0]:
            raise ProposalError(f"a numbered canonical ID is bare: use {parsed[1]}-{int(parsed[2])}, not {target}",
                                "target")
        if existing is not None and not (allow_own and existing.origin == CanonicalRecord.Origin.MAPPING
                                         and existing.source_record_id == source):
            state = " (rejected; numbers are never reused)" if existing.state == CanonicalRecord.State.REJECTED else ""
            raise ProposalError(f"{target} is already taken{state}; give a free ID or leave target empty", "target")
        return
    if existing is None:
        resolved = _resolve_target(run, target)
        hint = f"; did you mean {resolved}?" if resolved != target else ""
        raise ProposalError(f"{target} is not a canonical record of run {run.run_id}{hint}", "target")
    if existing.state == CanonicalRecord.State.REJECTED:
        raise ProposalError(f"{target} was rejected ({existing.rationale or 'no rationale'}); choose another target",
                            "target")


def _open_proposal(run: Run, source: str, relation: str, target: str) -> Mapping | None:
    return (Mapping.objects.filter(run=run, origin=Mapping.Origin.AGENT, source=source, relation=relation,
                                   target=target, state__in=[State.PROPOSED, State.STALE])
            .order_by("pk").first())


def propose_mapping(*, run: Run, source: str, relation: str, target: str | None,
                    actor: Actor) -> tuple[Mapping, bool]:
    """An agent's or reviewer's proposal: a member record → a canonical record, under a relation.

    Returns (mapping, created). Idempotent: while an identical proposal (same source, relation and
    target) is open, proposing it again returns that one and audits nothing. A different proposal
    for the same source is a new row: a conflict for the reviewer to resolve.
    """
    source = (source or "").strip()
    target = (target or "").strip()
    if relation not in Mapping.Relation.values:
        raise ProposalError(f"relation must be one of {', '.join(Mapping.Relation.values)}", "relation")
    if parse_id(source) is None or _kind_of(source) == "SRC":
        raise ProposalError(f"source {source!r} is not a record ID (e.g. MEM-OBJ-1)", "source")
    with transaction.atomic():
        _ensure_open(run)
        record = current_declaration(run, source)
        if record is None and not Mapping.objects.filter(run=run, origin=Mapping.Origin.RESULT, source=source).exists():
            raise ProposalError(f"{source} is not declared by a current member report of run {run.run_id}", "source")
        _check_target(run, source=source, kind=record.kind if record else _kind_of(source), relation=relation,
                      target=target)
        existing = _open_proposal(run, source, relation, target)
        if existing is not None:
            return existing, False
        try:
            with transaction.atomic():
                mapping = Mapping.objects.create(run=run, source=source, source_record=record, relation=relation,
                                                 target=target, origin=Mapping.Origin.AGENT, proposed_by=actor.label)
                record_event(run=run, actor=actor, action="mapping.proposed", object_type="mapping",
                             object_id=mapping.pk,
                             after=mapping_snapshot(mapping) | {"member": record.member_version.member.role if record else None})
        except IntegrityError:
            existing = _open_proposal(run, source, relation, target)  # a concurrent identical proposal won
            if existing is None:
                raise
            return existing, False
        return mapping, True


# --- decisions -----------------------------------------------------------------------------------

def _check_decision(decision: str, rationale: str, allowed: tuple[str, ...] = DECISIONS) -> str:
    """The stripped rationale; ProposalError for a decision not `allowed`, or a reject or carry without one."""
    if decision not in allowed:
        raise ProposalError(f"decision must be one of {', '.join(allowed)}, not {decision!r}", "decision")
    rationale = (rationale or "").strip()
    if decision == REJECT and not rationale:
        raise ProposalError("a rejection needs a rationale: say why", "rationale")
    if decision == CARRY and not rationale:
        raise ProposalError("carrying it into the result's Limitations needs a rationale: say why it stays open",
                            "rationale")
    return rationale


def _check_transition(item, decision: str) -> str:
    """The state the decision leads to, or InvalidDecision."""
    if decision == REOPEN:
        if item.state == State.PROPOSED:
            raise InvalidDecision(f"{_name(item)} is already open (proposed)")
        return State.PROPOSED
    if item.state in DECIDED_STATES:
        raise InvalidDecision(f"{_name(item)} is already {item.state}; reopen it first")
    return {ACCEPT: State.ACCEPTED, REJECT: State.REJECTED, CARRY: CARRIED}[decision]


def _name(item) -> str:
    if isinstance(item, Mapping):
        return f"mapping {item.pk} ({item})"
    if isinstance(item, AmendmentDecision):
        label = item.label.lower()
        return (f"{label} {item.pk} (line {item.line} of the {item.member_version.member.role} report, "
                f"version {item.member_version.version})")
    return f"integration issue decision {item.pk}"


def _decision_values(state: str, rationale: str, actor: Actor, *, member_sha256: str,
                     content_sha256: str) -> dict[str, Any]:
    """The columns a decision writes: who decided, when, and what it saw; a reopened item (proposed) clears them."""
    if state == State.PROPOSED:
        return {"state": state, "rationale": rationale, "decided_by": "", "decided_at": None,
                "decided_member_sha256": "", "decided_content_sha256": ""}
    return {"state": state, "rationale": rationale, "decided_by": actor.label, "decided_at": timezone.now(),
            "decided_member_sha256": member_sha256, "decided_content_sha256": content_sha256}


def _claim(model, item, expected_version: int | None, **values) -> None:
    """The conditional UPDATE that makes one decision win: 0 rows means someone else got there first."""
    if expected_version is None or item.version != expected_version:
        raise StaleVersion(item)
    updated = model.objects.filter(pk=item.pk, version=expected_version).update(version=F("version") + 1, **values)
    if not updated:
        raise StaleVersion(_fresh(model, item.pk))


def _read_for_decision(model, pk: int, expected_version: int | None, decision: str):
    """The item as it is now and the state `decision` leads to; StaleVersion or InvalidDecision otherwise."""
    current = _fresh(model, pk)
    if expected_version is None or current.version != expected_version:
        raise StaleVersion(current)
    return current, _check_transition(current, decision)


def _fresh(model, pk):
    query = model.objects.all()
    if model is Mapping:
        query = query.select_related("source_record__member_version__member")
    elif model is AmendmentDecision:
        query = query.select_related("member_version__member").defer("member_version__content",
                                                                     "member_version__parsed")
    else:
        query = query.select_related("issue__member_version__member")
    return query.get(pk=pk)


def _allocate(run: Run, mapping: Mapping, explicit: str) -> tuple[CanonicalRecord, bool]:
    """The canonical record an accepted `new` mapping enters as: (record, created)."""
    record = mapping.source_record
    kind = record.kind if record else _kind_of(mapping.source)
    label, text = (record.label, record.text) if record else ("", "")
    if explicit:
        existing = CanonicalRecord.objects.filter(run=run, canonical_id=explicit).first()
        if existing is not None:
            if existing.origin != CanonicalRecord.Origin.MAPPING or existing.source_record_id != mapping.source:
                raise ProposalError(f"{explicit} is already taken; give a free ID or leave target empty", "target")
            # This mapping's own earlier allocation (accepted, then reopened or made stale): take it back.
            existing.state, existing.rationale = CanonicalRecord.State.ACTIVE, ""
            existing.label, existing.text, existing.version = label, text, existing.version + 1
            existing.save(update_fields=["state", "rationale", "label", "text", "version"])
            return existing, False
        canonical_id = explicit
        tail = parse_id(explicit)[2]
        number = int(tail) if tail.isdigit() else None
        if number is not None:
            _raise_counter(run, kind, number)
    elif parse_id(mapping.source) and parse_id(mapping.source)[2].isdigit():
        number = _next_number(run, kind)
        canonical_id = f"{kind}-{number}"
    else:
        canonical_id, number = mapping.source, None
        if CanonicalRecord.objects.filter(run=run, canonical_id=canonical_id).exists():
            raise ProposalError(f"{canonical_id} is already a canonical record: map {mapping.source} to it as same, "
                                f"or give the new record another ID", "target")
    created = CanonicalRecord(run=run, canonical_id=canonical_id, kind=kind, number=number, label=label, text=text,
                              origin=CanonicalRecord.Origin.MAPPING, source_record_id=mapping.source)
    if not _insert_once(created):
        raise ProposalError(f"{canonical_id} is already taken; give a free ID", "target")
    return created, True


def decide_mapping(*, mapping: Mapping, decision: str, rationale: str, actor: Actor,
                   expected_version: int | None, target: str | None = None) -> Mapping:
    """Accept, reject or reopen a mapping. Accepting a `new` mapping allocates its canonical record;
    `target` changes the target as the mapping is accepted."""
    rationale = _check_decision(decision, rationale)
    target = (target or "").strip()
    run = mapping.run
    with transaction.atomic():
        _ensure_open(run)
        current, new_state = _read_for_decision(Mapping, mapping.pk, expected_version, decision)
        before = mapping_snapshot(current)
        extra: dict[str, Any] = {}
        record = current.source_record
        if decision == ACCEPT:
            chosen = target or current.target
            if current.relation != Mapping.Relation.NEW:
                chosen = _resolve_target(run, chosen)
                if (chosen and not CanonicalRecord.objects.filter(run=run, canonical_id=chosen).exists()
                        and current_declaration(run, chosen) is not None):
                    raise TargetNotSettled(chosen)
            _check_target(run, source=current.source, kind=record.kind if record else _kind_of(current.source),
                          relation=current.relation, target=chosen, allow_own=True)
            if current.relation in (Mapping.Relation.SAME, Mapping.Relation.NEW):
                other = (Mapping.objects.filter(run=run, source=current.source, state=State.ACCEPTED,
                                                relation__in=[Mapping.Relation.SAME, Mapping.Relation.NEW])
                         .exclude(pk=current.pk).first())
                if other is not None:
                    raise InvalidDecision(f"{current.source} is already accepted as mapping {other.pk} "
                                          f"({other.relation} {other.target}); reopen that one first")
        values = _decision_values(new_state, rationale, actor,
                                  member_sha256=record.member_version.sha256 if record else "",
                                  content_sha256=record.content_sha256 if record else "")
        if decision == ACCEPT:
            values["target"] = chosen
        try:
            with transaction.atomic():
                _claim(Mapping, current, expected_version, **values)
        except IntegrityError:
            raise InvalidDecision(f"{_name(current)} is proposed again by another open mapping; "
                                  f"decide that one instead") from None
        if decision == ACCEPT and current.relation == Mapping.Relation.NEW:
            canonical, created = _allocate(run, current, values["target"])
            Mapping.objects.filter(pk=current.pk).update(target=canonical.canonical_id)
            extra = {"canonical_id": canonical.canonical_id, "canonical_created": created}
        if decision == REOPEN and before["state"] == State.ACCEPTED and current.relation == Mapping.Relation.NEW:
            # The allocated ID stays burnt: the canonical record is rejected, never renumbered.
            withdrawn = CanonicalRecord.objects.filter(
                run=run, canonical_id=current.target, origin=CanonicalRecord.Origin.MAPPING,
                source_record_id=current.source, state=CanonicalRecord.State.ACTIVE,
            ).update(state=CanonicalRecord.State.REJECTED, rationale=f"mapping {current.pk} reopened: {rationale}",
                     version=F("version") + 1)
            if withdrawn:
                extra = {"canonical_withdrawn": current.target}
        result = _fresh(Mapping, current.pk)
        # A supersession amendment follows its mapping; this event is the decision of both.
        followed = _follow_decided_mapping(run, result)
        if followed:
            extra = extra | {"amendments": followed}
        record_event(run=run, actor=actor, action=f"mapping.{_PAST[decision]}", object_type="mapping",
                     object_id=result.pk, before=before,
                     after=mapping_snapshot(result) | extra | {
                         "decided_member_sha256": result.decided_member_sha256,
                         "decided_content_sha256": result.decided_content_sha256})
    return result


_PAST = {ACCEPT: "accepted", REJECT: "rejected", REOPEN: "reopened", CARRY: "carried"}


def decide_issue(*, issue_decision: IssueDecision, decision: str, rationale: str, actor: Actor,
                 expected_version: int | None) -> IssueDecision:
    """Accept, reject or reopen one integration issue."""
    rationale = _check_decision(decision, rationale)
    run = issue_decision.run
    with transaction.atomic():
        _ensure_open(run)
        current, new_state = _read_for_decision(IssueDecision, issue_decision.pk, expected_version, decision)
        before = issue_snapshot(current)
        values = _decision_values(new_state, rationale, actor, member_sha256=current.issue.member_version.sha256,
                                  content_sha256=current.issue.content_sha256)
        _claim(IssueDecision, current, expected_version, **values)
        result = _fresh(IssueDecision, current.pk)
        record_event(run=run, actor=actor, action=f"issue.{_PAST[decision]}", object_type="issue_decision",
                     object_id=result.pk, before=before,
                     after=issue_snapshot(result) | {"member": result.issue.member_version.member.role,
                                                     "index": result.issue.index,
                                                     "decided_member_sha256": result.decided_member_sha256})
    return result


def decide_amendment(*, amendment: AmendmentDecision, decision: str, rationale: str, actor: Actor,
                     expected_version: int | None) -> AmendmentDecision:
    """Accept, reject, carry into the result's Limitations, or reopen one amendment or unresolved
    conflict of a current member version; a rejection or a carry needs a rationale. Writes one
    `amendment.<accepted|rejected|carried|reopened>` event.

    A supersession (`X is superseded by Y`, with the supersedes mapping sync derived from it) is
    decided by its mapping, and the amendment follows it: accepting or rejecting it here decides each
    of its mappings through `decide_mapping` (each writes its one `mapping.<decision>` event, naming
    the amendment), exactly as deciding the mapping directly would, so the two never disagree. It
    cannot be carried: reject it with the reason to keep the supersession out of the shared set.
    """
    rationale = _check_decision(decision, rationale, allowed=AMENDMENT_DECISIONS)
    run = amendment.run
    with transaction.atomic():
        _ensure_open(run)
        current = _fresh(AmendmentDecision, amendment.pk)
        if expected_version is None or current.version != expected_version:
            raise StaleVersion(current)
        member = current.member_version.member
        if member.current_version_id != current.member_version_id:
            raise InvalidDecision(f"{_name(current)} is not in the current {member.role} report; "
                                  f"a later version replaced it")
        mappings = _linked_mappings(run, current)
        if mappings:
            return _decide_supersession(current, mappings, decision, rationale, actor)
        new_state = _check_transition(current, decision)
        before = amendment_snapshot(current)
        values = _decision_values(new_state, rationale, actor, member_sha256=current.member_version.sha256,
                                  content_sha256=current.content_sha256)
        _claim(AmendmentDecision, current, expected_version, **values)
        result = _fresh(AmendmentDecision, current.pk)
        record_event(run=run, actor=actor, action=f"amendment.{_PAST[decision]}", object_type="amendment_decision",
                     object_id=result.pk, before=before,
                     after=amendment_snapshot(result) | {"member": member.role,
                                                         "decided_member_sha256": result.decided_member_sha256})
    return result


def _decide_supersession(amendment: AmendmentDecision, mappings: list[Mapping], decision: str, rationale: str,
                         actor: Actor) -> AmendmentDecision:
    """Decide a supersession amendment through its mappings (in the caller's transaction, run locked)."""
    if decision == CARRY:
        raise InvalidDecision(
            f"{_name(amendment)} states a supersession that mapping {mappings[0].pk} ({mappings[0]}) decides: "
            f"accept or reject it; a rejection goes into the result's Limitations with its rationale")
    wanted = {ACCEPT: State.ACCEPTED, REJECT: State.REJECTED, REOPEN: State.PROPOSED}[decision]
    pending = [m for m in mappings if m.state != wanted]
    if not pending:
        raise InvalidDecision(f"{_name(amendment)} is already {amendment.state}"
                              + ("; reopen it first" if decision != REOPEN else ""))
    for mapping in pending:
        decide_mapping(mapping=mapping, decision=decision, rationale=rationale, actor=actor,
                       expected_version=mapping.version)
    return _fresh(AmendmentDecision, amendment.pk)


def bulk_accept_suggestions(*, run: Run, min_score: float, actor: Actor, rationale: str) -> int:
    """Accept every open suggestion scoring at least `min_score`, each audited; return how many."""
    with transaction.atomic():
        _ensure_open(run)
        pending = (Mapping.objects.filter(run=run, origin=Mapping.Origin.SUGGESTED, state=State.PROPOSED,
                                          score__gte=min_score).order_by("pk"))
        accepted = 0
        for mapping in pending:
            try:
                decide_mapping(mapping=mapping, decision=ACCEPT, rationale=rationale, actor=actor,
                               expected_version=mapping.version)
            except RunLocked:
                raise
            except (StateConflict, ProposalError):
                continue  # someone decided it meanwhile, or its target no longer fits: leave it to a human
            accepted += 1
    return accepted


def reject_canonical_record(*, record: CanonicalRecord, rationale: str, actor: Actor) -> CanonicalRecord:
    """Take a canonical record out of the shared set; its ID is never given to another record."""
    rationale = (rationale or "").strip()
    if not rationale:
        raise ProposalError("rejecting a canonical record needs a rationale", "rationale")
    with transaction.atomic():
        _ensure_open(record.run)
        before = canonical_snapshot(record)
        updated = CanonicalRecord.objects.filter(pk=record.pk, state=CanonicalRecord.State.ACTIVE).update(
            state=CanonicalRecord.State.REJECTED, rationale=rationale, version=F("version") + 1)
        if not updated:
            raise InvalidDecision(f"canonical record {record.canonical_id} is already rejected")
        record.refresh_from_db(fields=["state", "rationale", "version"])
        record_event(run=record.run, actor=actor, action="canonical.rejected", object_type="canonical_record",
                     object_id=record.canonical_id, before=before, after=canonical_snapshot(record))
    return record


def current_issue_decisions(run: Run):
    """Issue decisions on the issues of each member's current version (what approval waits for)."""
    return IssueDecision.objects.filter(
        run=run, issue__member_version__member__current_version=F("issue__member_version"))


def decision_progress(run: Run) -> dict[str, Any]:
    """Counts of decided and open items: {"mappings": {...}, "issues": {...}, "amendments": {...},
    "total", "decided", "undecided", "stale"}; amendments count the current members' amendments and
    unresolved conflicts (also `carried` and `conflicts`). Three queries, whatever the run's size."""
    def counts(query) -> dict[str, int]:
        row = query.aggregate(
            total=Count("id"),
            accepted=Count("id", filter=Q(state=State.ACCEPTED)),
            rejected=Count("id", filter=Q(state=State.REJECTED)),
            proposed=Count("id", filter=Q(state=State.PROPOSED)),
            stale=Count("id", filter=Q(state=State.STALE)),
        )
        row["decided"] = row["accepted"] + row["rejected"]
        row["undecided"] = row["proposed"] + row["stale"]
        return row

    mappings = counts(Mapping.objects.filter(run=run))
    issues = counts(current_issue_decisions(run))
    amendments = current_amendment_decisions(run).aggregate(
        total=Count("id"),
        accepted=Count("id", filter=Q(state=State.ACCEPTED)),
        rejected=Count("id", filter=Q(state=State.REJECTED)),
        carried=Count("id", filter=Q(state=CARRIED)),
        proposed=Count("id", filter=Q(state=State.PROPOSED)),
        stale=Count("id", filter=Q(state=State.STALE)),
        conflicts=Count("id", filter=Q(kind=AmendmentDecision.Kind.UNRESOLVED_CONFLICT)),
    )
    amendments["decided"] = amendments["accepted"] + amendments["rejected"] + amendments["carried"]
    amendments["undecided"] = amendments["proposed"] + amendments["stale"]
    blocks = (mappings, issues, amendments)
    return {"mappings": mappings, "issues": issues, "amendments": amendments,
            **{key: sum(block[key] for block in blocks) for key in ("total", "decided", "undecided", "stale")}}

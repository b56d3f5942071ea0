"""Amendments and unresolved conflicts: one decision per paragraph, supersessions following their mappings."""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import F

from records.models import MemberVersion
from reviews.actions import Action
from reviews.audit import Actor, record_event
from reviews.models import Run

from ..models import AmendmentDecision, Mapping
from .canonical_ids import insert_once
from .mappings import mark_mapping_stale
from .snapshots import amendment_snapshot
from ..paragraphs import STATING_ORIGINS, amendment_sha256, stated_paragraphs, supersession_keys
from ..vocabulary import State
from .summary import SyncSummary



CARRIED = AmendmentDecision.State.CARRIED
DECIDED_STATES = (State.ACCEPTED, State.REJECTED, CARRIED)


def current_amendment_decisions(run: Run):
    """Decisions on the paragraphs of each member's current version (what approval waits for)."""
    return AmendmentDecision.objects.filter(run=run, member_version__member__current_version=F("member_version"))


def linked_mappings(run: Run, amendment: AmendmentDecision) -> list[Mapping]:
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


def follow_decided_mapping(run: Run, mapping: Mapping) -> list[dict[str, Any]]:
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
        if _follow(row, linked_mappings(run, row), keep_stale=False):
            followed.append({"amendment": row.pk, "state": row.state, "version": row.version})
    return followed


def _move_amendment(row: AmendmentDecision, version: MemberVersion, index: int, paragraph: dict[str, Any]) -> None:
    row.member_version, row.index = version, index
    row.kind, row.text, row.line = paragraph["kind"], paragraph["text"], paragraph["line"]
    row.references = list(paragraph.get("references") or [])
    row.content_sha256 = amendment_sha256(row.kind, row.text)


def sync_amendments(run: Run, versions: dict[str, MemberVersion], summary: SyncSummary, actor: Actor) -> None:
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
            record_event(run=run, actor=actor, action=Action.AMENDMENT_MARKED_STALE, object_type="amendment_decision",
                         object_id=row.pk, before=before,
                         after=amendment_snapshot(row) | {"member": role, "member_sha256": version.sha256,
                                                          "reason": "paragraph changed" if index else "paragraph removed"})
            if index is not None:
                # The changed paragraph's supersession is decided anew: its decided mappings go stale with it.
                for mapping in linked_mappings(run, row):
                    if mapping.state in (State.ACCEPTED, State.REJECTED):
                        mark_mapping_stale(run, mapping, actor, summary,
                                            f"amendment at line {row.line} of the {role} report changed")
        for index, paragraph in sorted(paragraphs.items()):
            if index in taken:
                continue
            created = AmendmentDecision(run=run, member_version=version, index=index, kind=paragraph["kind"],
                                        text=paragraph["text"], line=paragraph["line"],
                                        references=list(paragraph.get("references") or []),
                                        content_sha256=amendment_sha256(paragraph["kind"], paragraph["text"]))
            if insert_once(created):
                summary.amendment_decisions_created += 1
    _follow_mappings(run, summary, actor)


def _follow_mappings(run: Run, summary: SyncSummary, actor: Actor) -> None:
    """Each current supersession amendment reads its mappings' decision (sync may have made one stale)."""
    rows = (current_amendment_decisions(run)
            .filter(kind=AmendmentDecision.Kind.AMENDMENT, member_version__member__role__in=list(STATING_ORIGINS))
            .select_related("member_version__member").order_by("pk"))
    for row in rows:
        before = amendment_snapshot(row)
        if not _follow(row, linked_mappings(run, row), keep_stale=True):
            continue
        became_stale = row.state == State.STALE
        if became_stale:
            summary.marked_stale += 1
        else:
            summary.carried_over += 1
        record_event(run=run, actor=actor,
                     action=Action.AMENDMENT_MARKED_STALE if became_stale else Action.AMENDMENT_FOLLOWED_MAPPING,
                     object_type="amendment_decision", object_id=row.pk, before=before,
                     after=amendment_snapshot(row) | {"reason": "its supersedes mapping decides it"})

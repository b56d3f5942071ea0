"""What changed between two versions of a member (DESIGN §4 `…/diff/`, §5): records added, removed and
changed (a word diff of label and body, the mapping rows' component), findings gained and lost, and the
correction requests the newer version answered."""
from __future__ import annotations

from dataclasses import dataclass

from records import parsed as parse_cache
from records.models import MemberReport, MemberVersion, Record
from records.validation import MemberInput, RunFacts, validate_member
from reviews.models import Run

from . import diffing
from .models import CorrectionRequest, Mapping


@dataclass(frozen=True)
class RecordChange:
    record_id: str
    kind: str
    change: str  # "added", "removed" or "changed"
    old_label: str = ""
    new_label: str = ""
    old_body: str = ""
    new_body: str = ""

    def as_dict(self) -> dict:
        found = {"record_id": self.record_id, "kind": self.kind, "change": self.change}
        if self.change == "changed":
            found |= {"label": {"from": self.old_label, "to": self.new_label,
                                "diff": diffing.diff_words(self.old_label, self.new_label)},
                      "body": {"from": self.old_body, "to": self.new_body,
                               "diff": diffing.diff_words(self.old_body, self.new_body)}}
        else:
            found |= {"label": self.new_label or self.old_label}
        return found


def _declarations(version: MemberVersion) -> dict[str, Record]:
    return {r.record_id: r for r in Record.objects.filter(member_version=version, record_type=Record.Type.DECLARATION)
            .only("record_id", "kind", "label", "body", "text").order_by("ordinal")}


def record_changes(old: MemberVersion, new: MemberVersion) -> list[RecordChange]:
    before, after = _declarations(old), _declarations(new)
    changes = [RecordChange(r.record_id, r.kind, "added", new_label=r.label, new_body=r.body or r.text)
               for rid, r in after.items() if rid not in before]
    changes += [RecordChange(r.record_id, r.kind, "removed", old_label=r.label, old_body=r.body or r.text)
                for rid, r in before.items() if rid not in after]
    for rid, r in after.items():
        o = before.get(rid)
        if o is not None and (o.label, o.body or o.text) != (r.label, r.body or r.text):
            changes.append(RecordChange(rid, r.kind, "changed", o.label, r.label, o.body or o.text, r.body or r.text))
    return changes


def _findings(run: Run, version: MemberVersion) -> set[tuple[str, str, str, str]]:
    """(severity, code, record, message) of the member's own checks on this version; lines left out, since
    a correction moves them."""
    facts = RunFacts(run_id=run.run_id, reviewed_boundary=run.reviewed_boundary, revises=run.revised_run_ids())
    member = MemberInput(name=version.member.role, role=version.member.role,
                         report=parse_cache.version_report(version))
    return {(f.severity, f.code, f.record_id or "", f.message) for f in validate_member(member, facts)}


def version_numbers(params) -> dict[str, int | None]:
    """`from` and `to` of a diff request: version numbers, or None when not given (the API refuses junk first)."""
    return {name: int(params[name]) if str(params.get(name, "")).isdigit() else None for name in ("from", "to")}


class NoSuchVersion(LookupError):
    """The member has no version of that number."""


def versions_to_compare(member: MemberReport, frm: int | None, to: int | None) -> tuple[MemberVersion, MemberVersion]:
    """(from, to) versions of `member`: `to` defaults to the current one, `from` to the one before it."""
    to = to or (member.current_version.version if member.current_version_id else 1)
    frm = frm or max(1, to - 1)
    found = {v.version: v for v in MemberVersion.objects.filter(member=member, version__in=[frm, to])
             .select_related("member").defer("content")}
    missing = [n for n in (frm, to) if n not in found]
    if missing:
        raise NoSuchVersion(f"the {member.role} report has no version {missing[0]}")
    return found[frm], found[to]


def version_diff(*, run: Run, old: MemberVersion, new: MemberVersion,
                 changes: list[RecordChange] | None = None) -> dict:
    """The diff as data; `changes` when the caller already has `record_changes(old, new)`."""
    changes = record_changes(old, new) if changes is None else changes
    old_findings, new_findings = _findings(run, old), _findings(run, new)

    def listed(found):
        return [{"severity": s, "code": c, "record_id": r, "message": m} for s, c, r, m in sorted(found)]

    answered = CorrectionRequest.objects.filter(run=run, answered_in=new).order_by("pk")
    changed = {c.record_id for c in changes if c.change != "added"}
    stale = Mapping.objects.filter(run=run, source__in=changed, state=Mapping.State.STALE).order_by("pk")
    return {
        "member": new.member.role, "from": old.version, "to": new.version,
        "from_sha256": old.sha256, "to_sha256": new.sha256,
        "records": [c.as_dict() for c in changes],
        "findings": {"gained": listed(new_findings - old_findings), "lost": listed(old_findings - new_findings)},
        "requests_answered": [{"id": r.pk, "text": r.text, "answer": r.answer, "answer_text": r.answer_text,
                               "state": r.state} for r in answered],
        "stale_mappings": [{"id": m.pk, "source": m.source, "relation": m.relation, "target": m.target}
                           for m in stale],
    }

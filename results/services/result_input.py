"""The renderer's input: plain data gathered from the re-hashed members and the reviewers' decisions."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from django.core.serializers.json import DjangoJSONEncoder

from reconcile import dispositions
from reconcile.models import AmendmentDecision as AmendmentDecisionRow
from reconcile.models import CanonicalRecord, CorrectionRequest, Mapping
from reconcile.models import IssueDecision as IssueDecisionRow
from reconcile.passes.record import independent_reviews
from reconcile.services import amendment_sha256, superseded_pairs
from records.document import ParsedReport
from records.models import IntegrationIssue, MemberVersion
from records.services import member_name, quotations
from reviews.models import Run

from .. import rendering
from ..models import Approval

RESULT_DISPOSITIONS = ("complete", "blocked", "out-of-scope")
# Sections of a member that the result carries elsewhere, not as verbatim prose.
NOT_PROSE = {
    "shared records",
    "integration issues",
    "annotations",
    "reconciliation",
    "source register",
    "boundary and evidence",
}
BOUNDARY_SECTION = "boundary and evidence"


class FinalizationRefused(Exception):
    """The stored bytes or their validation no longer support the approved result."""


@dataclass(frozen=True)
class VerifiedMember:
    version: MemberVersion
    data: bytes
    report: ParsedReport

    @property
    def name(self) -> str:
        return member_name(self.version)

    @property
    def role(self) -> str:
        return self.version.member.role

    @property
    def shown_name(self) -> str:
        """The file name the run page and the API show (the uploaded name), which the result uses too;
        `name` is the set layout's name that manifests pin."""
        return self.version.filename or self.name


def _top_sections(report: ParsedReport):
    sections = list(report.sections)
    if sum(1 for s in sections if s.level == 1) > 1:
        top = 1
    else:
        levels = [s.level for s in sections if s.level > 1]
        top = min(levels) if levels else 1
    return [s for s in sections if s.level == top]


def _norm(title: str) -> str:
    return re.sub(r"\s+", " ", title).strip().lower()


def _section_body(report: ParsedReport, section) -> str:
    lines = report.text.splitlines(keepends=True)
    return "".join(lines[section.line_start:section.line_end]).strip("\n")


def _prose_and_boundary(member: VerifiedMember) -> tuple[tuple[tuple[str, str], ...], str]:
    prose, boundary = [], ""
    for section in _top_sections(member.report):
        title = _norm(section.title)
        if title == BOUNDARY_SECTION:
            boundary = _section_body(member.report, section)
        elif title not in NOT_PROSE and member.role != "result":
            prose.append((section.title, _section_body(member.report, section)))
    return tuple(prose), boundary


def _aliases(canonical: list[CanonicalRecord], accepted: list[Mapping]) -> dict[str, str]:
    """Every ID a member may have used for a canonical record → its canonical ID."""
    active = {c.canonical_id for c in canonical if c.state == CanonicalRecord.State.ACTIVE}
    aliases = {c.source_record_id: c.canonical_id for c in canonical
               if c.canonical_id in active and c.source_record_id}
    for m in accepted:
        if m.target in active and m.relation in (Mapping.Relation.SAME, Mapping.Relation.NEW):
            aliases.setdefault(m.source, m.target)
    aliases.update({cid: cid for cid in active})
    return aliases


def _declaration(members: list[VerifiedMember], record_id: str) -> tuple[str | None, str]:
    """(the declaration's body, the shown name of the member declaring it), or (None, "")."""
    for member in members:
        for declaration in member.report.declarations:
            if declaration.record_id == record_id:
                return declaration.body, member.shown_name
    return None, ""


def _decision_word(state: str) -> str:
    return {"accepted": "accept", "rejected": "reject", "carried": "carry"}.get(state, state)


def gather_result_input(
    *, run: Run, approval: Approval, members: list[VerifiedMember], canonical: list[CanonicalRecord],
    mappings: list[Mapping], warnings: int, standing: dispositions.Standing,
) -> rendering.ResultInput:
    """The renderer's input for a set that re-validated without errors (any error refuses finalization)."""
    accepted = [m for m in mappings if m.state == Mapping.State.ACCEPTED]
    aliases = _aliases(canonical, accepted)
    member_entries, sources = _members_and_sources(members)
    issue_entries, rejected = _issues(members)
    amendments, conflicts = _amendment_entries(members, aliases)
    disposition, profile = _front_matter_facts(members)
    return rendering.ResultInput(
        run_id=run.run_id, system=run.system, title=run.title, run_date=_iso(run.run_date),
        result_disposition=disposition, target_class=run.target_class, boundary_kind=run.boundary_kind,
        reviewed_boundary=run.reviewed_boundary, evidence_tier=run.evidence_tier,
        analysis_cutoff=_iso(run.analysis_cutoff),
        verification=_verification(run, approval, members, warnings),
        memory_comparison=_plain_json(profile),
        members=tuple(member_entries),
        sources=tuple(sources),
        canonical_records=tuple(_canonical_entries(members, canonical, _annotations(members, aliases))),
        mappings=tuple(rendering.MappingEntry(source=m.source, relation=m.relation, target=m.target or "")
                       for m in accepted),
        integration_issues=tuple(issue_entries),
        amendments=tuple(amendments),
        unresolved_conflicts=tuple(conflicts),
        rejected_items=tuple(rejected + _rejected_records(canonical)),
        corrections=_corrections(run),
        dispositions=tuple(rendering.DispositionEntry(
            member=d.member, record=d.record, disposition=d.disposition, relation=d.relation, target=d.target,
            rationale=d.rationale, alternatives=d.alternatives) for d in standing.dispositions),
        independent_reviews=independent_reviews(run),
    )


def _annotations(members: list[VerifiedMember], aliases: dict[str, str]) -> dict[str, list[rendering.AnnotationEntry]]:
    """Each canonical record's annotations by the members, through the aliases."""
    annotations: dict[str, list[rendering.AnnotationEntry]] = {}
    for member in members:
        for annotation in member.report.annotations:
            canonical_id = aliases.get(annotation.target)
            if canonical_id is not None:
                annotations.setdefault(canonical_id, []).append(
                    rendering.AnnotationEntry(member=member.shown_name, target=annotation.target, text=annotation.body)
                )
    return annotations


def _canonical_entries(members: list[VerifiedMember], canonical: list[CanonicalRecord],
                       annotations: dict[str, list[rendering.AnnotationEntry]]) -> list[rendering.CanonicalEntry]:
    records = []
    for c in canonical:
        if c.state != CanonicalRecord.State.ACTIVE:
            continue
        declared_as = c.source_record_id or c.canonical_id
        body, declared_in = _declaration(members, declared_as)
        renamed = declared_as != c.canonical_id and body is not None  # RT-OBJ-2 entered as OBJ-2
        records.append(rendering.CanonicalEntry(
            canonical_id=c.canonical_id, kind=c.kind, label=c.label, text=c.text if body is None else body,
            annotations=tuple(annotations.get(c.canonical_id, ())),
            declared_as=declared_as if renamed else "", declared_in=declared_in if renamed else "",
        ))
    return records


def _members_and_sources(members: list[VerifiedMember]) -> tuple[list[rendering.MemberEntry], list[rendering.SourceEntry]]:
    """Each member's entry, and the run's sources in the order the members first register them."""
    member_entries, sources, seen_sources = [], [], set()
    for member in members:
        prose, boundary = _prose_and_boundary(member)
        member_entries.append(rendering.MemberEntry(
            name=member.shown_name, role=member.role, version=member.version.version, sha256=member.version.sha256,
            boundary_text=boundary, prose_sections=prose,
        ))
        for row in member.report.sources:
            if row.source_id not in seen_sources:
                seen_sources.add(row.source_id)
                sources.append(rendering.SourceEntry(source_id=row.source_id, columns=row.columns))
    return member_entries, sources


def _issues(members: list[VerifiedMember]) -> tuple[list[rendering.IssueDecision], list[rendering.RejectedItem]]:
    """Every integration issue with its decision, and the rejected ones as rejected items."""
    issue_entries, rejected = [], []
    issues = (IntegrationIssue.objects.filter(member_version__in=[m.version for m in members])
              .select_related("member_version__member", "decision").order_by("member_version__member__role", "index"))
    for issue in issues:
        decision = getattr(issue, "decision", None)
        role = issue.member_version.member.role
        state = decision.state if decision is not None else "proposed"
        issue_entries.append(rendering.IssueDecision(
            member=role, index=issue.index, text=issue.text, decision=_decision_word(state),
            rationale=decision.rationale if decision is not None else "", decided_by=decision.decided_by if decision else "",
        ))
        if state == IssueDecisionRow.State.REJECTED:
            rejected.append(rendering.RejectedItem(
                item=f"integration issue {issue.index} of the {role} report",
                consequence="the refinement or conflict it states is not carried into the shared records",
                rationale=decision.rationale,
            ))
    return issue_entries, rejected


def _rejected_records(canonical: list[CanonicalRecord]) -> list[rendering.RejectedItem]:
    """Rejected canonical records. A rejected mapping is not a limitation by itself: its record either has
    another, accepted place (the rejection is an alternative not taken, in Reconciliation) or has none
    (disposition `rejected`, in Limitations), as `standing` says."""
    return [rendering.RejectedItem(
        item=f"canonical record {c.canonical_id}",
        consequence=f"{c.canonical_id} ({c.label or c.kind}) is not part of the shared records",
        rationale=c.rationale, record=c.canonical_id,
        declared_as=c.source_record_id if c.source_record_id != c.canonical_id else "",
    ) for c in canonical if c.state == CanonicalRecord.State.REJECTED]


def _front_matter_facts(members: list[VerifiedMember]) -> tuple[str, dict | None]:
    """The result disposition the members declare (complete by default) and the memory-comparison profile."""
    fronts = [m.report.front_matter for m in members if isinstance(m.report.front_matter, dict)]
    disposition = next((f.get("result-disposition") for f in fronts
                        if f.get("result-disposition") in RESULT_DISPOSITIONS), "complete")
    profile = next((f["memory-comparison"] for f in fronts if isinstance(f.get("memory-comparison"), dict)), None)
    return disposition, profile


def _verification(run: Run, approval: Approval, members: list[VerifiedMember], warnings: int) -> rendering.Verification:
    return rendering.Verification(
        approval_note=approval.note, approved_by=approval.approved_by,
        approved_at=approval.approved_at.isoformat(timespec="seconds"),
        errors=0, warnings=warnings, manifest_sha256=approval.manifest_sha256,
        quotations=quotations.verification_statement(run),
        checks=(
            f"SHA-256 of every stored member version recomputed and matched ({len(members)} members)",
            "run manifest recomputed from the stored member bytes and matched the approved manifest",
            "record contract (DESIGN §6) re-validated on the parse of the re-hashed member bytes, per member "
            "and across the set",
            *(("every quotation of the re-hashed member bytes re-checked against the stored source snapshot",)
              if quotations.current_snapshot(run) is not None else ()),
            "every mapping, integration issue, amendment and unresolved conflict decided before approval",
        ),
    )


def _corrections(run: Run) -> tuple[rendering.CorrectionEntry, ...]:
    return tuple(rendering.CorrectionEntry(
        number=c.pk, member=c.member, record=c.record_id, text=c.text, author=c.author, state=c.state,
        answer=c.answer, answer_text=c.answer_text,
        answered_in=f"{c.member} v{c.answered_in.version}" if c.answered_in_id else "")
        for c in CorrectionRequest.objects.filter(run=run).select_related("answered_in").order_by("pk"))


def amended_records(paragraph, aliases: dict[str, str]) -> tuple[str, ...]:
    """The canonical records whose shared text a value amendment changes: those the paragraph opens
    with (`EPI-OBJ-3 supersedes `Part of: …` with …`, `RTE-2 and RTE-3's … statements are narrowed …`),
    through the aliases; none for a supersession (its mapping says it) or a paragraph opening otherwise."""
    if superseded_pairs(paragraph.text):
        return ()
    opening = _OPENING_IDS.match(paragraph.text)
    if opening is None:
        return ()
    found = (aliases.get(record_id) for record_id in re.findall(_ID, opening.group(0)))
    return tuple(dict.fromkeys(c for c in found if c))


_ID = r"(?:[A-Z]+-)?(?:CMP|OBJ|RTE|CLM|ABS|BAP)-(?:\d+|[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*)"
_ONE = rf"[`*]*{_ID}[`*]*(?:'s)?"
# The subject: one ID, or several joined by commas and "and" (`RTE-2 and RTE-3's …`).
_OPENING_IDS = re.compile(rf"^\s*{_ONE}(?:\s*(?:,|and|,\s*and)\s+{_ONE})*(?![\w-])")


def _amendment_entries(members: list[VerifiedMember], aliases: dict[str, str]) -> tuple[list, list]:
    """(amendments, unresolved conflicts) of the re-hashed members, each with the reviewer's
    decision on it (a supersession's follows its mapping) and, for a value amendment, the canonical
    record it amends. A paragraph without a decision on exactly its text refuses finalization:
    approval waits for every one."""
    rows = {(r.member_version_id, r.index): r
            for r in AmendmentDecisionRow.objects.filter(member_version__in=[m.version for m in members])}
    amendments, conflicts = [], []
    for member in members:
        for index, paragraph in enumerate(member.report.amendments, start=1):
            row = rows.get((member.version.pk, index))
            if (row is None or row.is_open
                    or row.content_sha256 != amendment_sha256(paragraph.kind, paragraph.text)):
                raise FinalizationRefused(
                    f"{member.shown_name} line {paragraph.line}: the {paragraph.kind} there has no decision on its "
                    f"current text ({row.state if row is not None else 'none recorded'})")
            entry = rendering.AmendmentDecision(
                text=paragraph.text, decision=_decision_word(row.state), rationale=row.rationale,
                member=member.shown_name, line=paragraph.line, decided_by=row.decided_by,
                amends=amended_records(paragraph, aliases)
                if paragraph.kind == AmendmentDecisionRow.Kind.AMENDMENT else (),
            )
            (conflicts if paragraph.kind == AmendmentDecisionRow.Kind.UNRESOLVED_CONFLICT else amendments).append(entry)
    return amendments, conflicts


def _iso(value) -> str:
    return value.isoformat() if value else ""


def _plain_json(value):
    """Front matter values as JSON data (YAML may give dates)."""
    if value is None:
        return None
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))

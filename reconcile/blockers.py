"""Where a run stands: the database read into `reconcile.dispositions`' plain facts, in this one place, and
judged by the rule book, `reconcile.approval_rules` (DESIGN §5).

`run_standing(run)` is the one question every caller asks: the approval service (once per
approve), the run page's and the result page's approval panel, the reconciliation page (beside its
counters, and its conflicts filter), `GET /api/runs/{run_id}/blockers/` and `result.json`'s
dispositions. A fixed number of queries, whatever the run's size.
"""
from __future__ import annotations

import functools
from dataclasses import replace

from records import manifests as archives
from records.models import Finding, IntegrationIssue, MemberVersion, Record, ValidationReport
from records.services import current_versions
from records.services.collector import collector_paused
from reviews.kept import KeptByHead
from reviews.models import Run

from . import approval_rules
from . import dispositions as d
from .models import AmendmentDecision, CanonicalRecord, Conflict, CorrectionRequest, IssueDecision, Mapping, ReviewPass
from .paragraphs import amendment_sha256, stated_paragraphs, supersession_keys
from .passes.world import active_world, consensus_made
from .standing_update import standing_after
from .vocabulary import SEEDING_ROLES

# How many validation errors get a blocker each before one blocker says how many more there are.
FIRST_ERRORS = 20




def member_names(versions: list[MemberVersion]) -> dict[str, str]:
    """role → the member's file name as the run page shows it: the uploaded file name, or (for content
    posted as JSON, without one) the set layout's name (`memory.md`)."""
    return {v.member.role: (v.filename or archives.member_filename(v.member.role)) for v in versions}


def _run_state(run: Run, versions: list[MemberVersion]) -> dict:
    """The facts about the run as a whole (`RunFacts` status, has_members, corrections, passes, validation),
    each read only when a rule can ask it: without members nothing more; the validation report only for a
    current manifest, its errors only when it has some; the consensus only once every pass is submitted,
    the conflicts only once it is made."""
    state = {"status": run.status, "has_members": bool(versions)}
    if not versions:
        return state
    state["corrections"] = _corrections(run)
    if run.reviews_required > 1:
        state["passes"] = _passes(run)
    # From the recorded hashes, as validation computed the run's: asked on every page and decision, this
    # must not read and hash every member's bytes. Approval checks the bytes against them.
    pins = {archives.member_filename(v.member.role): v.sha256 for v in versions}
    digest = archives.manifest_sha256(archives.build_manifest(pins))
    validation = d.ValidationFact(validated=run.manifest_sha256, current=digest)
    if run.manifest_sha256 == digest:
        report = ValidationReport.objects.filter(run=run, manifest_sha256=digest).order_by("-created_at", "-id").first()
        if report is not None:
            errors = (Finding.objects.filter(report=report, severity=Finding.Severity.ERROR).order_by("id")
                      .values_list("code", "member", "record_id", "line", "message")[:FIRST_ERRORS]
                      if report.errors else ())
            validation = replace(validation, errors=report.errors, first_errors=tuple(map(d.ErrorFact._make, errors)))
    state["validation"] = validation
    return state


def _part_of(fields) -> tuple[str, ...]:
    found = []
    for item in fields or []:
        label = item.get("label", "") if isinstance(item, dict) else (item[0] if item else "")
        value = item.get("value", "") if isinstance(item, dict) else (item[1] if len(item) > 1 else "")
        if str(label).strip().lower() == "part of":
            found += d.ids_in(str(value))
    return tuple(dict.fromkeys(found))


def run_facts(run: Run, versions: list[MemberVersion] | None = None, *, kept_records: bool = False) -> d.RunFacts:
    """The run's current decisions as plain facts. Its records' facts as last read for the same current
    versions when `kept_records` (`_record_facts`: pages, decisions' answers, the coherence check), else
    read now (approval and finalization, which sign a result on them)."""
    versions = list(current_versions(run)) if versions is None else versions
    role_of = {v.pk: v.member.role for v in versions}
    deciding = tuple((v.pk, v.member.role, v.status, v.attempts, v.claimed_at, v.parsed_at) for v in versions
                     if v.member.role not in SEEDING_ROLES)
    records = _record_facts(deciding) if kept_records else _record_facts.__wrapped__(deciding)
    member_of = _members_of(deciding) if kept_records else {r.pk: r.member for r in records}
    mappings = _mapping_facts(run, member_of)
    canonical = [d.CanonicalFact(canonical_id=c[0], state=c[1], rationale=c[2], source_record_id=c[3])
                 for c in CanonicalRecord.objects.filter(run=run).values_list(
                     "canonical_id", "state", "rationale", "source_record_id")]
    decisions = dict(IssueDecision.objects.filter(issue__member_version__in=versions).values_list("issue_id", "state"))
    issues = [d.IssueFact(pk=i["pk"], member=role_of[i["member_version_id"]], index=i["index"],
                          state=decisions.get(i["pk"], d.PROPOSED), references=tuple(i["references"] or ()))
              for i in IntegrationIssue.objects.filter(member_version__in=versions)
              .order_by("member_version__member__role", "index").values("pk", "member_version_id", "index",
                                                                         "references")]
    return d.RunFacts(run_id=run.run_id, records=tuple(records), mappings=tuple(mappings),
                      canonical=tuple(canonical), issues=tuple(issues), amendments=tuple(_amendments(versions)),
                      **_run_state(run, versions))


def _mapping_facts(run: Run, member_of: dict[int, str]) -> list[d.MappingFact]:
    """The run's mappings as facts, 50,000 of them after every decision: read from their own table alone,
    each source record's member taken from `member_of` (record pk → role: the declarations' facts), and
    only for a record outside those (a seeding member's, an earlier version's) from its member's row."""
    rows = list(Mapping.objects.filter(run=run).order_by("pk").values_list(
        "pk", "source", "relation", "target", "state", "rationale", "source_record_id"))
    missing = {row[6] for row in rows if row[6] is not None and row[6] not in member_of}
    if missing:
        member_of = member_of | dict(Record.objects.filter(pk__in=missing)
                                     .values_list("pk", "member_version__member__role"))
    member, fact = member_of.get, d.MappingFact._make
    return [fact((pk, source, relation, target, state, rationale, member(record, "")))
            for pk, source, relation, target, state, rationale, record in rows]


@functools.lru_cache(maxsize=4)
def _members_of(versions: tuple) -> dict[int, str]:
    """Record pk → member role of `_record_facts(versions)`, kept beside them (never changed: callers copy)."""
    return {r.pk: r.member for r in _record_facts(versions)}


@functools.lru_cache(maxsize=4)
def _record_facts(versions: tuple) -> tuple[d.RecordFact, ...]:
    """The declarations of these deciding member versions, each `(pk, role, status, attempts, claimed_at,
    parsed_at)`, kept per process for a few version sets. Only a parse writes a version's records
    (`records.services.parse._commit_parse`: deleting any an earlier claim wrote, in the transaction that
    sets its own claim's count, claim time and parse time), so the same values read the same records.
    A decision leaves them as they were: the standing after it reads the mappings again, not 50,000
    records' fields (a third of that standing's time)."""
    role_of = {pk: role for pk, role, *_ in versions}
    return tuple(
        d.RecordFact(member=role_of[r["member_version_id"]], record_id=r["record_id"], pk=r["pk"],
                     part_of=_part_of(r["fields"]))
        for r in Record.objects.filter(member_version__in=list(role_of), record_type=Record.Type.DECLARATION)
        .order_by("member_version__member__role", "ordinal").values("pk", "record_id", "member_version_id", "fields"))


def _amendments(versions: list[MemberVersion]) -> list[d.AmendmentFact]:
    """Each amendment and conflict paragraph of the current versions with its decision, read from the
    stored paragraphs, so a version sync has not reached yet (or a changed text) counts as open."""
    rows = {(r.member_version_id, r.index): r for r in AmendmentDecision.objects.filter(member_version__in=versions)}
    found = []
    for version in versions:
        role = version.member.role
        for index, paragraph in enumerate(stated_paragraphs(version), start=1):
            row = rows.get((version.pk, index))
            if row is None:
                state = "not yet synced"
            elif row.content_sha256 != amendment_sha256(paragraph["kind"], paragraph["text"]):
                state = "text changed since its decision"
            else:
                state = row.state
            found.append(d.AmendmentFact(
                pk=row.pk if row else None, member=role, line=paragraph["line"], kind=paragraph["kind"], state=state,
                text=paragraph["text"],
                supersession=bool(supersession_keys(role, paragraph["kind"], paragraph["text"]))))
    return found


def _corrections(run: Run) -> tuple[d.CorrectionFact, ...]:
    """The correction requests open (waiting for the analyst) or answered (waiting for a reviewer)."""
    return tuple(d.CorrectionFact(*row) for row in CorrectionRequest.objects.filter(
        run=run, state__in=(CorrectionRequest.State.OPEN, CorrectionRequest.State.ANSWERED))
        .order_by("raised_at", "id").values_list("pk", "member", "record_id", "state", "text"))


def _passes(run: Run) -> d.PassesFact:
    """The submitted passes of a run in independent review and, once all are in, their consensus (DESIGN §3)."""
    submitted = tuple(ReviewPass.objects.filter(run=run, state=ReviewPass.State.SUBMITTED).order_by("number")
                      .values_list("reviewer__username", flat=True))
    if len(submitted) < run.reviews_required or not consensus_made(run):
        return d.PassesFact(run.reviews_required, submitted)
    return d.PassesFact(run.reviews_required, submitted, consensus_made=True, conflicts=tuple(
        Conflict.objects.filter(run=run, state=Conflict.State.OPEN).values_list("pk", "name")))


def run_standing(run: Run, versions: list[MemberVersion] | None = None, *, kept: bool = False) -> d.Standing:
    """One disposition per member record and every blocker of approval, for `run` as it is now.

    With `kept` (pages, a decision's answer, the coherence check): the records' facts as last read for
    the same current versions (`run_facts`), and the standing built from the one this process last kept
    for the run, judging again only what changed (`reconcile.standing_update`); never inside a reviewer's
    own review pass. Approval and finalization build theirs from scratch, from what they read now.

    With the cyclic collector paused (`records.services.collector`): a standing's facts and dispositions
    are a few objects per record, all kept, none in a cycle, and at 20,000 records the collector's passes
    over the process's heap (the kept standings of other runs among it) were a third to a half of the
    time, freeing nothing."""
    with collector_paused():
        facts = run_facts(run, versions, kept_records=kept)
        if not kept or active_world(run) is not None:
            return approval_rules.standing(facts)
        standing = standing_after(_LATEST.latest(run, "standing"), facts)
        _LATEST.keep(run, "standing", standing)
        return standing


# A few runs' standings and counters (a standing of 50,000 records is large); the reconciliation page's
# shared part of a few dozen views (one page of rows each); the runs list's progress of a few pages of runs.
_KEPT = KeptByHead(size=8)
_KEPT_PAGES = KeptByHead(size=32)
_KEPT_LISTED = KeptByHead(size=400)  # a progress and a row per run


# Run pk → the standing last built for it with `kept`, in any state (even one a refused decision then
# rolled back): what the next is built from, as `standing_after` is exact whatever it starts from.
_LATEST = KeptByHead(size=8)


def forget_kept(*, views_only: bool = False) -> None:
    """Drop everything kept (or only the reconciliation page's views), as a moved chain head would: for a
    test that writes behind the services' back (no event), or the bench measuring a first view."""
    for store in (_KEPT_PAGES,) if views_only else (_KEPT, _KEPT_PAGES, _KEPT_LISTED, _LATEST):
        store.clear()
    if not views_only:
        _record_facts.cache_clear()
        _members_of.cache_clear()


def kept_for_head(run: Run, name: str, compute, *, store: KeptByHead = _KEPT):
    """`compute(run)`, kept per process for the run's audit chain head as `run` was read.

    Every change of what a standing or the decision counters are computed from is made by a service that
    writes an event on the run's chain in the same transaction, so a head names one state of the run: a
    page that read the run at its request's start and changes nothing (the reconciliation page's GET)
    reuses what was computed for that state instead of going over every record and mapping again (issue
    23 item 5). Approval and the API build theirs from scratch. A decision's answer asks it for the run read
    again after its service returned (`views.context._standing_for`): built from the last standing
    (`run_standing(kept=True)`) and kept for the head that decision left, it is what the page view after
    the answer reads.
    """
    if active_world(run) is not None:
        # A reviewer's own review pass laid over the rows: what it shows is theirs alone (blind to others,
        # DESIGN §2), under the shared rows' chain head; never kept, never taken from what was kept.
        return compute(run)
    return store.kept(run, name, compute)


def kept_page(run: Run, view: str, compute):
    """`compute(run)` for one view of the reconciliation page (its filters, its page of rows and the
    controls its reader may use, all named in `view`), kept for the run's chain head as `kept_for_head`
    keeps a standing: readers of an unchanged run share it instead of reading and building the same
    rows again per request."""
    return kept_for_head(run, view, compute, store=_KEPT_PAGES)


def kept_standing(run: Run) -> d.Standing:
    """`run_standing(run)`, kept for the run's chain head (`kept_for_head`)."""
    return kept_for_head(run, "standing", functools.partial(run_standing, kept=True))


def kept_for_heads(runs, compute_many, *, name: str = "progress") -> dict[int, object]:
    """{run pk: value} for these runs, each kept for its chain head as `kept_for_head` keeps one (the runs
    list reads no review pass), `compute_many([run, …])` asked only for the runs whose head has moved: the
    runs list's decision progress, which counts every mapping of a run, and each run's row of the list."""
    found = {run.pk: _KEPT_LISTED.get_for(run, name) for run in runs}
    moved = [run for run in runs if found[run.pk] is None]
    if moved:
        computed = compute_many(moved)
        for run in moved:
            found[run.pk] = computed[run.pk]
            _KEPT_LISTED.keep(run, name, computed[run.pk])
    return found

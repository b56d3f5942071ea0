"""The run's frozen source snapshot, and its quotations checked against it (DESIGN §4, §6).

`upload_source_snapshot` stores an archive of the reviewed commit's files in
the database, each file's bytes once per SHA-256 (`SourceBlob`), so a worker
on any host reads them; the same archive again is no new work. It queues the
run's validation, which calls `check_quotations`: every citation of every
current member is checked (`records.validation.quotes`) against the current snapshot,
the per-citation results are kept (`QuotationCheck`) and their findings join
the run's validation findings, so errors block approval.
"""
from __future__ import annotations

import logging
from collections import namedtuple
from collections.abc import Sequence

from django.db import transaction

from reviews.models import Run

from ..validation import quotes
from ..models import MemberVersion, QuotationCheck, SourceSnapshot
from ..validation import Finding, MemberInput, current_form
from .current import current_versions
from .rows import insert_rows

logger = logging.getLogger(__name__)

# The export carries the snapshot's archive up to this size (its file list always).
BUNDLE_ARCHIVE_MAX_BYTES = 10 * 1024 * 1024


def current_snapshot(run: Run) -> SourceSnapshot | None:
    return SourceSnapshot.objects.filter(run=run).order_by("-activated_at", "-id").first()


def _snapshot_files(snapshot: SourceSnapshot, cited: set[str]) -> quotes.SnapshotFiles:
    """The snapshot's files that `cited` paths name, decoded, with every path of the snapshot indexed."""
    paths = quotes.SnapshotPaths(snapshot.files.values_list("path", flat=True))
    wanted = {resolved for path in cited if (resolved := paths.resolve(path)) is not None}
    loaded = {f.path: quotes.SourceText(bytes(f.blob.content).decode("utf-8", errors="replace"))
              for f in snapshot.files.filter(path__in=wanted).select_related("blob")}
    return quotes.SnapshotFiles(loaded, paths)


CHECK_FIELDS = ("run_id", "member_version_id", "snapshot_id", "ordinal", "kind", "line", "text", "path", "lines", "commit",
                "status", "message", "source_lines", "candidates")
# A QuotationCheck row with its values named as the model's attributes (`_signature` reads either).
CheckRow = namedtuple("CheckRow", CHECK_FIELDS)


def _rows(run: Run, version: MemberVersion, snapshot: SourceSnapshot | None,
          results: Sequence[quotes.CheckResult]) -> list[CheckRow]:
    snapshot_pk = snapshot.pk if snapshot is not None else None
    return [
        CheckRow(run.pk, version.pk, snapshot_pk, ordinal, r.citation.kind, max(r.citation.line, 0), r.citation.text,
                 r.citation.path[:1024], r.citation.lines[:60], r.citation.commit[:64], r.status, r.message,
                 [list(line) for line in r.source_lines], list(r.candidates))
        for ordinal, r in enumerate(results, start=1)
    ]


def _signature(rows) -> list[tuple]:
    return sorted((r.member_version_id, r.ordinal, r.snapshot_id, r.kind, r.line, r.path, r.lines, r.commit,
                   r.status, r.message, r.text) for r in rows)


def check_quotations(
    *, run: Run, versions: Sequence[MemberVersion], inputs: Sequence[MemberInput], found: Sequence[Finding],
) -> tuple[list[Finding], dict | None]:
    """Check every citation of `inputs` (parsed `versions`, in the same order) against the current snapshot.

    Keeps one QuotationCheck per citation of the current versions (rows of
    older versions are dropped). Returns `found` with the check's findings,
    and what changed for the validation's audit event (`run.validated`'s
    `after.quotations`): the snapshot and the totals per status, or None when
    the same members and snapshot left the rows as they were. A failure of
    the check itself (a bug, not bad content) leaves the rows as they were and
    becomes one error finding, so the run's validation still completes and
    approval waits.
    """
    change = None
    try:
        with transaction.atomic():  # a savepoint: a failed check rolls back only its own writes
            quote_findings, change = _check(run=run, versions=versions, inputs=inputs)
    except Exception as error:  # noqa: BLE001 — recorded as a finding; the traceback goes to the log
        logger.exception("quotation check failed on run %s", run.run_id)
        quote_findings = [Finding("quote-check-failed", "error", "", "", 0,
                                  f"The quotation check failed ({type(error).__name__}: {error}); quotations are "
                                  "unchecked. Upload the snapshot again or report this to an administrator.")]
    return quotes.merge_findings(found, quote_findings), change


def _results(run: Run, inputs: Sequence[MemberInput]):
    """(snapshot, each member's check results, the findings) of `inputs` against the current snapshot; no writes."""
    snapshot = current_snapshot(run)
    citations = [quotes.citations_of(member.report) for member in inputs]
    files = None
    if snapshot is not None:
        files = _snapshot_files(snapshot, {c.path for cited in citations for c in cited})
    current = current_form(inputs)  # validation's rule of generations, asked of validation
    per_member, quote_findings = [], []
    for member, cited in zip(inputs, citations):
        results = [quotes.check_citation(c, files, run_commit=run.reviewed_boundary) for c in cited]
        per_member.append(results)
        quote_findings += quotes.findings_for(member.name, results, current=current[member.name])
    return snapshot, per_member, quote_findings


def recheck_quotations(*, run: Run, inputs: Sequence[MemberInput], found: Sequence[Finding]) -> list[Finding]:
    """`found` with the quotation findings of `inputs` checked afresh against the stored snapshot, writing
    nothing: finalization re-verifies the quotations of the bytes it has just re-hashed."""
    return quotes.merge_findings(found, _results(run, inputs)[2])


def _check(*, run: Run, versions: Sequence[MemberVersion],
           inputs: Sequence[MemberInput]) -> tuple[list[Finding], dict | None]:
    snapshot, per_member, quote_findings = _results(run, inputs)
    rows: list[CheckRow] = []
    for version, results in zip(versions, per_member):
        rows += _rows(run, version, snapshot, results)
    existing = QuotationCheck.objects.filter(run=run)
    before = _signature(existing)
    if len(before) == len(rows) and before == _signature(rows):  # a signature has a tuple per row
        return quote_findings, None
    if before:  # a run's first validation has none to drop: one statement fewer per first upload
        existing.delete()
    insert_rows(QuotationCheck, CHECK_FIELDS, rows)
    change = {"snapshot_sha256": snapshot.archive_sha256 if snapshot else None,
              "quotations": quotes.totals([r.status for r in rows if r.kind == QuotationCheck.Kind.QUOTATION]),
              "anchors": quotes.totals([r.status for r in rows if r.kind == QuotationCheck.Kind.ANCHOR])}
    return quote_findings, change


def quotation_summary(run: Run) -> dict:
    """The snapshot and the totals per status of the run's current quotations (for pages and the result)."""
    snapshot = current_snapshot(run)
    checks = QuotationCheck.objects.filter(run=run, kind=QuotationCheck.Kind.QUOTATION,
                                           member_version__in=current_versions(run))
    statuses = list(checks.values_list("status", flat=True))
    counts = quotes.totals(statuses)
    return {"snapshot": snapshot, "snapshot_sha256": snapshot.archive_sha256 if snapshot else None,
            "totals": counts, "total": len(statuses), "verified": counts[quotes.VERIFIED]}


def export_source(run: Run, make_entries):
    """The export's source files, `make_entries(archive_sha256=, commit=, file_count=, total_bytes=, archive=)`
    for the current snapshot (its archive only up to BUNDLE_ARCHIVE_MAX_BYTES); None without a snapshot."""
    snapshot = current_snapshot(run)
    if snapshot is None:
        return None
    archive = bytes(snapshot.archive.content) if snapshot.archive.size <= BUNDLE_ARCHIVE_MAX_BYTES else None
    return make_entries(archive_sha256=snapshot.archive_sha256, commit=snapshot.commit,
                        file_count=snapshot.file_count, total_bytes=snapshot.total_bytes, archive=archive)


def verification_statement(run: Run) -> str:
    """"N of M quotations verified against snapshot <sha256>" (or that no snapshot was uploaded)."""
    summary = quotation_summary(run)
    if summary["snapshot"] is None:
        return (f"0 of {summary['total']} quotations verified: no source snapshot was uploaded "
                "(quotations unverified).")
    return (f"{summary['verified']} of {summary['total']} quotations verified against snapshot "
            f"{summary['snapshot_sha256']}.")

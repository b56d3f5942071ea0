"""Records' services: a module per concern, re-exported here for callers (STYLE.md "Where code lives").

refusals (why an upload is refused), current (a run's current member set), upload, parse, validate,
quotations (checked against the source snapshot), snapshots (the snapshot itself), recovery (the
sweep), bundles (run directories). `jobs` names the work they queue after commit.
"""
from .bundles import import_bundle, ingest_bundle, read_bundle
from .current import current_versions, member_files, member_name, run_manifest
from .jobs import PARSE, RUN_VALIDATED, VALIDATE
from .parse import parse_member_version
from .recovery import sweep_stuck_members
from .refusals import (AnswersRefused, BundleRefused, BundleTooLarge, EmptyReport, NotParticipant, NotText, ReportTooLarge, RunClosed, RunFinal,
                       UnknownRole, UploadRefused, check_report_bytes, known_role, refuse_closed_run)
from .upload import ingest_member_report
from .validate import judge_member_set, latest_validation, request_validation, validate_requested, validate_run

__all__ = [
    "judge_member_set",
    "AnswersRefused", "BundleRefused", "BundleTooLarge", "EmptyReport", "NotParticipant", "NotText", "PARSE", "RUN_VALIDATED", "ReportTooLarge",
    "RunClosed", "RunFinal", "UnknownRole", "UploadRefused", "VALIDATE", "check_report_bytes", "current_versions",
    "import_bundle", "ingest_bundle", "ingest_member_report", "known_role", "latest_validation", "member_files",
    "member_name", "parse_member_version", "read_bundle", "refuse_closed_run", "request_validation",
    "run_manifest", "sweep_stuck_members", "validate_requested", "validate_run",
]

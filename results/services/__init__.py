"""Results' services, a module per concern (STYLE.md "Where code lives"), re-exported here for callers:
approval (sign-off and reopening), finalization (the result rendered, checked and stored; its
sweep), result_input (the renderer's plain data), export (the run as a bundle)."""
from .approval import (MAX_NOTE_CHARS, ApprovalBlocked, NoteRequired, approval_blockers, approve_run,
                       current_approval, reopen_run)
from .export import audit_json, export_bundle
from .finalization import finalize_run, render_approved, retry_finalize, sweep_unfinished_finalizations
from .jobs import FINALIZE
from .result_input import FinalizationRefused, VerifiedMember, gather_result_input
from .run_status import finalization_failed

__all__ = [
    "FINALIZE", "MAX_NOTE_CHARS", "ApprovalBlocked", "FinalizationRefused", "NoteRequired", "VerifiedMember",
    "approval_blockers", "approve_run", "audit_json", "current_approval", "export_bundle", "finalization_failed",
    "finalize_run", "gather_result_input", "render_approved", "reopen_run", "retry_finalize", "sweep_unfinished_finalizations",
]

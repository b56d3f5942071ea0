"""A run's status moves, each made by the service it belongs to (approval: approved and back in review;
finalization: finalizing, final, failed and retried) through `move_run`, which transitions the locked run
and writes the one audit event of the change (DESIGN §3)."""
from __future__ import annotations

from reviews.audit import Actor, record_event
from reviews.models import Run


def move_run(locked: Run, *, status: str, actor: Actor, action: str, reason: str = "", after: dict | None = None) -> None:
    """Transition the locked run and write the one audit event of the change."""
    old = locked.transition_to(status, reason=reason)
    locked.save(update_fields=Run.STATUS_FIELDS)
    record_event(
        run=locked,
        actor=actor,
        action=action,
        object_type="run",
        object_id=locked.run_id,
        before={"status": old},
        after={"status": status, **({"reason": reason} if reason else {}), **(after or {})},
    )


def copy_status(run: Run, locked: Run) -> None:
    """The caller's `run` object takes the status the locked row was left in."""
    run.status, run.status_reason, run.failed_from, run.updated_at = (
        locked.status, locked.status_reason, locked.failed_from, locked.updated_at,
    )


def finalization_failed(run: Run) -> bool:
    """The run failed while finalizing: it can be retried, or reopened like an approved run."""
    return run.status == Run.Status.FAILED and run.failed_from == Run.Status.FINALIZING

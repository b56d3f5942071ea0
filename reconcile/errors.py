"""What the reconciliation services raise: bad input (HTTP 400) or a state that refuses (HTTP 409)."""
from __future__ import annotations


from reviews.models import TransitionError

from .dispositions import mapping_name


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


class RunFinal(RunLocked):
    """The run is final: closed for good (DESIGN §3). Nothing reopens it; revising it starts the next run."""

    code = "run_final"


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
            f"Someone else decided {_named(current)} since this page was loaded: it is now {current.state} "
            f"(version {current.version}); reload it and decide again", "version",
        )


def _named(current) -> str:
    """The item in the reviewer's words (a mapping by its records, never its database ID)."""
    if hasattr(current, "relation") and hasattr(current, "source"):
        return mapping_name(current.source, current.relation, current.target)
    issue = getattr(current, "issue", None)
    if issue is not None:
        return f"{issue.member_version.member.role} integration issue {issue.index}"
    if hasattr(current, "line") and hasattr(current, "member_version"):
        return f"the {current.label.lower()} at line {current.line} of the {current.member_version.member.role} report"
    return str(current)

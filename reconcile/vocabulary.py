"""The words and states every reconciliation service shares: decisions, locked run statuses,
member roles that seed the shared set."""
from __future__ import annotations


from records.models import MemberVersion, Role
from reviews.models import Run

from .models import Decidable

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

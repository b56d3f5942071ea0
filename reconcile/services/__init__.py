"""Reconciliation services: canonical records, mappings and decisions (DESIGN.md §2, §5, §10).

One module per concern, as Zulip split its actions (STYLE.md): `sync` brings the run's current
member versions into canonical records, mappings and issue decisions; `amendments` keeps one
decision per amendment or unresolved-conflict paragraph; `mappings` proposes and checks mappings
and allocates canonical records; `decisions` accepts, rejects and reopens, refusing through
`coherence` an acceptance that would contradict another decision; `revisions` starts a final run's
successor. This package re-exports what callers use, so `from reconcile import services;
services.decide_mapping(...)` keeps working.

Every function is keyword-only and writes one audit event per state change, through
`reviews.audit.record_event`, in the same transaction.

Relations read "source <relation> target", with one exception forced by how reconciliations write
them: `supersedes` comes from `Amendment: X is superseded by Y`, and the mapping's source is the
member record X whose referent is absorbed, its target Y's canonical record. So for `supersedes`
the *target* supersedes the *source*.

Decisions use optimistic concurrency: one conditional UPDATE on (pk, version); a reviewer holding
an older version gets `StaleVersion` carrying the row as it is now (HTTP 409).
"""
from .amendments import (
    CARRIED, DECIDED_STATES, STATING_ORIGINS, amendment_sha256, current_amendment_decisions, stated_paragraphs,
    supersession_keys,
)
from .canonical_ids import next_number, accepted_targets, canonical_id_for, resolve_stated_id
from .coherence import IncoherentDecision
from .decisions import (
    DecisionsPointAtIt, accepted_decisions_on, bulk_accept, bulk_accept_candidates, bulk_accept_suggestions, current_issue_decisions, decide_amendment, decide_issue, decide_mapping,
    decision_progress, reject_canonical_record, undo_bulk_accept,
)
from ..errors import (
    InvalidDecision, ProposalError, RunFinal, RunLocked, StaleVersion, StateConflict, TargetNotSettled,
)
from .mappings import current_declaration, propose_mapping
from .revisions import NotRevisable, next_run_id, revise_run
from .snapshots import amendment_snapshot, canonical_snapshot, issue_snapshot, mapping_snapshot
from ..statements import relation_for, statement_key, superseded_pairs
from .summary import SyncSummary
from .sync import WITHDRAWN_RE, sync_run
from ..vocabulary import (
    ACCEPT, AMENDMENT_DECISIONS, APP_PROPOSER, CARRY, DECISIONS, LOCKED_STATUSES, READY_STATUSES, REJECT, REOPEN,
    SEEDING_ROLES, State,
)

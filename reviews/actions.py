"""The audit actions: every `action` an audit event is written with (DESIGN.md §8), one line each.

Each member is the string stored in `AuditEvent.action` (its value: the hash chain covers it, so a
value never changes), the words the timeline says it in ("Who" did "What" to "Object"), and the
names the event feed (events/feed.py, DESIGN §13) publishes it under: its own name, a renamed one,
more than one, or none (`None`). `SUBSCRIBED` marks the actions whose feed names a subscription gets
unless it names others (events.feed.EVENT_TYPES, in this order). Services write `Action.X`, never a
string; tests/structure/test_audit_actions.py fails on an action written as one.
"""
from __future__ import annotations

from enum import StrEnum

SUBSCRIBED = True


class Action(StrEnum):
    def __new__(cls, value: str, wording: str, feed: str | tuple[str, ...] | None, subscribed: bool = False):
        member = str.__new__(cls, value)
        member._value_ = value
        member.wording = wording
        member.feed = (feed,) if isinstance(feed, str) else tuple(feed or ())
        member.subscribed = subscribed
        return member

    @property
    def feed_name(self) -> str | None:
        """The event type the feed publishes this action as first (None: not published)."""
        return self.feed[0] if self.feed else None

    @classmethod
    def wording_of(cls, code: str) -> str:
        """How the timeline says `code`: its wording, or the code itself for one this vocabulary does not know."""
        try:
            return cls(code).wording
        except ValueError:
            return code

    # reviews: runs, tokens, logins, denials
    RUN_CREATED = "run.created", "created the run", "run.created"
    RUN_STATUS_CHANGED = "run.status_changed", "changed the run's status", "run.status_changed"
    RUN_PARTICIPANTS_CHANGED = "run.participants_changed", "changed the run's participants", "run.participants_changed"
    RUN_REVIEWS_REQUIRED_CHANGED = ("run.reviews_required_changed", "changed how many reviews the run needs",
                                    "run.reviews_required_changed")
    TOKEN_ISSUED = "token.issued", "issued an API token", "token.issued"
    TOKEN_REVOKED = "token.revoked", "revoked an API token", "token.revoked"
    LOGIN_FAILED = "login.failed", "failed to log in", "login.failed"
    LOGIN_LOCKED = "login.locked", "was locked out after failed logins", "login.locked"
    PERMISSION_DENIED = "permission.denied", "was denied access", "permission.denied"
    # records: sources, members, validation, bundles
    SOURCE_UPLOADED = "source.uploaded", "uploaded a source archive", "source.uploaded"
    SOURCE_REUPLOAD_IDENTICAL = ("source.reupload_identical", "uploaded the same source archive again",
                                 "source.reupload_identical")
    MEMBER_UPLOADED = "member.uploaded", "uploaded a report", "member.uploaded"
    MEMBER_REUPLOAD_IDENTICAL = ("member.reupload_identical", "uploaded the same report again",
                                 "member.reupload_identical")
    MEMBER_PARSED = "member.parsed", "parsed a report", "member.parsed"
    MEMBER_PARSE_FAILED = "member.parse_failed", "failed to parse a report", "member.parse_failed"
    MEMBER_REQUEUED = "member.requeued", "queued a report's parse again", "member.requeued"
    # member.validated for the members it validated; run.in_review or run.failed instead when it moves the run
    RUN_VALIDATED = "run.validated", "validated the run's reports", ("member.validated", "run.in_review"), SUBSCRIBED
    BUNDLE_IMPORTED = "bundle.imported", "imported a bundle", "bundle.imported"
    # reconcile: sync, decisions, corrections, independent reviews, revisions
    RECONCILE_SYNCED = "reconcile.synced", "brought the reconciliation up to date", "reconcile.synced"
    MAPPING_PROPOSED = "mapping.proposed", "proposed a mapping", "mapping.proposed"
    MAPPING_ACCEPTED = "mapping.accepted", "accepted a mapping", "mapping.accepted"
    MAPPING_REJECTED = "mapping.rejected", "rejected a mapping", "mapping.rejected"
    MAPPING_REOPENED = "mapping.reopened", "reopened a mapping", "mapping.reopened"
    MAPPING_MARKED_STALE = "mapping.marked_stale", "marked a mapping stale", "mapping.marked_stale"
    ISSUE_ACCEPTED = "issue.accepted", "accepted an integration issue", "issue.accepted"
    ISSUE_REJECTED = "issue.rejected", "rejected an integration issue", "issue.rejected"
    ISSUE_REOPENED = "issue.reopened", "reopened an integration issue", "issue.reopened"
    ISSUE_MARKED_STALE = "issue.marked_stale", "marked an integration issue stale", "issue.marked_stale"
    AMENDMENT_ACCEPTED = "amendment.accepted", "accepted an amendment", "amendment.accepted"
    AMENDMENT_REJECTED = "amendment.rejected", "rejected an amendment", "amendment.rejected"
    AMENDMENT_CARRIED = "amendment.carried", "carried an amendment into the limitations", "amendment.carried"
    AMENDMENT_REOPENED = "amendment.reopened", "reopened an amendment", "amendment.reopened"
    AMENDMENT_MARKED_STALE = "amendment.marked_stale", "marked an amendment stale", "amendment.marked_stale"
    AMENDMENT_FOLLOWED_MAPPING = ("amendment.followed_mapping", "carried an amendment over with its mapping",
                                  "amendment.followed_mapping")
    CANONICAL_REJECTED = "canonical.rejected", "rejected a canonical record", "canonical.rejected"
    CANONICAL_WITHDRAWN = "canonical.withdrawn", "withdrew a canonical record", "canonical.withdrawn"
    CANONICAL_REACTIVATED = "canonical.reactivated", "reactivated a canonical record", "canonical.reactivated"
    CORRECTION_REQUESTED = "correction.requested", "requested a correction", "correction.requested", SUBSCRIBED
    CORRECTION_REPLIED = "correction.replied", "replied to a correction request", "correction.replied", SUBSCRIBED
    CORRECTION_RESOLVED = "correction.resolved", "resolved a correction request", "correction.resolved", SUBSCRIBED
    CORRECTION_REOPENED = "correction.reopened", "reopened a correction request", "correction.reopened", SUBSCRIBED
    CORRECTION_WITHDRAWN = ("correction.withdrawn", "withdrew a correction request", "correction.withdrawn",
                            SUBSCRIBED)
    PASS_STARTED = "pass.started", "started an independent review", "pass.started"
    # An independent review's decisions stay blind until submitted (DESIGN §2): never in the feed.
    PASS_DECIDED = "pass.decided", "decided in an independent review", None
    PASS_SUBMITTED = "pass.submitted", "submitted an independent review", "pass.submitted"
    PASS_CONSENSUS = "pass.consensus", "made the reviews' consensus", "pass.consensus"
    CONFLICT_SETTLED = "conflict.settled", "settled a conflict between reviews", "conflict.settled"
    RUN_REVISION_CREATED = "run.revision_created", "created the run as a revision", "run.revision_created"
    RUN_REVISED = "run.revised", "revised the run", "run.revised"
    # results: approval and finalization
    RUN_APPROVED = "run.approved", "approved the run", "run.approved", SUBSCRIBED
    RUN_REOPENED = "run.reopened", "reopened the run", ("run.reopened", "run.in_review")
    RUN_FINALIZING = "run.finalizing", "started finalizing the run", "run.finalizing"
    RUN_FINALIZED = "run.finalized", "finalized the run", "run.final", SUBSCRIBED
    RUN_FINALIZE_FAILED = "run.finalize_failed", "failed to finalize the run", "run.failed", SUBSCRIBED
    RUN_FINALIZE_RETRIED = "run.finalize_retried", "retried the run's finalization", "run.finalize_retried"
    RUN_FINALIZE_REQUEUED = "run.finalize_requeued", "queued the run's finalization again", "run.finalize_requeued"
    # events: webhooks
    WEBHOOK_CREATED = "webhook.created", "created a webhook", "webhook.created"
    WEBHOOK_UPDATED = "webhook.updated", "changed a webhook", "webhook.updated"
    WEBHOOK_DELETED = "webhook.deleted", "deleted a webhook", "webhook.deleted"
    WEBHOOK_DISABLED = "webhook.disabled", "disabled a webhook", "webhook.disabled", SUBSCRIBED
    WEBHOOK_REDELIVERY_REQUESTED = ("webhook.redelivery_requested", "asked for a webhook's deliveries again",
                                    "webhook.redelivery_requested")


# The decisions on a run's items (DESIGN §4: how many reviews a run needs is settable until the first one).
DECISIONS = frozenset({
    Action.MAPPING_ACCEPTED, Action.MAPPING_REJECTED, Action.MAPPING_REOPENED,
    Action.ISSUE_ACCEPTED, Action.ISSUE_REJECTED, Action.ISSUE_REOPENED,
    Action.AMENDMENT_ACCEPTED, Action.AMENDMENT_REJECTED, Action.AMENDMENT_CARRIED, Action.AMENDMENT_REOPENED,
    Action.CANONICAL_REJECTED,
    Action.PASS_STARTED, Action.PASS_DECIDED, Action.PASS_SUBMITTED, Action.PASS_CONSENSUS,
})

"""What a verification member hands on (DESIGN §1, §6): its Blockers as correction requests addressed to
the reports they name, and its Limits. Pure: a parsed report in, plain data out.

Two readers: reconcile's corrections raise the requests from `blocker_requests`
(`reconcile.services.corrections.raise_from_verification`), and the API shows them on the verification
member (`records.api.MemberDetailView`, through `verification_data`); records reads it itself, so it
lives here, below both.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from records import ids
from records.document import ParsedReport

VERIFICATION_ROLES = frozenset({"verification", "report-verification", "profile-verification",
                                "synthesis-verification"})
SOURCE = "verification"


@dataclass(frozen=True)
class BlockerRequest:
    """A correction request as a verification blocker raises it."""

    addressee: str  # the member (role) it is addressed to, lower case; "" when the blocker names none
    record_id: str  # the first record the blocker cites or mentions; "" when none
    line: int  # the blocker's line in the verification member
    text: str
    author: str  # the verification member's version, e.g. "report-verification v1"
    source: str = SOURCE


def blocker_requests(report: ParsedReport, *, author: str) -> list[BlockerRequest]:
    """One request per blocker, in the verification's order."""
    found = []
    for blocker in report.blockers:
        record = next((r for r in blocker.references if ids.is_record_id(r)), "")
        found.append(BlockerRequest(blocker.addressee.lower(), record, blocker.line, blocker.text, author))
    return found


def limit_entries(report: ParsedReport) -> list[dict]:
    return [{"line": limit.line, "text": limit.text, "references": list(limit.references)} for limit in report.limits]


def verification_data(report: ParsedReport, *, author: str) -> dict:
    """The `blockers` and `limits` of a member's API answer."""
    return {"blockers": [asdict(r) for r in blocker_requests(report, author=author)],
            "limits": limit_entries(report)}

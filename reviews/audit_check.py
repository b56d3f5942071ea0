"""Checking one audit chain (DESIGN §8): `verify_audit`, `GET …/audit/verify/` and the timeline's banner.

Four things, each naming the event it is about:

- the chain: from its first event each hash recomputed from the content and the previous hash, the
  sequence unbroken from 1, the salted form required after the chain's first salted event, and the
  trail's end equal to the head the run row records. The first break ends the check (what follows it
  cannot be read as linked);
- the signatures: every event signed by a published audit key (reviews/audit_keys.py), but unsigned
  history: with a seal (reviews/audit_seal.py), the events at or below the chain's sealed head; without
  one, the events before the chain's first signed one. The app's database role can insert a correctly
  chained event and move the head, but not sign it;
- the heads recorded elsewhere: a final run's stored attestation (and whatever else an app above
  registers with `on_recorded_heads`) and the seal name the chain head they saw; a trail cut below it,
  with the run row's head moved back to match, is named against it. With a seal, a final run without
  an attestation must be one the seal lists as carrying none.

Signatures and recorded heads name every event that fails, not only the first.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import rfc8785

from .audit_form import GENESIS, chain_payload, event_hash
from .audit_keys import published_audit_keys, verifies
from .audit_seal import Seal, chain_label, load_seal
from .models import AuditEvent, Run

# Apps above reviews (results: the attestation's head) register what heads they recorded of a run's
# chain: `provider(run)` → [(what recorded it, seq, hash)]. reviews never imports them.
_recorded_heads: list[Callable[[Run], list[tuple[str, int, str]]]] = []


def on_recorded_heads(provider: Callable[[Run], list[tuple[str, int, str]]]) -> None:
    """Register `provider(run)`, the chain heads of `run` that something kept outside the trail recorded."""
    if provider not in _recorded_heads:
        _recorded_heads.append(provider)


@dataclass(frozen=True)
class Problem:
    seq: int
    event_id: int | None
    reason: str

    def as_dict(self) -> dict:
        return {"seq": self.seq, "event_id": self.event_id, "reason": self.reason}


@dataclass(frozen=True)
class ChainCheck:
    ok: bool
    events: int
    broken_seq: int | None = None
    broken_event_id: int | None = None
    reason: str = ""
    signed: int = 0
    unsigned_history: int = 0  # the seq of the last event before the chain's first signed one
    signature_failures: tuple[Problem, ...] = field(default=())
    head_failures: tuple[Problem, ...] = field(default=())

    def report(self) -> dict:
        """The verify API's answer: the count when the chain holds, the first broken event when not, and
        its signatures (each event failing named)."""
        answer: dict = {"ok": True, "events": self.events} if self.ok else {
            "ok": False, "broken_seq": self.broken_seq, "reason": self.reason}
        if not self.ok and self.broken_event_id is not None:  # a cut trail's first missing event has no row
            answer["broken_event_id"] = self.broken_event_id
        answer["signatures"] = {"signed": self.signed, "unsigned_history": self.unsigned_history,
                                "failures": [p.as_dict() for p in self.signature_failures]}
        if self.head_failures:
            answer["recorded_heads"] = [p.as_dict() for p in self.head_failures]
        return answer


def _chain(run: Run | None):
    return AuditEvent.objects.filter(run=run) if run is not None else AuditEvent.objects.filter(run__isnull=True)


@dataclass
class _Signatures:
    keys: list
    seal: Seal | None = None
    sealed_head: int | None = None  # the chain's head the seal records (None: the seal names no such chain)
    signed: int = 0
    first_signed: int | None = None
    unsigned_history: int = 0
    failures: list[Problem] = field(default_factory=list)

    def check(self, event: AuditEvent) -> None:
        if event.signature:
            self.signed += 1
            self.first_signed = self.first_signed or event.seq
            if not self.keys:
                self.failures.append(Problem(event.seq, event.pk, "signed, but no audit key is published to check "
                                                                  "the signature against"))
            elif not verifies(self.keys, event.hash, event.signature):
                self.failures.append(Problem(event.seq, event.pk, "signature does not verify against any published "
                                                                  "audit key (forged, or copied from another event)"))
        elif self.seal is not None:
            if self.seal.problem:
                self.failures.append(Problem(event.seq, event.pk, f"unsigned, and the audit seal does not hold: "
                                                                  f"{self.seal.problem}"))
            elif self.sealed_head is not None and event.seq <= self.sealed_head:
                self.unsigned_history = event.seq
            else:
                where = (f"above the chain's sealed head #{self.sealed_head}" if self.sealed_head is not None
                         else "in a chain the audit seal records no history of")
                self.failures.append(Problem(event.seq, event.pk, f"unsigned event {where}: not written by the app"))
        elif self.first_signed is not None:
            self.failures.append(Problem(event.seq, event.pk, f"unsigned event after the chain's first signed event "
                                                              f"#{self.first_signed}: not written by the app"))
        else:
            self.unsigned_history = event.seq


def verify_chain(run: Run | None) -> ChainCheck:
    """Recompute the chain from its first event, compare its end with the run's chain head, check every
    signature and the heads recorded of it; name the first broken event, and each failing one."""
    seal = load_seal()
    sealed = seal.heads.get(chain_label(run)) if seal is not None else None
    signatures = _Signatures([key.public_key for key in published_audit_keys()], seal,
                             sealed[0] if sealed is not None else None)
    recorded = recorded_heads(run) if run is not None else []
    unattested = _unattested(run, seal, recorded)
    if sealed is not None:
        recorded.append(("the audit seal", *sealed))
    wanted = {seq for _what, seq, _hash in recorded}
    seen: dict[int, AuditEvent] = {}
    prev_hash, count, salted = GENESIS, 0, None
    for count, event in enumerate(_chain(run).select_related("run").order_by("seq").iterator(), start=1):
        broken = _link(event, count, prev_hash, salted)
        if broken:
            return ChainCheck(False, count, event.seq, event.pk, broken, signatures.signed,
                              signatures.unsigned_history, tuple(signatures.failures))
        salted = salted or (event.seq if event.salt else None)
        signatures.check(event)
        if event.seq in wanted:
            seen[event.seq] = event
        prev_hash = event.hash
    if run is not None:
        cut = _against_head(run, count, prev_hash)
        if cut is not None:
            return ChainCheck(False, count, *cut, signatures.signed, signatures.unsigned_history,
                              tuple(signatures.failures))
    heads = (*_against_recorded(recorded, seen, count), *unattested)
    problems = sorted([*signatures.failures, *heads], key=lambda p: p.seq)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return ChainCheck(False, count, problems[0].seq, problems[0].event_id, problems[0].reason + more,
                          signatures.signed, signatures.unsigned_history, tuple(signatures.failures), heads)
    return ChainCheck(True, count, signed=signatures.signed, unsigned_history=signatures.unsigned_history)


def recorded_heads(run: Run) -> list[tuple[str, int, str]]:
    """The chain heads of `run` recorded outside its trail (a final run's attestation): (what, seq, hash)."""
    return [head for provider in _recorded_heads for head in provider(run)]


def _unattested(run: Run | None, seal: Seal | None, recorded: list) -> tuple[Problem, ...]:
    """A final run with no attestation that the seal does not list as having carried none (sealed history only)."""
    if (run is None or seal is None or seal.problem or recorded or run.status != Run.Status.FINAL
            or run.run_id in seal.unattested_final):
        return ()
    return (Problem(run.audit_head_seq, None, "final run without a stored attestation, and the audit seal does not "
                                               "list it among the final runs that carried none: it was removed"),)


def _link(event: AuditEvent, count: int, prev_hash: str, salted: int | None) -> str:
    """Why `event`, the count-th of its chain, does not follow `prev_hash` ('' when it does)."""
    if event.seq != count:
        return f"sequence gap: expected event #{count}, found #{event.seq} (events deleted)"
    if event.prev_hash != prev_hash:
        return "prev_hash does not match the previous event's hash"
    if salted is not None and not event.salt:
        return f"unsalted event after the chain's first salted event #{salted}: not written by the app"
    try:
        expected = event_hash(prev_hash, chain_payload(event))
    except (rfc8785.CanonicalizationError, UnicodeError) as error:
        return f"content cannot be canonicalised (edited): {error}"
    if expected != event.hash:
        return "content does not match its hash (edited)"
    return ""


def _against_head(run: Run, count: int, last_hash: str) -> tuple[int, int | None, str] | None:
    """(broken seq, None, reason) when the trail's end is not the run row's chain head."""
    head_seq, head_hash = Run.objects.filter(pk=run.pk).values_list("audit_head_seq", "audit_head_hash").get()
    if (head_seq, head_hash or GENESIS) == (count, last_hash):
        return None
    if head_seq > count:
        return count + 1, None, (f"trail cut at its end: the run's chain head is event #{head_seq} "
                                 f"(hash {head_hash}), the trail ends at event #{count}")
    return count, None, (f"the run's chain head (event #{head_seq}, hash {head_hash or GENESIS}) does not match "
                         f"the trail's last event (#{count}, hash {last_hash})")


def _against_recorded(recorded, seen: dict[int, AuditEvent], count: int):
    for what, seq, digest in recorded:
        event = seen.get(seq)
        if event is None:
            yield Problem(seq, None, f"{what} records chain head #{seq} (hash {digest}), but the trail ends at "
                                     f"event #{count}: the trail was cut and its head moved back")
        elif event.hash != digest:
            yield Problem(seq, event.pk, f"{what} records chain head #{seq} with hash {digest}, the trail's event "
                                         f"#{seq} hashes to {event.hash}: the trail up to it was rewritten")

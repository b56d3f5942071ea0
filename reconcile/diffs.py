"""Diffs, in one module: words between two texts, the page's stored word diffs, and two versions of a
member (DESIGN §4 `…/diff/`, §5).

Word diffs (pure: no ORM). `diff_words(old, new)` returns `(op, text)` tokens
with op one of "equal", "delete" (only in `old`) and "insert" (only in
`new`). Joining the text of the "equal" and "delete" tokens gives back `old`
exactly; joining "equal" and "insert" gives back `new`. Whitespace travels
with the words, so the page can render the tokens in order, escaping each.

Stored word diffs, for the reconciliation page: computed once per pair of
texts and stored (WordDiff). A page of rows asks for its diffs in one query
(`stored_diffs`); the ones never computed are computed (`diff_words`, through
the views' per-process cache) and stored in one more statement. A record's
new version, or a canonical record's new text, is a new pair of texts and so
a new key.

Version diffs: what changed between two versions of a member
(`version_diff`): records added, removed and changed (a word diff of label
and body, the mapping rows' component), findings gained and lost, and the
correction requests the newer version answered.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from django.utils.safestring import SafeString, mark_safe

from records import parsed as parse_cache
from records.models import MemberReport, MemberVersion, Record
from records.validation import MemberInput, RunFacts, validate_member
from reviews.models import Run

from .models import CorrectionRequest, Mapping, WordDiff


# --- word diffs ------------------------------------------------------------

EQUAL, DELETE, INSERT = "equal", "delete", "insert"

# Words, runs of whitespace, and single punctuation marks are the units compared.
_TOKEN_RE = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)

# Beyond this many tokens a side, difflib's quadratic worst case is not worth it:
# the two texts are shown as one deletion and one insertion.
MAX_TOKENS = 5000


def tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text)


def _merge(ops: list[tuple[str, str]]) -> list[tuple[str, str]]:
    merged: list[tuple[str, str]] = []
    for op, text in ops:
        if not text:
            continue
        if merged and merged[-1][0] == op:
            merged[-1] = (op, merged[-1][1] + text)
        else:
            merged.append((op, text))
    return merged


def diff_words(old: str, new: str) -> list[tuple[str, str]]:
    """Tokens that turn `old` into `new`, adjacent tokens of one op merged."""
    a, b = tokens(old), tokens(new)
    if len(a) > MAX_TOKENS or len(b) > MAX_TOKENS:
        return [(EQUAL, old)] if old == new else _merge([(DELETE, old), (INSERT, new)])
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    ops: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            ops.append((EQUAL, "".join(a[i1:i2])))
        else:
            ops.append((DELETE, "".join(a[i1:i2])))
            ops.append((INSERT, "".join(b[j1:j2])))
    return _merge(ops)


def similarity(old: str, new: str) -> float:
    """Share of the two texts' tokens that are equal (0..1), for a "how different" hint."""
    a, b = tokens(old), tokens(new)
    if not a and not b:
        return 1.0
    if len(a) > MAX_TOKENS or len(b) > MAX_TOKENS:
        return 1.0 if old == new else 0.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


# --- stored word diffs -----------------------------------------------------

# Bumped when the stored HTML changes form (2: rendered Markdown, issue 22), so no page reuses the old form.
FORM = b"markdown-2"


def key(old: str, new: str) -> str:
    """SHA-256 over the form and the two texts' own SHA-256 digests: unambiguous whatever characters the
    texts hold."""
    return hashlib.sha256(FORM + hashlib.sha256(old.encode("utf-8")).digest()
                          + hashlib.sha256(new.encode("utf-8")).digest()).hexdigest()


def stored_diffs(pairs, compute) -> dict[tuple[str, str], tuple[SafeString, SafeString]]:
    """{(old, new): (left html, right html)} for these text pairs; `compute(old, new)` makes a missing one."""
    wanted = {key(old, new): (old, new) for old, new in pairs}
    if not wanted:
        return {}
    # Tuples, not models: a model per stored diff was a third of the lookup's time at 60 rows.
    found = {k: (left, right)
             for k, left, right in WordDiff.objects.filter(key__in=list(wanted)).values_list("key", "left", "right")}
    missing = [WordDiff(key=k, left=left, right=right)
               for k, (old, new) in wanted.items() if k not in found
               for left, right in [compute(old, new)]]
    if missing:
        WordDiff.objects.bulk_create(missing, ignore_conflicts=True)  # a concurrent page may store it first
        found |= {row.key: (row.left, row.right) for row in missing}
    # Stored HTML was escaped piece by piece when it was computed (views.rows._diff).
    return {wanted[k]: (mark_safe(left), mark_safe(right)) for k, (left, right) in found.items()}  # noqa: S308


# --- version diffs ---------------------------------------------------------


@dataclass(frozen=True)
class RecordChange:
    record_id: str
    kind: str
    change: str  # "added", "removed" or "changed"
    old_label: str = ""
    new_label: str = ""
    old_body: str = ""
    new_body: str = ""

    def as_dict(self) -> dict:
        found = {"record_id": self.record_id, "kind": self.kind, "change": self.change}
        if self.change == "changed":
            found |= {"label": {"from": self.old_label, "to": self.new_label,
                                "diff": diff_words(self.old_label, self.new_label)},
                      "body": {"from": self.old_body, "to": self.new_body,
                               "diff": diff_words(self.old_body, self.new_body)}}
        else:
            found |= {"label": self.new_label or self.old_label}
        return found


def _declarations(version: MemberVersion) -> dict[str, Record]:
    return {r.record_id: r for r in Record.objects.filter(member_version=version, record_type=Record.Type.DECLARATION)
            .only("record_id", "kind", "label", "body", "text").order_by("ordinal")}


def record_changes(old: MemberVersion, new: MemberVersion) -> list[RecordChange]:
    before, after = _declarations(old), _declarations(new)
    changes = [RecordChange(r.record_id, r.kind, "added", new_label=r.label, new_body=r.body or r.text)
               for rid, r in after.items() if rid not in before]
    changes += [RecordChange(r.record_id, r.kind, "removed", old_label=r.label, old_body=r.body or r.text)
                for rid, r in before.items() if rid not in after]
    for rid, r in after.items():
        o = before.get(rid)
        if o is not None and (o.label, o.body or o.text) != (r.label, r.body or r.text):
            changes.append(RecordChange(rid, r.kind, "changed", o.label, r.label, o.body or o.text, r.body or r.text))
    return changes


def _findings(run: Run, version: MemberVersion) -> set[tuple[str, str, str, str]]:
    """(severity, code, record, message) of the member's own checks on this version; lines left out, since
    a correction moves them."""
    facts = RunFacts(run_id=run.run_id, reviewed_boundary=run.reviewed_boundary, revises=run.revised_run_ids())
    member = MemberInput(name=version.member.role, role=version.member.role,
                         report=parse_cache.version_report(version))
    return {(f.severity, f.code, f.record_id or "", f.message) for f in validate_member(member, facts)}


def version_numbers(params) -> dict[str, int | None]:
    """`from` and `to` of a diff request: version numbers, or None when not given (the API refuses junk first)."""
    return {name: int(params[name]) if str(params.get(name, "")).isdigit() else None for name in ("from", "to")}


class NoSuchVersion(LookupError):
    """The member has no version of that number."""


def versions_to_compare(member: MemberReport, frm: int | None, to: int | None) -> tuple[MemberVersion, MemberVersion]:
    """(from, to) versions of `member`: `to` defaults to the current one, `from` to the one before it."""
    to = to or (member.current_version.version if member.current_version_id else 1)
    frm = frm or max(1, to - 1)
    found = {v.version: v for v in MemberVersion.objects.filter(member=member, version__in=[frm, to])
             .select_related("member").defer("content")}
    missing = [n for n in (frm, to) if n not in found]
    if missing:
        raise NoSuchVersion(f"the {member.role} report has no version {missing[0]}")
    return found[frm], found[to]


def version_diff(*, run: Run, old: MemberVersion, new: MemberVersion,
                 changes: list[RecordChange] | None = None) -> dict:
    """The diff as data; `changes` when the caller already has `record_changes(old, new)`."""
    changes = record_changes(old, new) if changes is None else changes
    old_findings, new_findings = _findings(run, old), _findings(run, new)

    def listed(found):
        return [{"severity": s, "code": c, "record_id": r, "message": m} for s, c, r, m in sorted(found)]

    answered = CorrectionRequest.objects.filter(run=run, answered_in=new).order_by("pk")
    changed = {c.record_id for c in changes if c.change != "added"}
    stale = Mapping.objects.filter(run=run, source__in=changed, state=Mapping.State.STALE).order_by("pk")
    return {
        "member": new.member.role, "from": old.version, "to": new.version,
        "from_sha256": old.sha256, "to_sha256": new.sha256,
        "records": [c.as_dict() for c in changes],
        "findings": {"gained": listed(new_findings - old_findings), "lost": listed(old_findings - new_findings)},
        "requests_answered": [{"id": r.pk, "text": r.text, "answer": r.answer, "answer_text": r.answer_text,
                               "state": r.state} for r in answered],
        "stale_mappings": [{"id": m.pk, "source": m.source, "relation": m.relation, "target": m.target}
                           for m in stale],
    }

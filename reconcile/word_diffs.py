"""Word diffs for the reconciliation page, computed once per pair of texts and stored (WordDiff).

A page of rows asks for its diffs in one query; the ones never computed are
computed (reconcile.diffing, through the views' per-process cache) and stored
in one more statement. A record's new version, or a canonical record's new
text, is a new pair of texts and so a new key.
"""
from __future__ import annotations

import hashlib

from django.utils.safestring import SafeString, mark_safe

from .models import WordDiff


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

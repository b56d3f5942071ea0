"""What each generation of the format is held to (DESIGN §6: "apply the rule of
the member's own generation and report only what that generation required").

The generation of a member comes from its own ID shapes, then its front
matter `type` (`records.validation.generation._report_generation`):

- bare-numbered: finished results and older runtime members (`CMP-1`,
  `OBJ-5`; seed 000, the corpus mem0 result, the instinctual-memory runtime);
- prefixed-numbered: sets where analysts prefix numbered IDs (`RT-OBJ-2`,
  `MEM-OBJ-1`, `EPI-RTE-1`; the corpus dynamic-cheatsheet run);
- slug, the current form (`RT-OBJ-store`, `MEM-RTE-engine-dreaming`; seeds
  001-003).

The current form is held to every rule as an error. The two older
generations are held to what they required: rules whose older form was
looser are warnings (`RELAXED`), and rules the current form added
(`CURRENT_ONLY`, the "finer points" of §6) are not reported at all -- an
accepted older result must leave a reviewer a few warnings worth reading,
not hundreds (prose anchors with line ranges were the accepted form in
bare-numbered results).
"""
from __future__ import annotations

from records import ids

GENERATIONS = (ids.GENERATION_BARE, ids.GENERATION_PREFIXED, ids.GENERATION_SLUG)
CURRENT = ids.GENERATION_SLUG

# Rules the current form added: never reported against an older generation.
CURRENT_ONLY = frozenset({
    "prose-line-anchor",  # older results cited `path:12-30` in prose
    "empty-quotation",
    "ambiguous-reference",  # the duplicate declaration behind it is reported itself
    "amended-records-mismatch",  # the overview's "Amended or superseded records:" line
    "part-of-outside-declaration",
    "value-amendment",  # older reconciliations may carry value amendments
    "amendment-id-undeclared",
})

# Rules an older generation met more loosely (other section lists, route
# fields and statuses written in prose or a summary table, bare IDs in
# runtime members, ranges): an error in the current form, a warning before.
RELAXED = frozenset({
    "front-matter-unreadable",
    "missing-section",
    "section-out-of-order",
    "missing-kind-heading",
    "empty-kind-heading",
    "range-reference",
    "part-of-misplaced",
    "part-of-not-one-id",
    "part-of-self",
    "part-of-repeated",
    "missing-route-field",
    "missing-conclusion-status",
})


def held_to(code: str, *, current: bool, severity: str = "error") -> str | None:
    """The severity a finding of `code` has for a member of the current form or
    an older one; None when that generation did not have the rule. `severity` is
    what the check itself decided (some checks only ever warn)."""
    if current:
        return severity
    if code in CURRENT_ONLY:
        return None
    if code in RELAXED:
        return "warning"
    return severity

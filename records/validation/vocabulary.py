"""The record contract's vocabulary (DESIGN §2, Appendix A): kind headings, status and guarantee
values, route fields, result dispositions, each member type's required sections, and which
analyst prefixes a role declares under.

The memory-comparison profile's vocabulary and checks live in records.validation.profile_forms; its names are
re-exported here because callers read the vocabulary from records.validation.
"""
from __future__ import annotations

from records.parsing.grammar import ROUTE_FIELD_LABELS

from .profile_forms import (  # noqa: F401 - re-exported: callers read the vocabulary here
    PROFILE_ASSESSMENTS,
    PROFILE_AXES,
    PROFILE_BASES,
    PROFILE_FIRST_AXES,
    PROFILE_LATER_AXES,
    YES_NO_AXES,
)

KIND_HEADINGS = {
    "CMP": "Components",
    "OBJ": "Operative objects",
    "RTE": "Routes",
    "CLM": "Claims",
    "ABS": "Evidenced absences",
    "BAP": "Behavioral-authority paths",
}
CONCLUSION_VALUES = (
    "absent",
    "inapplicable",
    "uninspected",
    "claimed",
    "afforded",
    "wired",
    "observed",
    "causally supported",
)
GUARANTEE_VALUES = (
    "invariant",
    "protocol",
    "policy",
    "best effort",
    "deployment guarantee",
    "no claimed guarantee",
)
ROUTE_FIELDS = ROUTE_FIELD_LABELS  # the seven route fields of DESIGN §2, as the parser reads them
RESULT_DISPOSITIONS = ("complete", "blocked", "out-of-scope")

# Sections each member type requires, in order (top-level `##` headings).
# Sections not listed may appear anywhere between them.
REQUIRED_SECTIONS = {
    "memory": (
        "Boundary and evidence",
        "Core ideas",
        "Shared records",
        "Write side",
        "Read-back",
        "Integration issues",
        "Limitations and checks",
    ),
    "runtime": ("Runtime account", "Shared records"),
    "workflow": ("Workflow account", "Shared records"),
    "epistemic": (
        "Source-and-claim boundary",
        "Epistemic-object inventory",
        "Authority-route ledger",
        "System-claim versus route comparison",
        "Bounded conclusion",
        "Shared records",
    ),
    "overview": (
        "Boundary and evidence",
        "Source register",
        "Bounded synthesis",
        "Limitations",
        "Verification and blockers",
    ),
    "reconciliation": ("Reconciliation",),
    "boundary": ("Source register",),
    "result": (
        "Run identity",
        "Boundary and evidence",
        "Source register",
        "Shared records",
        "Reconciliation",
        "Limitations",
        "Verification and blockers",
    ),
}
ROLES_WITH_SHARED_RECORDS = ("memory", "runtime", "workflow", "epistemic", "result")
# Which analyst prefixes a member of each role may declare under.
ROLE_PREFIXES = {
    "runtime": ("RT",),
    "memory": ("MEM",),
    "epistemic": ("EPI",),
}

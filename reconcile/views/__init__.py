"""The reviewer's runs list and the side-by-side reconciliation page (DESIGN.md §5), with the
decisions posted from it.

One view serves the page and its htmx regions; a decision re-renders the same
row fragment (`reconcile/_pair_row.html`, `reconcile/_issue_row.html`) that the
first paint used, with the counters updated out of band. Without JavaScript the
forms are plain POSTs that redirect back (POST/redirect/GET).

A module per concern, as Zulip split its actions module:

- `runs`: the runs list and the run-level summaries other pages load (progress, blockers, member mappings);
- `page`: the reconciliation page, its filters and its rows a page at a time;
- `decisions`: the decisions posted from a row (mapping, issue, amendment); `bulk`: bulk accept (preview, confirm, undo);
- `independent`: independent reviews: the run page's panel, submitting one's pass, the adjudication page;
- `corrections`: correction requests raised, settled and answered, and a member's version diff;
- `row_actions`: the forms a row opens in place (propose a mapping, reject a canonical record);
- `rows` and `context`: what those share, the rows and how they are built and rendered, and
  what every response carries around its rows.

This package re-exports the views `reconcile/urls.py` routes to, and `PAGE_ROWS`.
"""
from .corrections import correction_action, member_diff, run_corrections
from .bulk import bulk_accept, undo_bulk_accept
from .decisions import decide_amendment, decide_issue, decide_mapping
from .independent import run_conflicts, run_reviews, settle_conflict, submit_review
from .page import PAGE_ROWS, run_reconcile, target_choices
from .row_actions import propose_mapping, reject_canonical
from .runs import member_mappings, run_blockers, run_counters, run_decision_progress, runs_list

__all__ = [
    "PAGE_ROWS",
    "bulk_accept",
    "undo_bulk_accept",
    "correction_action",
    "decide_amendment",
    "decide_issue",
    "decide_mapping",
    "member_diff",
    "member_mappings",
    "propose_mapping",
    "reject_canonical",
    "run_blockers",
    "run_corrections",
    "run_counters",
    "run_decision_progress",
    "run_reconcile",
    "runs_list",
    "run_conflicts",
    "run_reviews",
    "settle_conflict",
    "submit_review",
    "target_choices",
]

from django.urls import path

from . import views

urlpatterns = [
    path("", views.runs_list, name="runs"),
    path("runs/<str:run_id>/reconcile/", views.run_reconcile, name="run-reconcile"),
    path("runs/<str:run_id>/reconcile/targets/", views.target_choices, name="run-reconcile-targets"),
    path("runs/<str:run_id>/reconcile/progress/", views.run_decision_progress, name="run-decision-progress"),
    path("runs/<str:run_id>/reconcile/counters/", views.run_counters, name="run-reconcile-counters"),
    path("runs/<str:run_id>/reconcile/blockers/", views.run_blockers, name="run-blockers"),
    path("runs/<str:run_id>/reconcile/members/<str:role>/mappings/", views.member_mappings, name="member-mappings"),
    path("runs/<str:run_id>/reconcile/mappings/<int:mapping_id>/decide/", views.decide_mapping,
         name="reconcile-decide-mapping"),
    path("runs/<str:run_id>/reconcile/issues/<int:issue_id>/decide/", views.decide_issue,
         name="reconcile-decide-issue"),
    path("runs/<str:run_id>/reconcile/bulk-accept/", views.bulk_accept, name="reconcile-bulk-accept"),
    path("runs/<str:run_id>/reconcile/bulk-accept/undo/", views.undo_bulk_accept, name="reconcile-bulk-undo"),
    path("runs/<str:run_id>/reconcile/amendments/<int:amendment_id>/decide/", views.decide_amendment,
         name="reconcile-decide-amendment"),
    path("runs/<str:run_id>/reconcile/records/<str:source>/propose/", views.propose_mapping,
         name="reconcile-propose-mapping"),
    path("runs/<str:run_id>/reconcile/canonical/<int:canonical_id>/reject/", views.reject_canonical,
         name="reconcile-reject-canonical"),
    path("runs/<str:run_id>/reviews/", views.run_reviews, name="run-reviews"),
    path("runs/<str:run_id>/reviews/submit/", views.submit_review, name="run-review-submit"),
    path("runs/<str:run_id>/conflicts/", views.run_conflicts, name="run-conflicts"),
    path("runs/<str:run_id>/conflicts/<int:conflict_id>/settle/", views.settle_conflict, name="run-conflict-settle"),
    path("runs/<str:run_id>/corrections/", views.run_corrections, name="run-corrections"),
    path("runs/<str:run_id>/corrections/<int:correction_id>/<str:verb>/", views.correction_action,
         name="correction-action"),
    path("runs/<str:run_id>/members/<str:role>/diff/", views.member_diff, name="member-diff"),
]

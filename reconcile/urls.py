from django.urls import path

from . import views

urlpatterns = [
    path("", views.runs_list, name="runs"),
    path("runs/<str:run_id>/reconcile/", views.run_reconcile, name="run-reconcile"),
    path("runs/<str:run_id>/reconcile/progress/", views.run_decision_progress, name="run-decision-progress"),
    path("runs/<str:run_id>/reconcile/blockers/", views.run_blockers, name="run-blockers"),
    path("runs/<str:run_id>/reconcile/members/<str:role>/mappings/", views.member_mappings, name="member-mappings"),
    path("runs/<str:run_id>/reconcile/mappings/<int:mapping_id>/decide/", views.decide_mapping,
         name="reconcile-decide-mapping"),
    path("runs/<str:run_id>/reconcile/issues/<int:issue_id>/decide/", views.decide_issue,
         name="reconcile-decide-issue"),
    path("runs/<str:run_id>/reconcile/bulk-accept/", views.bulk_accept, name="reconcile-bulk-accept"),
    path("runs/<str:run_id>/reconcile/amendments/<int:amendment_id>/decide/", views.decide_amendment,
         name="reconcile-decide-amendment"),
    path("runs/<str:run_id>/reconcile/records/<str:source>/propose/", views.propose_mapping,
         name="reconcile-propose-mapping"),
    path("runs/<str:run_id>/reconcile/canonical/<int:canonical_id>/reject/", views.reject_canonical,
         name="reconcile-reject-canonical"),
]

# The final result, approval, reopening and finalization retry (reconcile/result_views.py).
from . import result_views  # noqa: E402

urlpatterns += [
    path("runs/<str:run_id>/result/", result_views.result_detail, name="run-result"),
    path("runs/<str:run_id>/approve/", result_views.approve, name="run-approve"),
    path("runs/<str:run_id>/reopen/", result_views.reopen, name="run-reopen"),
    path("runs/<str:run_id>/finalize/retry/", result_views.retry_finalize, name="run-finalize-retry"),
    path("runs/<str:run_id>/revise/", result_views.revise, name="run-revise"),
]

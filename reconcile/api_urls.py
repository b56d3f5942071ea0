from django.urls import path

from . import api

urlpatterns = [
    path("runs/<str:run_id>/canonical-records/", api.CanonicalRecordListView.as_view(), name="api-canonical-records"),
    path("runs/<str:run_id>/mappings/", api.MappingListCreateView.as_view(), name="api-mappings"),
    path("runs/<str:run_id>/mappings/<int:mapping_id>/decision/", api.MappingDecisionView.as_view(),
         name="api-mapping-decision"),
    # Records serves this path too, without decisions; config/urls.py puts reconcile first.
    path("runs/<str:run_id>/integration-issues/", api.IssueListView.as_view(), name="api-issue-decisions"),
    path("runs/<str:run_id>/integration-issues/<int:decision_id>/decision/", api.IssueDecisionView.as_view(),
         name="api-issue-decision"),
    path("runs/<str:run_id>/amendments/", api.AmendmentListView.as_view(), name="api-amendments"),
    path("runs/<str:run_id>/amendments/<int:amendment_id>/decision/", api.AmendmentDecisionView.as_view(),
         name="api-amendment-decision"),
    path("runs/<str:run_id>/progress/", api.ProgressView.as_view(), name="api-decision-progress"),
]

# Approval, the final result and the export bundle (reconcile/result_api.py).
from django.urls import path as _path  # noqa: E402

from . import result_api  # noqa: E402

urlpatterns += [
    _path("runs/<str:run_id>/approve/", result_api.ApproveView.as_view(), name="api-run-approve"),
    _path("runs/<str:run_id>/revise/", result_api.ReviseView.as_view(), name="api-run-revise"),
    _path("runs/<str:run_id>/blockers/", result_api.BlockersView.as_view(), name="api-run-blockers"),
    _path("runs/<str:run_id>/reopen/", result_api.ReopenView.as_view(), name="api-run-reopen"),
    _path("runs/<str:run_id>/finalize/retry/", result_api.FinalizeRetryView.as_view(), name="api-run-finalize-retry"),
    _path("runs/<str:run_id>/result/", result_api.ResultView.as_view(), name="api-run-result"),
    _path("runs/<str:run_id>/result.json", result_api.ResultJsonView.as_view(), name="api-run-result-json"),
    # GET export here; the POST import is records' view, which BundleView subclasses.
    _path("runs/<str:run_id>/bundle/", result_api.BundleView.as_view(), name="api-run-bundle"),
]

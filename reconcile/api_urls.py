from django.urls import path

from . import api

urlpatterns = [
    path("runs/<str:run_id>/canonical-records/", api.CanonicalRecordListView.as_view(), name="api-canonical-records"),
    path("runs/<str:run_id>/mappings/", api.MappingListCreateView.as_view(), name="api-mappings"),
    path("runs/<str:run_id>/mappings/<int:mapping_id>/decision/", api.MappingDecisionView.as_view(),
         name="api-mapping-decision"),
    path("runs/<str:run_id>/integration-issues/", api.IssueListView.as_view(), name="api-issue-decisions"),
    path("runs/<str:run_id>/integration-issues/<int:decision_id>/decision/", api.IssueDecisionView.as_view(),
         name="api-issue-decision"),
    path("runs/<str:run_id>/amendments/", api.AmendmentListView.as_view(), name="api-amendments"),
    path("runs/<str:run_id>/amendments/<int:amendment_id>/decision/", api.AmendmentDecisionView.as_view(),
         name="api-amendment-decision"),
    path("runs/<str:run_id>/progress/", api.ProgressView.as_view(), name="api-decision-progress"),
    path("runs/<str:run_id>/blockers/", api.BlockersView.as_view(), name="api-run-blockers"),
]

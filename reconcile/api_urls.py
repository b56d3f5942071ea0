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
    path("runs/<str:run_id>/progress/", api.ProgressView.as_view(), name="api-decision-progress"),
]

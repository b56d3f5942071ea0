from django.urls import path

from . import api, corrections_api

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
    path("runs/<str:run_id>/members/<str:member_id>/diff/", corrections_api.MemberDiffView.as_view(),
         name="api-member-diff"),
    path("runs/<str:run_id>/corrections/", corrections_api.CorrectionListView.as_view(), name="api-corrections"),
    path("runs/<str:run_id>/corrections/<int:correction_id>/resolve/", corrections_api.ResolveView.as_view(),
         name="api-correction-resolve"),
    path("runs/<str:run_id>/corrections/<int:correction_id>/reopen/", corrections_api.ReopenView.as_view(),
         name="api-correction-reopen"),
    path("runs/<str:run_id>/corrections/<int:correction_id>/withdraw/", corrections_api.WithdrawView.as_view(),
         name="api-correction-withdraw"),
    path("runs/<str:run_id>/corrections/<int:correction_id>/replies/", corrections_api.ReplyView.as_view(),
         name="api-correction-replies"),
]

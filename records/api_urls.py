from django.urls import path

from . import api, import_api, source_api

urlpatterns = [
    path("runs/import/", import_api.RunImportView.as_view(), name="api-run-import"),
    path("runs/<str:run_id>/", api.RunDetailView.as_view(), name="api-run-detail"),
    path("runs/<str:run_id>/members/", api.MemberUploadView.as_view(), name="api-member-upload"),
    path("runs/<str:run_id>/members/<str:member_id>/", api.MemberDetailView.as_view(), name="api-member-detail"),
    path("runs/<str:run_id>/members/<str:member_id>/raw", api.MemberRawView.as_view(), name="api-member-raw"),
    path("runs/<str:run_id>/records/", api.RecordListView.as_view(), name="api-records"),
    path("runs/<str:run_id>/validation/", api.ValidationView.as_view(), name="api-validation"),
    path("runs/<str:run_id>/source/", source_api.SourceView.as_view(), name="api-source"),
    path("runs/<str:run_id>/quotations/", source_api.QuotationListView.as_view(), name="api-quotations"),
]

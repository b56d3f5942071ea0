from django.urls import path

from . import api, keys_api

urlpatterns = [
    path("keys/", keys_api.PublicKeysView.as_view(), name="api-keys"),
    path("runs/<str:run_id>/approve/", api.ApproveView.as_view(), name="api-run-approve"),
    path("runs/<str:run_id>/revise/", api.ReviseView.as_view(), name="api-run-revise"),
    path("runs/<str:run_id>/reopen/", api.ReopenView.as_view(), name="api-run-reopen"),
    path("runs/<str:run_id>/finalize/retry/", api.FinalizeRetryView.as_view(), name="api-run-finalize-retry"),
    path("runs/<str:run_id>/result/", api.ResultView.as_view(), name="api-run-result"),
    path("runs/<str:run_id>/result.json", api.ResultJsonView.as_view(), name="api-run-result-json"),
    path("runs/<str:run_id>/attestation/", api.AttestationView.as_view(), name="api-run-attestation"),
    # GET exports the run; POST imports a run directory (records' BundleImportView, which BundleView extends).
    path("runs/<str:run_id>/bundle/", api.BundleView.as_view(), name="api-run-bundle"),
]

from django.urls import path

from . import api

urlpatterns = [
    path("runs/", api.RunListCreateView.as_view(), name="api-runs"),
    path("whoami/", api.WhoAmIView.as_view(), name="api-whoami"),
]

from . import audit_api  # noqa: E402 — the audit trail's API (DESIGN.md §8)

urlpatterns += [
    path("runs/<str:run_id>/audit/", audit_api.AuditEventListView.as_view(), name="api-run-audit"),
    path("runs/<str:run_id>/audit/verify/", audit_api.AuditVerifyView.as_view(), name="api-run-audit-verify"),
]

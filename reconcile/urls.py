from django.urls import path

from . import views

urlpatterns = [
    path("runs/<str:run_id>/reconcile/", views.run_reconcile, name="run-reconcile"),
    path("runs/<str:run_id>/reconcile/mappings/<int:mapping_id>/decide/", views.decide_mapping,
         name="reconcile-decide-mapping"),
    path("runs/<str:run_id>/reconcile/issues/<int:issue_id>/decide/", views.decide_issue,
         name="reconcile-decide-issue"),
    path("runs/<str:run_id>/reconcile/bulk-accept/", views.bulk_accept, name="reconcile-bulk-accept"),
]

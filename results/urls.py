from django.urls import path

from . import views

urlpatterns = [
    path("runs/<str:run_id>/result/", views.result_detail, name="run-result"),
    path("runs/<str:run_id>/approve/", views.approve, name="run-approve"),
    path("runs/<str:run_id>/reopen/", views.reopen, name="run-reopen"),
    path("runs/<str:run_id>/finalize/retry/", views.retry_finalize, name="run-finalize-retry"),
    path("runs/<str:run_id>/revise/", views.revise, name="run-revise"),
]

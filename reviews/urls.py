from django.urls import path

from . import views

urlpatterns = [
    path("", views.runs_list, name="runs"),
]

urlpatterns += [
    path("runs/<str:run_id>/audit/", views.run_audit, name="run-audit"),
]

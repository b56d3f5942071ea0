from django.urls import path

from . import views

# The runs list at "/" lives in reconcile (it shows each run's decision progress).
urlpatterns = [
    path("runs/<str:run_id>/audit/", views.run_audit, name="run-audit"),
]

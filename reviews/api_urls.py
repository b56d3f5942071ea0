from django.urls import path

from . import api

urlpatterns = [
    path("runs/", api.RunListCreateView.as_view(), name="api-runs"),
    path("whoami/", api.WhoAmIView.as_view(), name="api-whoami"),
]

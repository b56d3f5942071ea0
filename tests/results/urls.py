"""The app's URLs plus results/'s own, until config/urls.py includes them (phase B of issue 24)."""
from django.urls import include, path

urlpatterns = [
    path("api/", include("results.urls")),
    path("", include("config.urls")),
]

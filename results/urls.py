"""The routes of results/ that exist so far, for config/urls.py to include under `api/`."""
from django.urls import path

from . import keys_api

urlpatterns = [
    path("keys/", keys_api.PublicKeysView.as_view(), name="api-keys"),
]

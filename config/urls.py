from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from reviews import views as review_views

# An unmatched URL: JSON under /api/, the app's page elsewhere (also under DEBUG: config/security.py).
handler404 = "config.security.not_found"
# What Django refuses before a view (a disallowed Host, a body too large, a malformed one): JSON under /api/.
handler400 = "config.security.bad_request"
# The database down: 503 with Retry-After, JSON under /api/, the styled page elsewhere (DESIGN §10).
handler500 = "config.security.server_error"

urlpatterns = [
    path("login/", review_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("healthz", review_views.healthz, name="healthz"),
    path("favicon.ico", review_views.favicon, name="favicon"),
    path("admin/", admin.site.urls),
    # The API's contract is public and ignores credentials (a stale token must not hide it).
    path("api/schema/", SpectacularAPIView.as_view(permission_classes=[], authentication_classes=[]), name="schema"),
    # The split view serves Swagger UI's initialiser as a script URL: no inline script (CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema", permission_classes=[],
                                                          authentication_classes=[]), name="api-docs"),
    path("api/", include("reviews.api_urls")),
    path("api/", include("records.api_urls")),
    path("api/", include("reconcile.api_urls")),
    path("api/", include("results.api_urls")),
    path("api/", include("events.api_urls")),
    path("", include("reviews.urls")),
    path("", include("records.urls")),
    path("", include("reconcile.urls")),
    path("", include("results.urls")),
]

"""Response headers and error pages the settings alone cannot give (DESIGN.md §9).

Django 5.2 has no Content-Security-Policy support (it arrives in 6.0), so one
small middleware sets the header; the policy lets scripts come only from this
origin, which works because no template carries inline script or inline event
handlers (the Swagger UI page uses drf-spectacular's split view, whose
initialiser is a separate script URL).
"""
from __future__ import annotations

from django.conf import settings
from django.http import HttpResponseNotFound
from django.template import loader

# Styles may be inline: htmx and Swagger UI set style attributes; scripts may not.
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])


class ContentSecurityPolicyMiddleware:
    """Adds the Content-Security-Policy header to every response that does not set its own."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy",
                                    getattr(settings, "CONTENT_SECURITY_POLICY", CONTENT_SECURITY_POLICY))
        return response


class AppNotFoundPageMiddleware:
    """Under DEBUG, Django answers a page 404 with its technical page (URL patterns, settings).

    `make run` runs with DEBUG=1 for a newcomer's first look; reviewers who mistype a run ID
    should still see the app's own 404 page. Only a superuser (the developer) keeps Django's
    debug page; API 404s are JSON already and pass through untouched. Without DEBUG Django
    renders templates/404.html itself (handler404), and this middleware does nothing.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            settings.DEBUG
            and type(response) is HttpResponseNotFound
            and response.get("Content-Type", "").startswith("text/html")
            and not getattr(getattr(request, "user", None), "is_superuser", False)
        ):
            body = loader.render_to_string("404.html", {"request_path": request.path}, request=request)
            return HttpResponseNotFound(body)
        return response

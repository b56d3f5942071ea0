"""Response headers and error pages the settings alone cannot give (DESIGN.md §9).

Django 5.2 has no Content-Security-Policy support (it arrives in 6.0), so one
small middleware sets the header; the policy lets scripts come only from this
origin, which works because no template carries inline script or inline event
handlers (the Swagger UI page uses drf-spectacular's split view, whose
initialiser is a separate script URL).
"""
from __future__ import annotations

from django.conf import settings
from django.http import HttpResponseBadRequest, HttpResponseNotFound, JsonResponse
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


def not_found(request, exception=None):
    """handler404: the error shape under /api/ (a client never parses an HTML page), the app's page elsewhere."""

    if request.path.startswith("/api/"):
        return JsonResponse({"error": {"code": "not_found", "message": f"No API endpoint or object at {request.path}.",
                                       "details": None}}, status=404)
    body = loader.render_to_string("404.html", {"request_path": request.path}, request=request)
    return HttpResponseNotFound(body)


class AppNotFoundPageMiddleware:
    """Under DEBUG, Django answers an unmatched URL or Http404 with its technical page (URL patterns, settings).

    `make run` runs with DEBUG=1 for a newcomer's first look; reviewers who mistype a run ID
    should still see the app's own 404 page, and API clients the JSON error shape. Only a
    superuser (the developer) keeps Django's debug page for pages. DRF views answer their own
    404s as JSON already and pass through untouched. Without DEBUG Django calls handler404
    (`not_found`) itself, and this middleware does nothing.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            settings.DEBUG
            and type(response) is HttpResponseNotFound
            and response.get("Content-Type", "").startswith("text/html")
            and (request.path.startswith("/api/")
                 or not getattr(getattr(request, "user", None), "is_superuser", False))
        ):
            return not_found(request)
        return response


class RefuseNulBytesMiddleware:
    """A URL whose path or query holds a NUL character is refused with 400 before any view runs.

    No ID, filter or page number contains one, and PostgreSQL text cannot hold one: left
    to the views, such a lookup would fail inside the database driver as a 500.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path or "\x00" in request.META.get("QUERY_STRING", "") or any(
            "\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists()
        ):
            return _bad_request(request, "The URL contains a NUL character (%00); no path or parameter may.")
        return self.get_response(request)


def _bad_request(request, message: str):

    if request.path.startswith("/api/"):
        return JsonResponse({"error": {"code": "invalid_url", "message": message, "details": None}}, status=400)
    return HttpResponseBadRequest(loader.render_to_string("400.html", {"message": message}))


# Seconds a client is told to wait when the database is down: a restart or failover takes about this long.
RETRY_AFTER_SECONDS = 5
DATABASE_DOWN = "The database is not answering; nothing was changed. Try again in a few seconds."


def _is_database_outage(exc) -> bool:
    from django.db import InterfaceError, OperationalError

    return isinstance(exc, (OperationalError, InterfaceError))


def service_unavailable(request):
    """503 with Retry-After: the JSON error shape under /api/, the styled page elsewhere (DESIGN §10)."""
    if request.path.startswith("/api/"):
        response = JsonResponse({"error": {"code": "database_unavailable", "message": DATABASE_DOWN,
                                           "details": {"retry_after": RETRY_AFTER_SECONDS}}}, status=503)
    else:
        from django.http import HttpResponse

        response = HttpResponse(loader.render_to_string("503.html", {"retry_after": RETRY_AFTER_SECONDS}),
                                status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseOutageMiddleware:
    """A view (API or page) that fails because the database is down answers 503, not 500 (issue 23).

    Django turns a lost connection into OperationalError or InterfaceError; the next request gets a fresh
    connection (CONN_HEALTH_CHECKS), so telling the client to retry is the truth. `server_error` does the
    same for a failure outside a view (a middleware's query), where no process_exception runs.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if _is_database_outage(exception):
            import logging

            logging.getLogger(__name__).warning("database unavailable during %s %s: %s", request.method,
                                                request.path, exception)
            return service_unavailable(request)
        return None


def bad_request(request, exception=None):
    """handler400: what Django refuses before a view (a disallowed Host, a body too large, too many fields, a
    malformed one) in the error shape under /api/ (413 for the size), the app's page elsewhere."""
    if request.path.startswith("/api/"):
        from reviews.api_errors import error_body, request_refusal

        error = request_refusal(exception)
        return JsonResponse(error_body(error), status=error.status_code)
    from django.views.defaults import bad_request as default_bad_request

    return default_bad_request(request, exception)


def server_error(request):
    """handler500: a database outage is a 503 (see DatabaseOutageMiddleware); anything else the 500 page, or the
    error shape under /api/."""
    import sys

    if _is_database_outage(sys.exc_info()[1]):
        return service_unavailable(request)
    if request.path.startswith("/api/"):
        return JsonResponse({"error": {"code": "server_error", "message": "The server failed on this request; the "
                                       "failure is logged. Read what it was to change before sending it again.",
                                       "details": None}}, status=500)
    from django.views.defaults import server_error as default_server_error

    return default_server_error(request)

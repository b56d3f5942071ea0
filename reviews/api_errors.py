"""The API's error shape (DESIGN.md §4): {"error": {"code", "message", "details"}}."""
from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import TooManyFilesSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler

from .audit import TokenRevoked
from .models import TransitionError


class ApiError(exceptions.APIException):
    """An error with our own code, status and details (DESIGN.md §4 error shape)."""

    def __init__(self, message: str, *, code: str, status_code: int = 400, details=None):
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.error_code = code
        self.details = details


class Conflict(ApiError):
    def __init__(self, message: str, *, code: str = "conflict", details=None):
        super().__init__(message, code=code, status_code=409, details=details)


_CODES = {400: "bad_request", 401: "not_authenticated", 403: "permission_denied", 404: "not_found",
          405: "method_not_allowed", 406: "not_acceptable", 409: "conflict", 413: "too_large",
          415: "unsupported_media_type", 429: "throttled"}


def error_message(detail) -> str:
    """An error detail as one sentence: each field's fault as "<field>: <what is wrong>"."""
    if isinstance(detail, dict):
        parts = []
        for key, value in detail.items():
            text = error_message(value)
            parts.append(text if key in ("non_field_errors", "detail") else f"{key}: {text}")
        return "; ".join(parts)
    if isinstance(detail, list):
        return " ".join(error_message(item) for item in detail)
    return str(detail)


def request_refusal(exc) -> ApiError:
    """What Django refuses in a request before any view judges it (its Host, its size, its fields) as the API's
    error: config.security's handler400 answers with it under /api/, and the handler below inside a view."""
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return ApiError(f"The request body is larger than {limit} bytes, the most the server reads; send a large "
                        "report as a multipart file part.", code="too_large", status_code=413,
                        details={"limit": limit})
    if isinstance(exc, (TooManyFieldsSent, TooManyFilesSent)):
        return ApiError(f"The request sends more fields or files than the server reads "
                        f"({settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} fields, {settings.DATA_UPLOAD_MAX_NUMBER_FILES} "
                        "files).", code="too_many_fields")
    if isinstance(exc, DisallowedHost):  # the host is not echoed: it is the caller's, and says nothing new
        return ApiError("The Host header names no host this server answers for.", code="disallowed_host")
    return ApiError("The request is malformed.", code="bad_request")


def error_body(error: ApiError) -> dict:
    return {"error": {"code": error.error_code, "message": str(error.detail), "details": error.details}}


def exception_handler(exc, context):
    """Every API error as {"error": {"code", "message", "details"}}."""
    if isinstance(exc, SuspiciousOperation):  # logged as Django's own handler logs it (DEBUG's page aside)
        logging.getLogger(f"django.security.{exc.__class__.__name__}").error(
            str(exc), extra={"status_code": 400, "request": context.get("request")})
        exc = request_refusal(exc)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    if isinstance(exc, DjangoPermissionDenied):
        # DRF would answer its generic message; the access checks say which role is needed.
        exc = exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, TokenRevoked):
        # Raised inside the view, after DRF's own 401 handling: the 401 and its challenge are set here.
        response = drf_exception_handler(exceptions.AuthenticationFailed(str(exc)), context)
        response.status_code = 401
        response["WWW-Authenticate"] = "Token"
        response.data = {"error": {"code": "token_revoked", "message": str(exc), "details": None}}
        return response
    if isinstance(exc, TransitionError):
        exc = Conflict(str(exc), code="invalid_state")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ApiError):
        code, details = exc.error_code, exc.details
    elif isinstance(exc, exceptions.ValidationError):
        code, details = "invalid", exc.detail
    elif isinstance(exc, (Http404, exceptions.NotFound)):
        code, details = "not_found", None
    else:
        code = _CODES.get(response.status_code, getattr(exc, "default_code", "error"))
        details = None
    message = error_message(exc.detail) if hasattr(exc, "detail") else str(exc)
    if isinstance(exc, Http404):
        message = "Not found."
    response.data = {"error": {"code": code, "message": message, "details": details}}
    return response

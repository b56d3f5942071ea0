"""Why an upload is refused: the errors the HTTP edge answers 4xx with, and the checks that raise them."""
from __future__ import annotations

import codecs
import logging
import re
from typing import Any

from django.conf import settings

from reviews.models import Run

from ..models import Role

logger = logging.getLogger(__name__)


class UploadRefused(Exception):
    """Input the pipeline will not take; the message says what is wrong and what to do."""

    code = "invalid_upload"

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class AnswersRefused(UploadRefused):
    """A corrected version whose answers do not match the open requests, or that drops a declared ID;
    `code` says which (`answers_mismatch`, `dropped-id`)."""

    def __init__(self, message: str, *, code: str, details=None) -> None:
        super().__init__(message, details=details)
        self.code = code


class EmptyReport(UploadRefused):
    code = "empty_report"


class ReportTooLarge(UploadRefused):
    code = "too_large"


class NotText(UploadRefused):
    code = "not_utf8_text"


class UnknownRole(UploadRefused):
    code = "unknown_role"


class RunClosed(UploadRefused):
    code = "run_not_accepting_uploads"


class RunFinal(RunClosed):
    """A final run is closed for good (DESIGN §3): nothing reopens it; a revision starts its successor."""

    code = "run_final"


def refuse_closed_run(run: Run, what: str) -> RunClosed:
    """The refusal for `what` (an upload, a source snapshot) on a run that takes none, saying what to do."""
    if run.status == Run.Status.FINAL:
        return RunFinal(f"run {run.run_id} is final and closed for good; {what} is refused. To change the analysis, "
                        f"revise it (POST /api/runs/{run.run_id}/revise/) and upload to the new run",
                        details={"status": run.status})
    return RunClosed(f"run {run.run_id} is {run.status}; {what} is refused once a run is approved; "
                     f"reopen it first", details={"status": run.status})


class NotParticipant(Exception):
    """The uploader is neither an admin nor a participant of the run (DESIGN §9), as judged under the run's
    lock; the HTTP edge answers 403 with the denial audited (reviews.access.check_participant)."""


class BundleRefused(UploadRefused):
    code = "bundle_refused"


class BundleTooLarge(BundleRefused):
    code = "too_large"


_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def known_role(role: str) -> str:
    if role not in Role.values:
        raise UnknownRole(f"unknown role {role!r}; use one of: {', '.join(Role.values)}",
                          details={"roles": list(Role.values)})
    return role


def check_report_bytes(content: bytes) -> str:
    """The report's text, or a refusal: empty, too large, binary, not UTF-8."""
    if not content or not content.strip():
        raise EmptyReport("the report is empty; upload the report's UTF-8 text")
    if len(content) > settings.MAX_UPLOAD_BYTES:
        raise ReportTooLarge(f"the report is {len(content)} bytes; the limit is {settings.MAX_UPLOAD_BYTES} bytes",
                             details={"size": len(content), "limit": settings.MAX_UPLOAD_BYTES})
    if content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise NotText("UTF-16 text (it starts with a UTF-16 byte-order mark); save the report as UTF-8",
                      details={"offset": 0})
    nul = content.find(b"\x00")
    if nul != -1:
        raise NotText(f"binary content: a NUL byte at byte offset {nul}; reports are UTF-8 text",
                      details={"offset": nul})
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotText(f"not UTF-8: byte 0x{content[error.start]:02x} at byte offset {error.start} is invalid; "
                      "save the report as UTF-8", details={"offset": error.start}) from None
    controls = len(_CONTROL_RE.findall(text))
    if controls > max(16, len(text) // 20):
        raise NotText(f"binary content: {controls} control characters in {len(text)}; reports are UTF-8 text",
                      details={"control_characters": controls})
    return text

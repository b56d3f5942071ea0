"""The one limit on the free text a caller writes (DESIGN §9): rationales, notes, reasons, replies, answers.

It is prose carried into the audit trail, the pages, the feed and the result: a megabyte of it is a
mistake or an attack. Each service that stores such a text asks `too_long` of it, as stripped, before
anything is stored, and raises its own refusal with the answer (the pages show it as they show the
service's other refusals); the API's request bodies refuse it first in the same words
(reviews.api_input.TextLimit), which the schema documents as the field's maxLength.
"""
from __future__ import annotations

MAX_TEXT_CHARS = 20_000


def too_long(name: str, text: str) -> str:
    """'' when `text` fits; else its refusal naming `name`: "<name>: N characters; it may hold at most 20000."."""
    if len(text) <= MAX_TEXT_CHARS:
        return ""
    return f"{name}: {len(text)} characters; it may hold at most {MAX_TEXT_CHARS}."

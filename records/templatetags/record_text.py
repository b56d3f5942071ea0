"""`{{ record.text|record_markdown }}`: a record's text rendered as sanitised Markdown (records.record_markdown)."""
from __future__ import annotations

from django import template

from records.record_markdown import render_record_text

register = template.Library()


@register.filter
def record_markdown(text: str):
    return render_record_text(text or "")

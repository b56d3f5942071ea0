"""A verification member's `## Blockers` (each addressed to a report, `runtime: …`) and `## Limits` (DESIGN §6)."""
from __future__ import annotations

from records.document import Blocker, Limit, Section

from .grammar import ADDRESSEE_RE, NONE_RE
from .headings import norm
from .lines import ReportLines
from .tables import issues_in


def is_verification(doc_type: str) -> bool:
    """Whether a type is a verification member's (`…/agentic-system-verification.md` and its kin)."""
    return "verification" in doc_type.rsplit("/", 1)[-1]


def entries(doc: ReportLines, found_sections: list[Section], title: str):
    """The bullets of the first section called `title`, "none" aside."""
    for section in found_sections:
        if norm(section.title) == title:
            return [e for e in issues_in(doc, section.line_start, section.line_end - 1)
                    if not (NONE_RE.match(e.text) and len(e.text) < 60)]
    return []


def blockers(doc: ReportLines, found_sections: list[Section]) -> list[Blocker]:
    found = []
    for entry in entries(doc, found_sections, "blockers"):
        m = ADDRESSEE_RE.match(entry.text)
        if m:
            found.append(Blocker(m.group("addressee"), m.group("text").strip(), entry.line, entry.references))
        else:
            found.append(Blocker("", entry.text, entry.line, entry.references))
    return found


def limits(doc: ReportLines, found_sections: list[Section]) -> list[Limit]:
    return [Limit(e.text, e.line, e.references) for e in entries(doc, found_sections, "limits")]

"""Plain data describing one parsed member report.

The parser (`records.parsing`) produces a `ParsedReport`; validation
(`records.validation`), the ORM layer (`records.services`) and the result
renderer consume it. Nothing here touches the database. Line numbers are
1-based line numbers in the original text.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Segment:
    """A contiguous slice of the original text.

    Concatenating every segment's `text`, in order, gives back the original
    text exactly (the lossless property).
    """

    kind: str  # "front_matter", "heading", "text", "declaration", "annotation", "table", "quotation", "fence", "blank", ...
    text: str
    line: int


@dataclass(frozen=True)
class Section:
    title: str
    level: int  # 1..6 for Markdown headings; inferred level for plain-text headings
    line_start: int
    line_end: int  # inclusive


@dataclass(frozen=True)
class Field:
    """A labelled field inside a declaration or annotation (`Label: value`)."""

    label: str
    value: str
    line: int
    bullet: bool = False  # written as an unindented `- Label:` / `• Label:` bullet


@dataclass(frozen=True)
class SourceRow:
    source_id: str  # SRC-n
    columns: tuple[tuple[str, str], ...]  # (column header, cell) in table order
    line: int

    @property
    def revision(self) -> str:
        # Registers head the column "Revision" or "Revision or capture".
        for header, cell in self.columns:
            if header.strip().lower().startswith("revision"):
                return cell.strip()
        return ""


@dataclass(frozen=True)
class Reference:
    record_id: str
    line: int


@dataclass(frozen=True)
class MalformedId:
    """A token shaped like a record ID that breaks the grammar, kept whole
    (`MEM-OBJ-tag-to-note-map`, `MEM-OBJ-Draft`); never read as a record."""

    token: str
    line: int
    declared: bool  # it leads a declaration (heading, line, bold or table form)


@dataclass(frozen=True)
class RangeReference:
    """`RTE-1..3`, `RTE-1–3`, `SRC-1–3`: detected and reported, never expanded."""

    text: str
    line: int


@dataclass(frozen=True)
class Declaration:
    record_id: str
    kind: str  # CMP, OBJ, RTE, CLM, ABS, BAP
    prefix: str  # "RT", "MEM", "EPI" or "" for bare IDs
    label: str
    text: str  # the record's original text, exactly as written (heading/leading line to end of its region)
    body: str  # text after the label
    fields: tuple[Field, ...]
    line_start: int
    line_end: int  # inclusive
    form: str  # "heading", "line", "id-line", "bold", "table"
    references: tuple[Reference, ...] = ()
    part_of: tuple[str, ...] = ()  # every `Part of:` value seen in the declaration


@dataclass(frozen=True)
class Annotation:
    target: str  # the annotated record ID
    label: str
    text: str
    body: str
    fields: tuple[Field, ...]
    line_start: int
    line_end: int
    references: tuple[Reference, ...] = ()


@dataclass(frozen=True)
class IntegrationIssue:
    index: int  # 1-based position in the member's Integration issues section
    text: str  # the bullet's text, marker excluded
    line: int
    references: tuple[str, ...] = ()  # full record IDs it names, in order, without duplicates


@dataclass(frozen=True)
class MappingStatement:
    source: str  # the proposal (member record ID)
    target: str  # the canonical record ID ("" when none)
    disposition: str  # "mapped" for `A → B` lists; the table's disposition cell otherwise
    line: int
    form: str  # "list" or "table"


@dataclass(frozen=True)
class Amendment:
    kind: str  # "amendment" or "unresolved-conflict"
    text: str  # the paragraph after the `Amendment:` / `Unresolved conflict:` label
    line: int
    references: tuple[str, ...] = ()


@dataclass(frozen=True)
class Quotation:
    text: str  # the quoted body, without the anchor
    path: str
    lines: str  # "12-30" or ""
    commit: str  # "" when the anchor names no commit
    line: int


@dataclass(frozen=True)
class RecordCitation:
    """A links-form citation `[ID](member.md#anchor)` (DESIGN §2 "Citation")."""

    record_id: str  # the link text, as written
    member: str  # the destination's file; "" for `(#anchor)` inside the declaring member
    anchor: str  # "" when the destination has no `#anchor`
    line: int
    column: int  # 1-based, where the link's `[` is
    written: str  # the whole link


@dataclass(frozen=True)
class Blocker:
    """One `## Blockers` entry of a verification member: `runtime: …` (DESIGN §6)."""

    addressee: str  # the report it addresses, as written ("" when the entry names none)
    text: str  # the entry after the addressee
    line: int
    references: tuple[str, ...] = ()


@dataclass(frozen=True)
class Limit:
    """One `## Limits` entry of a verification member."""

    text: str
    line: int
    references: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParsedReport:
    text: str
    segments: tuple[Segment, ...]
    front_matter: dict = field(default_factory=dict)
    front_matter_error: str = ""
    title: str = ""
    doc_type: str = ""  # front matter `type` or the plain-text `Type:` line
    generation: str = "slug"  # "bare-numbered", "prefixed-numbered", "slug"
    sections: tuple[Section, ...] = ()
    sources: tuple[SourceRow, ...] = ()
    declarations: tuple[Declaration, ...] = ()
    annotations: tuple[Annotation, ...] = ()
    integration_issues: tuple[IntegrationIssue, ...] = ()
    mappings: tuple[MappingStatement, ...] = ()
    amendments: tuple[Amendment, ...] = ()
    quotations: tuple[Quotation, ...] = ()
    references: tuple[Reference, ...] = ()  # every full record ID in prose, quotations and fences excluded
    ranges: tuple[RangeReference, ...] = ()
    malformed_ids: tuple[MalformedId, ...] = ()
    # The links form (DESIGN §1, §6); empty in every older generation.
    links_form: bool = False
    citations: tuple[RecordCitation, ...] = ()
    blockers: tuple[Blocker, ...] = ()
    limits: tuple[Limit, ...] = ()

    def counts(self) -> dict[str, int]:
        return {
            "declarations": len(self.declarations),
            "annotations": len(self.annotations),
            "integration_issues": len(self.integration_issues),
            "sources": len(self.sources),
            "mappings": len(self.mappings),
            "quotations": len(self.quotations),
            "references": len(self.references),
        } if not self.links_form else {
            "declarations": len(self.declarations),
            "annotations": len(self.annotations),
            "integration_issues": len(self.integration_issues),
            "sources": len(self.sources),
            "mappings": len(self.mappings),
            "quotations": len(self.quotations),
            # The links form cites by link; its bare IDs are mentions, counted apart (DESIGN §2 "Citation").
            "references": len(self.citations),
            "citations": len(self.citations),
            "mentions": len(self.mentions()),
            "blockers": len(self.blockers),
            "limits": len(self.limits),
        }

    def mentions(self) -> list[Reference]:
        """The bare IDs of a links-form report: its references less the one each citation's link text gives."""
        cited = Counter((c.record_id, c.line) for c in self.citations)
        found = []
        for ref in self.references:
            key = (ref.record_id, ref.line)
            if cited[key]:
                cited[key] -= 1
                continue
            found.append(ref)
        return found

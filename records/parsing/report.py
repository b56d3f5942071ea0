"""The parse of one report: the passes in their order, and the segments that give back its exact text."""
from __future__ import annotations

from records import ids
from records.document import ParsedReport, Segment

from . import headings, leads, links, quotations, references, statements, tables, verification
from .lines import ReportLines

RESULT_TYPE = "analysis-result"  # `types/agentic-system-analysis-result.md`


def parse_report(text: str) -> ParsedReport:
    """Parse a member report. Never raises; the result is lossless."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    try:
        return parse_report_strict(text)
    except Exception as exc:  # pragma: no cover - a parser bug must not lose the upload
        found = (Segment("text", text, 1),) if text else ()
        return ParsedReport(
            text=text,
            segments=found,
            front_matter_error=f"parser error: {type(exc).__name__}: {exc}",
        )


def parse_report_strict(text: str) -> ParsedReport:
    """`parse_report` without the safety net; tests use it to surface bugs."""
    doc = ReportLines(text)
    headings.read_front_matter(doc)
    headings.mark_blocks(doc)
    headings.mark_plain_headings(doc)
    found_sections = headings.sections(doc)
    quotations.find_anchors(doc)
    found_type = headings.doc_type(doc)
    found_leads = leads.find_leads(doc, found_sections, result=RESULT_TYPE in found_type)
    quotations.mark_plain_quotations(doc, {lead.line for lead in found_leads})
    found_quotations = quotations.quotations(doc)
    found_regions = leads.regions(doc, found_leads)
    declarations, annotations = leads.records(doc, found_leads, found_regions)
    found_references, ranges = references.references(
        doc, [(lead.line, lead.record_id) for lead in found_leads if lead.kind == "declaration"]
    )
    found_citations = links.citations(doc)
    links_form = links.is_links_form(doc, found_type, declarations, found_citations)
    # Older generations link too (`[RTE-1](runtime.md)`), but cite by the bare ID: only the links form's links are citations.
    found_citations = found_citations if links_form else []
    verifying = links_form or verification.is_verification(found_type)
    shapes = [d.record_id for d in declarations] + [a.target for a in annotations]
    if not shapes:
        shapes = [r.record_id for r in found_references]
    return ParsedReport(
        text=doc.text,
        segments=segments(doc, found_regions, found_leads),
        front_matter=doc.front_matter,
        front_matter_error=doc.front_matter_error,
        title=headings.title(doc),
        doc_type=found_type,
        generation=ids.generation_of(shapes),
        sections=tuple(found_sections),
        sources=tuple(tables.sources(doc, found_sections)),
        declarations=tuple(declarations),
        annotations=tuple(annotations),
        integration_issues=tuple(tables.integration_issues(doc, found_sections)),
        mappings=tuple(statements.mappings(doc)),
        amendments=tuple(statements.amendments(doc)),
        quotations=tuple(found_quotations),
        references=tuple(found_references),
        ranges=tuple(ranges),
        malformed_ids=tuple(sorted(doc.malformed, key=lambda m: (m.line, not m.declared))),
        links_form=links_form,
        citations=tuple(found_citations),
        blockers=tuple(verification.blockers(doc, found_sections)) if verifying else (),
        limits=tuple(verification.limits(doc, found_sections)) if verifying else (),
    )


def segments(doc: ReportLines, found_regions, found_leads) -> tuple[Segment, ...]:
    """The report cut into consecutive segments (records, headings, quotations, …) that concatenate to its text."""
    owner = [None] * doc.n
    for pos, ((s, e), lead) in enumerate(zip(found_regions, found_leads)):
        for k in range(s, e + 1):
            owner[k] = (lead.kind, pos)
    found = []
    k = 0
    while k < doc.n:
        if owner[k] is not None:
            key = owner[k]
            seg_kind = key[0]
        else:
            seg_kind = doc.kind[k]
            if seg_kind == "quote":
                seg_kind = "quotation"
            key = (seg_kind, k if seg_kind == "heading" else None)
        j = k
        while j + 1 < doc.n:
            nxt = owner[j + 1]
            if nxt is None:
                nk = doc.kind[j + 1]
                nk = "quotation" if nk == "quote" else nk
                nkey = (nk, j + 1 if nk == "heading" else None)
            else:
                nkey = nxt
            if nkey != key:
                break
            j += 1
        found.append(Segment(seg_kind, "".join(doc.raw[k: j + 1]), k + 1))
        k = j + 1
    return tuple(found)

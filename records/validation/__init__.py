"""The record contract (DESIGN §6) checked on parsed member reports.

Pure functions on `records.document` dataclasses: no ORM, no Django. Every
check returns `Finding` values; nothing raises on bad content.

Generations. A member written in the current form (prefixed slug IDs such as
`MEM-OBJ-playbook-content`) gets the strict rules as errors. Older
generations (bare numbered IDs as in seed 000, or prefixed numbered IDs such
as `RT-OBJ-2`) are held only to what they required: where a rule changed
(section lists, route fields in prose or summary tables, prose line anchors,
...) the finding is a warning. The generation is read from the member's own
ID shapes, then its front matter `type`; a member naming no record at all
takes the generation of the rest of its set.

The checks live in one module per rule family; this package re-exports what
callers use, so `from records.validation import validate_set` (and the rest)
keeps working:

- findings: Finding, severities, RunFacts, MemberInput, the collector
- reading: the ID grammar and small readers over a ParsedReport (prose lines, front matter)
- citations: what a citation of the source is (quotations, prose anchors, their paths, ranges and
  commit), read one way for validation and for the quotation check (records.validation.quotes)
- vocabulary: kind headings, status values, route fields, required sections, prefixes
- generation: a member's generation, whether it is held to the current form (asked by the quotation
  check too), and the severity it holds each finding to; generation_rules: which rules each
  generation is held to
- validate: validate_member and validate_set, and the order of the member checks
- manifest: validate_manifest (ARTIFACT.yaml pins)
- front_matter, sections, record_ids, part_of, references, status_fields,
  route_fields, sources, amendments, memory_profile, mappings: the rule families
- profile_forms, profile_v2: the memory-comparison profile's vocabulary and checks, by the form it is
  written in (memory_profile turns their problems into findings)
- quotes: quotations and source anchors checked against the run's frozen source (records.services
  runs it with the snapshot's files)
- id_length: the record-ID length a report must keep to be stored (checked at parse time)
- set_checks: the checks across a run's set
"""
from __future__ import annotations

from . import citations
from .findings import ERROR, WARNING, Finding, MemberInput, RunFacts
from .generation import current_form
from .manifest import validate_manifest
from .reading import is_record_id, is_source_id
from .validate import validate_member, validate_set
from .vocabulary import (
    CONCLUSION_VALUES,
    GUARANTEE_VALUES,
    KIND_HEADINGS,
    PROFILE_ASSESSMENTS,
    PROFILE_AXES,
    PROFILE_BASES,
    PROFILE_FIRST_AXES,
    PROFILE_LATER_AXES,
    REQUIRED_SECTIONS,
    RESULT_DISPOSITIONS,
    ROLE_PREFIXES,
    ROLES_WITH_SHARED_RECORDS,
    ROUTE_FIELDS,
    YES_NO_AXES,
)

__all__ = [
    "CONCLUSION_VALUES",
    "ERROR",
    "GUARANTEE_VALUES",
    "KIND_HEADINGS",
    "PROFILE_ASSESSMENTS",
    "PROFILE_AXES",
    "PROFILE_BASES",
    "PROFILE_FIRST_AXES",
    "PROFILE_LATER_AXES",
    "REQUIRED_SECTIONS",
    "RESULT_DISPOSITIONS",
    "ROLES_WITH_SHARED_RECORDS",
    "ROLE_PREFIXES",
    "ROUTE_FIELDS",
    "WARNING",
    "YES_NO_AXES",
    "Finding",
    "MemberInput",
    "RunFacts",
    "citations",
    "current_form",
    "is_record_id",
    "is_source_id",
    "validate_manifest",
    "validate_member",
    "validate_set",
]

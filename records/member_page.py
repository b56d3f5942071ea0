"""The member page's records and text, a page at a time (DESIGN §5, §11): what one request reads does
not grow with the report. Records arrive in document order, MEMBER_PAGE_RECORDS at a time (the rest as
the reviewer scrolls, or by a plain link), found by their ordinal (the (version, ordinal) constraint's
index); the counts per kind are kept by the parse (`kind_counts`); the full text shows its first
FULL_TEXT_BYTES, or, for a link to a line (`?line=N`), the lines around that line."""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import BinaryField, Case, Count, Min, Q, Value, When
from django.db.models.functions import Substr

from .ids import KINDS
from .models import MemberVersion, Record
from .validation import KIND_HEADINGS

MEMBER_PAGE_RECORDS = 50
FULL_TEXT_BYTES = 64 * 1024
FULL_TEXT_LINES = 400  # around a linked line


@dataclass
class RecordGroup:
    """Consecutive records of one kind (or annotations) on this page of the member page."""
    key: tuple[str, str]
    name: str
    total: int
    starts: bool  # the group holds its kind's first record: the section carries the kind's anchor
    entries: list = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.key[1]

    @property
    def annotations(self) -> bool:
        return self.key[0] == Record.Type.ANNOTATION


def numbered(text: str, first: int) -> list[tuple[int, str]]:
    return [(first + i, line) for i, line in enumerate(text.splitlines())]


def count_kinds(records) -> list[list]:
    """[[record type, kind, how many, first ordinal], …] of `records` (any objects with record_type, kind
    and ordinal), in the order their kinds first appear: what the parse keeps as `kind_counts`."""
    found: dict[tuple[str, str], list] = {}
    for record in records:
        key = (record.record_type, record.kind)
        if key in found:
            found[key][2] += 1
            found[key][3] = min(found[key][3], record.ordinal)
        else:
            found[key] = [record.record_type, record.kind, 1, record.ordinal]
    return list(found.values())


def kind_totals(version: MemberVersion) -> dict[tuple[str, str], dict]:
    """{(record type, kind): {"n", "first"}}: the page's counters per kind, as the parse kept them
    (`kind_counts`), or from one aggregate query for a version parsed before they were kept."""
    if version.kind_counts is not None:
        return {(kind_type, kind): {"n": n, "first": first} for kind_type, kind, n, first in version.kind_counts}
    rows = (Record.objects.filter(member_version=version).values("record_type", "kind")
            .annotate(n=Count("id"), first=Min("ordinal")).order_by())
    return {(row["record_type"], row["kind"]): row for row in rows}


def records_from(totals: dict, ordinal: int) -> int:
    """How many records start at `ordinal` or later (ordinals run on without gaps)."""
    if not totals:
        return 0
    return sum(t["n"] for t in totals.values()) - (ordinal - min(t["first"] for t in totals.values()))


def _name(key: tuple[str, str]) -> str:
    if key[0] == Record.Type.ANNOTATION:
        return "Annotations"
    return KIND_HEADINGS.get(key[1]) or key[1] or "Other"


def kinds_nav(totals: dict) -> list[dict]:
    """The kinds in the report's order (KINDS first), each with its count and first record's ordinal."""
    order = {kind: i for i, kind in enumerate(KINDS)}
    keys = sorted(totals, key=lambda k: (k[0] == Record.Type.ANNOTATION, order.get(k[1], len(order)), k[1]))
    return [{"key": key, "kind": key[1], "name": _name(key), "n": totals[key]["n"], "first": totals[key]["first"],
             "annotations": key[0] == Record.Type.ANNOTATION} for key in keys]


def text_head(shown: Q) -> Case:
    """The first FULL_TEXT_BYTES (and one more, to tell a cut) of the version `shown` picks, as an
    annotation of the versions' list: the text costs no query of its own."""
    return Case(When(shown, then=Substr("content", 1, FULL_TEXT_BYTES + 1, output_field=BinaryField())),
                default=Value(None), output_field=BinaryField())


def first_ordinal(totals: dict) -> int:
    return min((t["first"] for t in totals.values()), default=1)


def start_ordinal(version: MemberVersion, params, totals: dict) -> int:
    """Where this page of records starts: `from` (an ordinal); or, for `line`, the start of the page that
    holds the record holding it (pages counted from the first record, so a report that fits one page
    opens whole); or the first record."""
    first = first_ordinal(totals)
    wanted = params.get("from", "")
    if wanted.isdigit():
        return max(int(wanted), first)
    line = params.get("line", "")
    if line.isdigit():
        # No index on line_end: this reads the version's records, on a link to a line only.
        found = (Record.objects.filter(member_version=version, line_end__gte=int(line)).order_by("ordinal")
                 .values_list("ordinal", flat=True).first())
        if found is not None:
            return first + (found - first) // MEMBER_PAGE_RECORDS * MEMBER_PAGE_RECORDS
    return first


def records_page(version: MemberVersion, start: int, totals: dict) -> tuple[list[RecordGroup], int | None]:
    """The records from ordinal `start`, grouped into runs of one kind; and the next page's first ordinal."""
    records = list(Record.objects.filter(member_version=version, ordinal__gte=start)
                   .order_by("ordinal")[:MEMBER_PAGE_RECORDS + 1])
    following = records[MEMBER_PAGE_RECORDS].ordinal if len(records) > MEMBER_PAGE_RECORDS else None
    groups: list[RecordGroup] = []
    for record in records[:MEMBER_PAGE_RECORDS]:
        key = (record.record_type, record.kind if record.record_type != Record.Type.ANNOTATION else "")
        if not groups or groups[-1].key != key:
            total = totals.get((record.record_type, record.kind), {"n": 0, "first": record.ordinal})
            if key[0] == Record.Type.ANNOTATION:
                total = {"n": sum(v["n"] for k, v in totals.items() if k[0] == key[0]),
                         "first": min(v["first"] for k, v in totals.items() if k[0] == key[0])}
            groups.append(RecordGroup(key=key, name=_name(key), total=total["n"],
                                      starts=total["first"] == record.ordinal))
        groups[-1].entries.append({"record": record, "lines": numbered(record.text, record.line_start)})
    return groups, following


def full_text(version: MemberVersion, params, groups: list[RecordGroup], *, paged: bool) -> dict | None:
    """The report's text shown on the page: all of it when its records fit one page, else (a report in
    pages) the lines around a linked line (`?line=N`) or nothing (the page links to line 1); each line
    anchored (`L<n>`) unless a record on this page already anchors it."""
    covered = {n for group in groups for entry in group.entries for n, _ in entry["lines"]}
    line = params.get("line", "")
    first = 1
    if paged and not line.isdigit():
        return None  # the head came with the versions' list all the same: the same queries either way
    if not paged or version.size <= FULL_TEXT_BYTES:
        head = bytes(version.head)
        whole = len(head) <= FULL_TEXT_BYTES
        text = head.decode("utf-8", "replace")
        lines = text.splitlines() if whole else text.splitlines()[:-1]  # the last line may be cut
    else:
        # A link to one line of a large report: the only request that reads the whole text.
        content = bytes(MemberVersion.objects.values_list("content", flat=True).get(pk=version.pk))
        lines = content.decode("utf-8", "replace").splitlines()
        first = max(1, int(line) - FULL_TEXT_LINES // 2)
        lines = lines[first - 1:first - 1 + FULL_TEXT_LINES]
        whole = False
    return {"lines": [(first + i, text, first + i not in covered) for i, text in enumerate(lines)],
            "whole": whole, "first": first, "last": first + len(lines) - 1}

"""The rows of the reconciliation page: a member record beside the canonical record a mapping points it
at (`PairRow`), an integration issue (`IssueRow`), an amendment (`AmendmentRow`); how they are built from
data read up front (no query per row) and turned into the plain values `reconcile/_pair_row.html` prints,
for first paint and for the swap after a decision alike."""
from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass
from urllib.parse import quote

from django.db.models import F, Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import template_localtime

from records.ids import parse_id
from records.record_markdown import DEL_CLOSE, DEL_OPEN, INS_CLOSE, INS_OPEN, render_marked, render_record_text
from records.models import IntegrationIssue, Record
from records.templatetags.quotations import page_quotations
from reviews.access import DECIDE, PROPOSE, has_any_role
from reviews.models import Run

from .. import selectors
from .. import diffs, dispositions
from ..models import AmendmentDecision, CanonicalRecord, Decidable, IssueDecision, Mapping
from .context import kept_query, standing_for


# Columns the page reads; the bytes and parser output of a version stay in the database.


@dataclass
class PairRow:
    """One line of the page: a member record and the canonical record a mapping points it at."""

    record: Record | None
    mapping: Mapping | None
    canonical: CanonicalRecord | None
    would_be: str = ""
    via: str = ""  # the member record the target names, when it entered the shared set as `canonical`
    settled: str = ""  # what the record's disposition makes of this row (a lost alternative, a rejected record)
    conflict: str = ""
    message: str = ""
    message_class: str = ""
    action: str = ""  # where the row's decision form posts
    propose_action: str = ""  # where "propose another mapping" for the row's record goes
    reject_action: str = ""  # where the rejection of the row's canonical record goes
    targets_url: str = ""  # where the target field asks for the choices matching what is typed
    quotations: tuple = ()  # the checked quotations inside the row's record
    # Each form is a link until opened (2,000 rows stay light); a refused one comes back open with the input.
    propose_form: dict | None = None
    propose_message: str = ""
    propose_message_class: str = ""
    reject_form: dict | None = None
    canonical_message: str = ""
    canonical_message_class: str = ""
    oob: bool = False  # swapped out of band, beside the row the reviewer acted on
    diff: tuple | None = None  # the stored word diff (reconcile/diffs.py), when the page looked it up

    @property
    def dom_id(self) -> str:
        return f"pair-{self.mapping.pk}" if self.mapping else f"record-{self.record.pk}"

    @property
    def source(self) -> str:
        return self.record.record_id if self.record is not None else self.mapping.source

    @property
    def kind(self) -> str:
        if self.record is not None:
            return self.record.kind
        parsed = parse_id(self.mapping.source) if self.mapping else None
        return parsed[1] if parsed else ""

    @property
    def is_open(self) -> bool:
        return self.mapping is not None and self.mapping.is_open

    @staticmethod
    def _action_html(name: str, form: dict | None, action: str, param: str, value, text: str) -> SafeString | str:
        """A row's propose or reject control: the form when it came back refused, else the link that
        opens it; nothing without an action (the user may not do it). Made here, not in
        `_pair_row.html`: one value per row costs a fraction of the template's lookups."""
        if form is not None:
            return render_to_string(f"reconcile/row_action.html#{name}-form", {name: form, "csrf_input": form["csrf"]})
        if not action:
            return ""
        return _opener(f"{action}{'&' if '?' in action else '?'}{param}={value}", text)

    @property
    def score(self) -> str:
        """The suggestion's score with two decimals ('' when the mapping has none)."""
        score = self.mapping.score if self.mapping else None
        return "" if score is None else f"{score:.2f}"

    @property
    def needs_target(self) -> bool:
        return self.mapping is not None and self.mapping.relation != Mapping.Relation.NO_COUNTERPART

    def display(self) -> dict:
        """Everything `_pair_row.html` prints, as plain values: the template does no lookups
        through models and few conditionals, which is what keeps 2,000 rows fast to render.
        Each text is escaped here, with the function the template engine would print it through (a
        quarter of a row's rendering was the engine's escaping, value by value)."""
        return {key: SafeString(html.escape(value)) if type(value) is str else value
                for key, value in self._values().items()}  # django's escape(), without its laziness check

    def _values(self) -> dict:
        """`display`'s values, not yet escaped. The word diff is computed here, so only for rows that are
        shown and have a canonical side."""
        m, record, canonical = self.mapping, self.record, self.canonical
        if record is not None and canonical is not None:
            left, right = self.diff or markdown_diff_html(record.text, canonical.text)
        else:
            left = render_record_text(record.text) if record is not None else ""
            right = render_record_text(canonical.text) if canonical is not None else ""
        row = {
            "dom_id": self.dom_id,
            "css": f"state-{m.state if m else 'unmapped'}" + (" conflict" if self.conflict else ""),
            "source": self.source,
            "source_query": quote(self.source, safe="/"),  # the "Request a correction" link's record=
            "label": record.label if record is not None else "",
            "record": record is not None,
            "left": left,
            "mapping": m is not None,
            "message": self.message,
            "message_class": self.message_class,
            "kind": self.kind,
            "oob": self.oob,
            "propose_html": self._action_html("propose", self.propose_form, self.propose_action, "row", self.dom_id,
                                              f"Propose {'another' if m else 'a'} mapping…"),
            "propose_message": self.propose_message,
            "propose_message_class": self.propose_message_class,
            "quotations": self.quotations,
        }
        if m is None:
            return row
        if canonical is not None:
            side = "canonical"
        elif m.relation == Mapping.Relation.NEW:
            # An open new mapping shows what it would allocate; a rejected one allocated nothing.
            side = "new" if m.is_open else "not-entered"
        elif m.relation == Mapping.Relation.NO_COUNTERPART:
            side = "none"
        else:
            side = "missing"
        decided = ""
        if m.decided_by:
            # A stale mapping keeps who decided it last; the change that made it stale was not theirs.
            stale = m.state == Mapping.State.STALE
            decided = f"{'decided' if stale else m.state} by {m.decided_by}"
            if m.decided_at:
                decided += f", {_minute(template_localtime(m.decided_at))}"
            if m.rationale:
                decided += f": “{m.rationale}”"
            if stale:
                decided += "; the record or its target changed since: decide again"
        is_open = m.is_open
        canonical_rejected = canonical is not None and canonical.state == CanonicalRecord.State.REJECTED
        row.update({
            "side": side,
            "relation": m.relation,
            "mapping_pk": m.pk,
            "canonical_id": canonical.canonical_id if canonical is not None else "",
            "canonical_label": canonical.label if canonical is not None else "",
            "canonical_rejected": canonical_rejected,
            "canonical_rationale": canonical.rationale if canonical_rejected else "",
            "reject_html": self._action_html("reject", self.reject_form, self.reject_action, "mapping", m.pk,
                                             f"Reject {canonical.canonical_id}…")
            if canonical is not None and not canonical_rejected else "",
            "canonical_message": self.canonical_message,
            "canonical_message_class": self.canonical_message_class,
            "right": right,
            "would_be": self.would_be,
            "via": self.via,
            "settled": self.settled,
            "target": m.target,
            "state": m.state,
            "score": self.score,
            "provenance": f"{m.origin}{f' · {m.proposed_by}' if m.proposed_by else ''} · v{m.version}",
            "reason": m.reason,
            "conflict": self.conflict,
            "decided": decided,
            "action": self.action,
            "version": m.version,
            "is_open": is_open,
            "target_input": is_open and self.needs_target,
            "target_placeholder": m.target or "allocate on accept",
            "targets_url": f"{self.targets_url}?kind={self.kind}",
        })
        return row


@dataclass
class IssueRow:
    issue: IntegrationIssue
    decision: IssueDecision | None
    member_role: str
    message: str = ""
    message_class: str = ""
    action: str = ""

    @property
    def dom_id(self) -> str:
        return f"issue-{self.issue.pk}"

    @property
    def is_open(self) -> bool:
        return self.decision is None or self.decision.is_open


@dataclass
class AmendmentRow:
    """An `Amendment:` or `Unresolved conflict:` paragraph of a current member version and its decision."""

    amendment: AmendmentDecision
    message: str = ""
    message_class: str = ""
    action: str = ""
    oob: bool = False

    @property
    def dom_id(self) -> str:
        return f"amendment-{self.amendment.pk}"

    @property
    def is_open(self) -> bool:
        return self.amendment.is_open

    @property
    def label(self) -> str:
        return self.amendment.label

    @property
    def supersession(self) -> str:
        """The supersedes mapping that decides this amendment, in words ('' when it has none)."""
        return str(self.amendment.mapping) if self.amendment.mapping_id else ""


# Word diffs cost ~0.1 ms each (difflib), a tenth of a 2,000-row page; texts change far less often
# than the page is loaded, so each process keeps the latest few thousand.
@functools.lru_cache(maxsize=4096)
def word_diff_html(old: str, new: str) -> tuple[SafeString, SafeString]:
    """Both texts escaped; words only in `old` wrapped in <del>, words only in `new` in <ins>."""
    left, right = [], []
    for op, text in diffs.diff_words(old, new):
        escaped = html.escape(text, quote=False)
        if op == diffs.EQUAL:
            left.append(escaped)
            right.append(escaped)
        elif op == diffs.DELETE:
            left.append(f"<del>{escaped}</del>")
        else:
            right.append(f"<ins>{escaped}</ins>")
    return mark_safe("".join(left)), mark_safe("".join(right))  # noqa: S308 — every piece escaped above


# A changed run's marker goes after a line's block syntax (`- `, `1. `, `# `, `> `), never before it:
# "<ins>- item" would no longer be a list item.
_BLOCK_START = re.compile(r"^(?:[ \t]*(?:[-*+]|\d+[.)]|#{1,6}|>)[ \t]+|[ \t]+)*")


def _marked(text: str, opening: str, closing: str) -> str:
    out = []
    for line in re.split(r"(\n)", text):
        if line == "\n" or not line.strip():
            out.append(line)
            continue
        start = _BLOCK_START.match(line).end()
        out.append(f"{line[:start]}{opening}{line[start:]}{closing}")
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def markdown_diff_html(old: str, new: str) -> tuple[SafeString, SafeString]:
    """Both record texts as sanitised Markdown (records.record_markdown), words only in `old` in <del>,
    words only in `new` in <ins>."""
    left, right = [], []
    for op, text in diffs.diff_words(old, new):
        if op == diffs.EQUAL:
            left.append(text)
            right.append(text)
        elif op == diffs.DELETE:
            left.append(_marked(text, DEL_OPEN, DEL_CLOSE))
        else:
            right.append(_marked(text, INS_OPEN, INS_CLOSE))
    return render_marked("".join(left)), render_marked("".join(right))


def actions_of(run: Run, url_name: str, query: str):
    """key → the URL of an item's action (decide, reject, propose), reversed once per page, not per row."""
    head, tail = reverse(url_name, args=[run.run_id, 0]).rsplit("/0/", 1)
    suffix = f"/{tail}" + (f"?{query}" if query else "")
    return lambda pk: f"{head}/{pk}{suffix}"


def _opener(url: str, text: str) -> SafeString:
    """The link that opens a row's form in place (htmx), or on a page of its own without JavaScript.
    Made here rather than in `_pair_row.html`: one value per row costs a fraction of the template's lookups."""
    url = _escaped(url)
    return mark_safe(  # noqa: S308 — both values escaped as format_html would
        f'<a class="row-action" href="{url}" hx-get="{url}" hx-target="this" hx-swap="outerHTML">{_escaped(text)}</a>')


def _escaped(value) -> str:
    """`value` as format_html prints an argument (conditional_escape), without the checks for lazy text that
    cost a fifth of a row's values: the page's rows print their controls' links this way."""
    return value.__html__() if hasattr(value, "__html__") else html.escape(str(value))


def _minute(moment) -> str:
    """`moment` as the date filter prints it with 'Y-m-d H:i', without the formatter behind the filter: a
    decided row's date took half the time of all its other values."""
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} {moment.hour:02d}:{moment.minute:02d}"


def _would_be_id(mapping: Mapping) -> str:
    """The canonical ID accepting an open `new` mapping would allocate (DESIGN.md §2), when the row can
    know it: an explicit target, or the slug ID the record keeps. A numbered record gets the next free
    number of its kind when it is accepted, in the order accepts come, so no row can promise one: ""."""
    if mapping.target:
        return mapping.target
    parsed = parse_id(mapping.source)
    if parsed is None or parsed[2].isdigit():
        return ""
    return mapping.source


def _settled(mapping: Mapping, disposition) -> str:
    """What a decided row means for its record, from the record's one disposition."""
    if disposition is None or mapping.state != Decidable.State.REJECTED:
        return ""
    if disposition.disposition == dispositions.REJECTED:
        return f"{mapping.source} has no place in the shared set: every mapping of it was rejected."
    if disposition.mapping is not None and disposition.mapping != mapping.pk:
        relation = ("is superseded by" if disposition.relation == "supersedes" else disposition.relation)
        return (f"Alternative not taken: {mapping.source} {relation} {disposition.target}".rstrip()
                + " (accepted).")
    return ""


def _pair_row(record, mapping, canonicals, standing: dispositions.Standing, entered: dict[str, str]) -> PairRow:
    row = PairRow(record=record, mapping=mapping, canonical=None)
    if mapping is None:
        return row
    row.conflict = standing.conflict_of(mapping.pk)
    row.settled = _settled(mapping, standing.by_record.get(mapping.source))
    if mapping.relation == Mapping.Relation.NEW and not (mapping.target and mapping.target in canonicals):
        # A rejected or stale-but-unallocated new mapping allocates nothing: no would-be ID on it.
        row.would_be = _would_be_id(mapping) if mapping.is_open else ""
    elif mapping.target:
        row.canonical = canonicals.get(mapping.target)
        if row.canonical is None and mapping.target in entered:
            # The target is a member record that has entered the shared set since (EPI-OBJ-4 is
            # superseded by MEM-OBJ-2, and MEM-OBJ-2 was accepted as OBJ-8): show OBJ-8.
            row.via, row.canonical = mapping.target, canonicals.get(entered[mapping.target])
    return row






class RowBuilder:
    """Makes the rows of one member record from data read up front (no query per row)."""

    def __init__(self, *, run: Run, canonicals, standing: dispositions.Standing, query: str, user):
        self.canonicals, self.standing, self.query = canonicals, standing, query
        self.entered = standing.entered_as
        self.mapping_action = actions_of(run, "reconcile-decide-mapping", query)
        self.targets_url = reverse("run-reconcile-targets", args=[run.run_id])
        self.quotations: dict = {}  # record pk → its checked quotations (`quote`)
        # Rows offer only what the user may do (the views check it again); a final run offers nothing.
        open_run = run.status != Run.Status.FINAL
        self.reject_action = (actions_of(run, "reconcile-reject-canonical", query)
                              if open_run and has_any_role(user, DECIDE) else None)
        self.propose_action = (actions_of(run, "reconcile-propose-mapping", query)
                               if open_run and has_any_role(user, PROPOSE) else None)

    def quote(self, run: Run, records) -> None:
        """Look up the checked quotations inside these records (one query), for the rows built next."""
        self.quotations = page_quotations(run, [r for r in records if r is not None])

    def rows(self, record: Record | None, mappings) -> list[PairRow]:
        rows = []
        for mapping in mappings or [None]:
            row = _pair_row(record, mapping, self.canonicals, self.standing, self.entered)
            row.targets_url = self.targets_url
            if record is not None:
                row.quotations = self.quotations.get(record.pk, ())
            if self.propose_action:
                row.propose_action = self.propose_action(row.source)
            if mapping is not None:
                row.action = self.mapping_action(mapping.pk)
            if row.canonical is not None and self.reject_action:
                row.reject_action = self.reject_action(row.canonical.pk)
            rows.append(row)
        return rows


def grouped(rows: list[dict]) -> list[dict]:
    """The rows, each member record's consecutive rows wrapped in one `.record-rows` element (which
    the propose form re-renders): the first row opens it, the last closes it. Flags on flat rows
    rather than a nested loop, which cost a tenth of a 2,000-row page."""
    for n, row in enumerate(rows):
        first = n == 0 or rows[n - 1]["source"] != row["source"]
        last = n == len(rows) - 1 or rows[n + 1]["source"] != row["source"]
        row["open"] = (mark_safe(f'<div id="rows-{_escaped(row["source"])}" class="record-rows">')  # noqa: S308
                       if first else "")
        row["close"] = mark_safe("</div>") if last else ""
    return rows


def amendment_rows_of(request, run: Run, decisions) -> list[AmendmentRow]:
    """Rows of the given amendment decisions, in one query (the supersedes mapping joined in)."""
    decisions = (decisions.annotate(member_role=F("member_version__member__role"))
                 .select_related("mapping").defer("mapping__reason")
                 .order_by("member_role", "index"))
    action = actions_of(run, "reconcile-decide-amendment", kept_query(request.GET))
    return [AmendmentRow(amendment=a, action=action(a.pk)) for a in decisions]




def rows_of(request, run: Run, *, source: str = "", mapping_pks=()) -> list[PairRow]:
    """The rows of one member record (`source`) or of some mappings, built the way the page builds
    them: a few queries for the items asked for, not for the whole page."""
    wanted = list(selectors.current_mappings(run).filter(Q(source=source) if source else Q(pk__in=mapping_pks)))
    sources = {m.source for m in wanted} | ({source} if source else set())
    standing = standing_for(request, run)
    entered = standing.entered_as
    targets = {m.target for m in wanted if m.target}
    targets |= {entered[t] for t in targets if t in entered}
    records = {r.record_id: r for r in Record.objects.filter(
        run=run, record_id__in=sources, record_type=Record.Type.DECLARATION,
        member_version__member__current_version=F("member_version")).only(*selectors.RECORD_COLUMNS)}
    canonicals = {c.canonical_id: c for c in
                  CanonicalRecord.objects.filter(run=run, canonical_id__in=targets).only(*selectors.CANONICAL_COLUMNS)}
    builder = RowBuilder(run=run, canonicals=canonicals, standing=standing, query=kept_query(request.GET),
                          user=request.user)
    builder.quote(run, list(records.values()))
    if source:
        return builder.rows(records.get(source), wanted) if wanted or source in records else []
    return [row for m in wanted for row in builder.rows(records.get(m.source), [m])]

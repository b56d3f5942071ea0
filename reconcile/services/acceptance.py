"""What accepting a mapping reads about the run: its target's canonical record, how a stated target
resolves, and the place its record already has. One decision reads these as it needs them; a bulk
accept reads them once for all its suggestions and keeps them as its own acceptances change them."""
from __future__ import annotations

from collections import defaultdict

from reviews.models import Run

from ..models import CanonicalRecord, Mapping
from ..vocabulary import State
from .canonical_ids import canonical_id_for, resolve_one

# What resolving a target and naming a record's place read of an accepted mapping.
_PLACE_FIELDS = ("pk", "source", "relation", "target", "state")


class DecisionReads:
    """The reads of one decision, each a query the first time it is asked (inside the decision's
    transaction, the run locked)."""

    def __init__(self, run: Run):
        self.run = run
        self._canonical: dict[str, CanonicalRecord | None] = {}

    def canonical(self, canonical_id: str) -> CanonicalRecord | None:
        """The run's canonical record `canonical_id`, or None."""
        if canonical_id not in self._canonical:
            self._read_canonical({canonical_id})
        return self._canonical[canonical_id]

    def resolve(self, target: str) -> str:
        """The canonical ID a stated `target` means (`resolve_stated_id`, the one rule)."""
        return resolve_one(target, self._existing, self.accepted_from)

    def accepted_from(self, source: str) -> list[Mapping]:
        """The run's accepted mappings from `source`, by pk."""
        return list(Mapping.objects.filter(run=self.run, state=State.ACCEPTED, source=source)
                    .only(*_PLACE_FIELDS).order_by("pk"))

    def placed(self, source: str, *, other_than: int) -> Mapping | None:
        """The accepted mapping (lowest pk) that already gives `source` its place, other than `other_than`."""
        return (Mapping.objects.filter(run=self.run, source=source, state=State.ACCEPTED)
                .exclude(pk=other_than).first())

    def accepted(self, mapping: Mapping, canonical: CanonicalRecord | None) -> None:
        """Note an acceptance this transaction wrote (and the canonical record it allocated, if any)."""

    def _existing(self, ids: set[str]) -> set[str]:
        self._read_canonical({i for i in ids if i not in self._canonical})
        return {i for i in ids if self._canonical[i] is not None}

    def _read_canonical(self, ids: set[str]) -> None:
        if not ids:
            return
        found = {r.canonical_id: r for r in CanonicalRecord.objects.filter(run=self.run, canonical_id__in=ids)}
        self._canonical.update({i: found.get(i) for i in ids})


class BulkReads(DecisionReads):
    """The reads of a bulk accept of `suggestions`: the canonical records their targets can name and
    the accepted mappings from their sources and targets, read at once (the run locked, so only the
    bulk accept's own acceptances change them: `accepted` keeps them current). What was not read at
    once is read as one decision reads it."""

    def __init__(self, run: Run, suggestions: list[Mapping]):
        super().__init__(run)
        targets = {m.target for m in suggestions if m.target}
        self._read_canonical(targets | {canonical_id_for(t)[0] for t in targets})
        sources = targets | {m.source for m in suggestions}
        self._from: dict[str, list[Mapping]] = defaultdict(list)
        for mapping in (Mapping.objects.filter(run=run, state=State.ACCEPTED, source__in=sources)
                        .only(*_PLACE_FIELDS).order_by("pk")):
            self._from[mapping.source].append(mapping)
        self._sources_read = sources

    def accepted_from(self, source: str) -> list[Mapping]:
        if source not in self._sources_read:
            self._from[source] = super().accepted_from(source)
            self._sources_read.add(source)
        return list(self._from[source])

    def placed(self, source: str, *, other_than: int) -> Mapping | None:
        return next((m for m in self.accepted_from(source) if m.pk != other_than), None)

    def accepted(self, mapping: Mapping, canonical: CanonicalRecord | None) -> None:
        if mapping.source in self._sources_read:
            kept = [m for m in self._from[mapping.source] if m.pk != mapping.pk]
            self._from[mapping.source] = sorted([*kept, mapping], key=lambda m: m.pk)
        else:
            self.accepted_from(mapping.source)  # read now, it includes this acceptance
        if canonical is not None:
            self._canonical[canonical.canonical_id] = canonical

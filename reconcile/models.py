from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone

from records.models import IntegrationIssue, MemberVersion, Record
from reviews.models import Run

from .dispositions import relation_phrase


class KindCounter(models.Model):
    """The next canonical number per kind in a run: only ever increases (never reused)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="kind_counters")
    kind = models.CharField(max_length=3)
    last_number = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "kind"], name="one_counter_per_kind")]


class CanonicalRecord(models.Model):
    """A record of the run's shared set (DESIGN.md §2)."""

    class Origin(models.TextChoices):
        RUNTIME = "runtime", "seeded by the runtime member"
        RESULT = "result", "seeded by an imported result"
        MAPPING = "mapping", "entered through an accepted new mapping"

    class State(models.TextChoices):
        ACTIVE = "active"
        REJECTED = "rejected"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="canonical_records")
    canonical_id = models.CharField(max_length=120)
    kind = models.CharField(max_length=3)
    number = models.PositiveIntegerField(null=True, blank=True)
    label = models.TextField(blank=True)
    text = models.TextField(blank=True)
    origin = models.CharField(max_length=10, choices=Origin.choices)
    source_record_id = models.CharField(max_length=120, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.ACTIVE)
    rationale = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run_id", "kind", "number", "canonical_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "canonical_id"], name="canonical_id_unique_per_run"),
            models.UniqueConstraint(fields=["run", "kind", "number"], name="canonical_number_unique_per_kind"),
        ]
        # The shared set's order within a kind: the page's first target choices are one index range each
        # (`selectors.active_targets`), slug-named records (no number) included.
        indexes = [models.Index(fields=["run", "kind", "number", "canonical_id"], name="canonical_kind_order")]

    def __str__(self) -> str:
        return self.canonical_id


class Decidable(models.Model):
    """What every decidable item carries: state, optimistic-lock version, the decision's provenance."""

    class State(models.TextChoices):
        PROPOSED = "proposed"
        ACCEPTED = "accepted"
        REJECTED = "rejected"
        STALE = "stale"

    state = models.CharField(max_length=10, choices=State.choices, default=State.PROPOSED)
    version = models.PositiveIntegerField(default=1)
    rationale = models.TextField(blank=True)
    decided_by = models.CharField(max_length=200, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    # The bytes and record content the decision was made on (DESIGN.md §2, issue 5).
    decided_member_sha256 = models.CharField(max_length=64, blank=True)
    decided_content_sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        abstract = True

    DECISION_FIELDS = ["state", "version", "rationale", "decided_by", "decided_at",
                       "decided_member_sha256", "decided_content_sha256"]

    @property
    def is_open(self) -> bool:
        return self.state in (self.State.PROPOSED, self.State.STALE)


class Mapping(Decidable):
    class Relation(models.TextChoices):
        SAME = "same"
        NEW = "new"
        PART_OF = "part-of"
        SUPERSEDES = "supersedes"
        NO_COUNTERPART = "no-counterpart"

    class Origin(models.TextChoices):
        AGENT = "agent"
        RECONCILIATION = "reconciliation"
        SUGGESTED = "suggested"
        RESULT = "result"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="mappings")
    source = models.CharField(max_length=120, help_text="The member record ID")
    source_record = models.ForeignKey(Record, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    relation = models.CharField(max_length=20, choices=Relation.choices)
    target = models.CharField(max_length=120, blank=True)
    origin = models.CharField(max_length=20, choices=Origin.choices)
    score = models.FloatField(null=True, blank=True)
    reason = models.TextField(blank=True)
    proposed_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    # What the app derived this mapping from, so a re-sync never creates it twice: the source ID
    # for a suggestion, "source|relation|target" as stated for a reconciliation's or result's
    # statement. Empty for an agent's or reviewer's proposal.
    origin_key = models.CharField(max_length=400, blank=True)

    class Meta:
        ordering = ["run_id", "source", "id"]
        indexes = [models.Index(fields=["run", "state"]), models.Index(fields=["run", "source"])]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "origin", "origin_key"], condition=~models.Q(origin_key=""),
                name="mapping_derived_once",
            ),
            # Proposing the same mapping again while it is open returns the open one (idempotent API).
            models.UniqueConstraint(
                fields=["run", "source", "relation", "target"],
                condition=models.Q(origin="agent", state="proposed"),
                name="one_open_agent_proposal",
            ),
        ]

    def __str__(self) -> str:
        return relation_phrase(self.source, self.relation, self.target)


class IssueDecision(Decidable):
    """The reviewer's decision on one integration issue of one member version."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="issue_decisions")
    issue = models.OneToOneField(IntegrationIssue, on_delete=models.CASCADE, related_name="decision")

    class Meta:
        ordering = ["run_id", "issue_id"]
        indexes = [models.Index(fields=["run", "state"])]


class AmendmentDecision(Decidable):
    """The reviewer's decision on one `Amendment:` or `Unresolved conflict:` paragraph of a current
    member version (DESIGN §2): accepted, rejected, or carried into the result's Limitations.

    A supersession (`X is superseded by Y[ and Z]`) is decided by the supersedes mapping(s) sync
    derives from it, and this row follows them (state, rationale, who): see
    `reconcile.services.decide_amendment`. `mapping` is the first of them, for display.
    """

    class State(models.TextChoices):
        PROPOSED = "proposed"
        ACCEPTED = "accepted"
        REJECTED = "rejected"
        STALE = "stale"
        # Decided: the paragraph goes into the result's Limitations as it stands.
        CARRIED = "carried"

    class Kind(models.TextChoices):
        AMENDMENT = "amendment"
        UNRESOLVED_CONFLICT = "unresolved-conflict"

    # How a report labels each kind of paragraph (its content hash covers the label too).
    KIND_LABELS = {Kind.AMENDMENT: "Amendment", Kind.UNRESOLVED_CONFLICT: "Unresolved conflict"}

    state = models.CharField(max_length=10, choices=State.choices, default=State.PROPOSED)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="amendment_decisions")
    # The member version whose paragraph this is; a re-upload moves the row to the new version.
    member_version = models.ForeignKey(MemberVersion, on_delete=models.CASCADE, related_name="amendment_decisions")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    index = models.PositiveIntegerField(help_text="1-based position among the member's amendments and conflicts")
    text = models.TextField()
    references = models.JSONField(default=list, blank=True)
    line = models.PositiveIntegerField()
    # SHA-256 of the paragraph as labelled ("Amendment: …" / "Unresolved conflict: …").
    content_sha256 = models.CharField(max_length=64)
    mapping = models.ForeignKey(Mapping, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="amendment_decisions")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run_id", "member_version_id", "index"]
        indexes = [models.Index(fields=["run", "state"])]
        constraints = [
            models.UniqueConstraint(fields=["member_version", "index"], name="amendment_index_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.label} {self.index}"

    @property
    def label(self) -> str:
        return self.KIND_LABELS.get(self.kind, self.kind)


class WordDiff(models.Model):
    """The reconciliation page's word diff of a member record's text against a canonical record's
    text, computed once and kept (reconcile/diffs.py): `key` is the SHA-256 of the two texts,
    so a new record version or a changed canonical text is a new key and nothing goes stale."""

    key = models.CharField(max_length=64, unique=True)
    left = models.TextField()  # the member text, escaped, words only in it wrapped in <del>
    right = models.TextField()  # the canonical text, escaped, words only in it wrapped in <ins>
    created_at = models.DateTimeField(default=timezone.now)


class CorrectionRequest(models.Model):
    """A request that the analyst who wrote a member change it (DESIGN §2 "Correction request"):
    raised by a reviewer, or read from a verification member's Blockers."""

    class State(models.TextChoices):
        OPEN = "open"
        ANSWERED = "answered"
        RESOLVED = "resolved"
        WITHDRAWN = "withdrawn"

    class Source(models.TextChoices):
        REVIEWER = "reviewer"
        VERIFICATION = "verification"

    class Answer(models.TextChoices):
        CORRECTED = "corrected"
        DECLINED = "declined"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="correction_requests")
    member = models.CharField(max_length=20, help_text="The addressed member's role")
    record_id = models.CharField(max_length=200, blank=True)
    line = models.PositiveIntegerField(null=True, blank=True)
    text = models.TextField()
    source = models.CharField(max_length=12, choices=Source.choices, default=Source.REVIEWER)
    author = models.CharField(max_length=200)
    # For a verification's blocker: the verification version that raised it, and the blocker's place.
    raised_in = models.ForeignKey(MemberVersion, null=True, blank=True, on_delete=models.PROTECT,
                                  related_name="raised_requests")
    blocker_index = models.PositiveIntegerField(null=True, blank=True)
    raised_at = models.DateTimeField(default=timezone.now)
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    version = models.PositiveIntegerField(default=1)
    answer = models.CharField(max_length=10, choices=Answer.choices, blank=True)
    answer_text = models.TextField(blank=True)
    answered_in = models.ForeignKey(MemberVersion, null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="answered_requests")
    answered_against = models.ForeignKey(MemberVersion, null=True, blank=True, on_delete=models.PROTECT,
                                         related_name="+", help_text="The version the answer replaced")
    settled_by = models.CharField(max_length=200, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True, help_text="Why it was reopened or withdrawn")

    STATE_FIELDS = ["state", "version", "answer", "answer_text", "answered_in", "answered_against",
                    "settled_by", "settled_at", "reason"]

    class Meta:
        ordering = ["raised_at", "id"]
        constraints = [
            # A verification's blocker raises one request, however often the run is synced.
            models.UniqueConstraint(fields=["raised_in", "blocker_index"], name="one_request_per_blocker",
                                    condition=models.Q(raised_in__isnull=False)),
        ]

    def __str__(self) -> str:
        where = f" {self.record_id}" if self.record_id else ""
        return f"correction {self.pk} to {self.member}{where} ({self.state})"

    @property
    def is_pending(self) -> bool:
        """Open or answered: either way the run cannot be approved yet."""
        return self.state in (self.State.OPEN, self.State.ANSWERED)


class CorrectionReply(models.Model):
    """One message of a request's thread (reviewers, and the addressed run's agents)."""

    request = models.ForeignKey(CorrectionRequest, on_delete=models.CASCADE, related_name="replies")
    author = models.CharField(max_length=200)
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]


class ReviewPass(models.Model):
    """One reviewer's independent decisions on a run that requires several (DESIGN §2 "Review pass"):
    blind to the others until submitted. Its decisions are `PassEntry` rows, the values it gives the
    shared rows, which `reconcile.passes.world` lays over them for that reviewer alone."""

    class State(models.TextChoices):
        OPEN = "open"
        SUBMITTED = "submitted"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="review_passes")
    number = models.PositiveSmallIntegerField(help_text="1, 2, … in the order the passes were started")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_passes")
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    started_at = models.DateTimeField(default=timezone.now)
    submitted_at = models.DateTimeField(null=True, blank=True)
    # Frozen at submission (reconcile.passes.consensus): item key → {"name", "state", "target",
    # "rationale", "decided"}, what the pass decided on every item it could, as the pass saw it.
    decisions = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["run_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="pass_number_unique_per_run"),
            models.UniqueConstraint(fields=["run", "reviewer"], name="one_pass_per_reviewer"),
        ]

    def __str__(self) -> str:
        return f"pass {self.number} ({self.reviewer.get_username()})"


class PassEntry(models.Model):
    """What one pass did to one shared row: the row's values in that pass (`values`), laid over the row
    while it is still at `base_version` (a row changed underneath, by a re-upload, drops the entry:
    the item is open again in the pass). `created` rows (a canonical record a `new` mapping allocated
    in the pass, a kind's counter) exist only in the pass."""

    review_pass = models.ForeignKey(ReviewPass, on_delete=models.CASCADE, related_name="entries")
    model = models.CharField(max_length=10)  # mapping | issue | amendment | canonical | counter
    key = models.CharField(max_length=120)  # the row's pk; a canonical record's ID; a counter's kind
    base_version = models.PositiveIntegerField(null=True, blank=True)
    created = models.BooleanField(default=False)
    values = models.JSONField(encoder=DjangoJSONEncoder)

    class Meta:
        ordering = ["review_pass_id", "model", "id"]
        constraints = [
            models.UniqueConstraint(fields=["review_pass", "model", "key"], name="one_entry_per_row_and_pass"),
        ]


class Conflict(models.Model):
    """An item the submitted passes decided differently (DESIGN §2), settled by an adjudication."""

    class State(models.TextChoices):
        OPEN = "open"
        SETTLED = "settled"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="conflicts")
    model = models.CharField(max_length=10)  # mapping | issue | amendment | canonical
    key = models.CharField(max_length=120)
    name = models.TextField(help_text="The item as the reviewer's page names it")
    # [{"pass": n, "reviewer": name, "state": …, "target": …, "rationale": …}], in pass order.
    decisions = models.JSONField()
    note = models.TextField(blank=True, help_text="Why an item the passes agreed on is a conflict all the same")
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    version = models.PositiveIntegerField(default=1)
    decision = models.CharField(max_length=10, blank=True)
    rationale = models.TextField(blank=True)
    settled_by = models.CharField(max_length=200, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run_id", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "model", "key"], name="one_conflict_per_item")]

    def __str__(self) -> str:
        return self.name

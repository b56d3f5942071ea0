import hashlib
import re
import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

# A run asks for at most this many independent review passes (DESIGN §4 `PATCH /api/runs/{id}/`).
MAX_REVIEWS_REQUIRED = 5

RUN_ID_RE = re.compile(r"^AAS-\d{4}-\d{2}-\d{2}-[a-z0-9]+(?:-[a-z0-9]+)*-\d{2}$")


def validate_run_id(value: str) -> None:
    if not RUN_ID_RE.match(value or ""):
        raise ValidationError(
            f"run_id {value!r} must look like AAS-YYYY-MM-DD-slug-NN (lower-case slug, two-digit number)",
            code="invalid_run_id",
        )


class TransitionError(Exception):
    """A status change the lifecycle (DESIGN.md §3) does not allow."""


class Run(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"
        VALIDATING = "validating"
        IN_REVIEW = "in_review"
        APPROVED = "approved"
        FINALIZING = "finalizing"
        FINAL = "final"
        FAILED = "failed"

    # Which status may follow which. `failed` can be retried from where it failed.
    TRANSITIONS = {
        Status.OPEN: {Status.VALIDATING, Status.FAILED},
        Status.VALIDATING: {Status.IN_REVIEW, Status.OPEN, Status.VALIDATING, Status.FAILED},
        Status.IN_REVIEW: {Status.VALIDATING, Status.APPROVED, Status.FAILED},
        Status.APPROVED: {Status.IN_REVIEW, Status.FINALIZING},
        Status.FINALIZING: {Status.FINAL, Status.FAILED},
        Status.FINAL: set(),
        Status.FAILED: {Status.VALIDATING, Status.FINALIZING, Status.IN_REVIEW, Status.APPROVED},
    }
    UPLOAD_STATUSES = {Status.OPEN, Status.VALIDATING, Status.IN_REVIEW, Status.FAILED}

    run_id = models.CharField(max_length=100, unique=True, validators=[validate_run_id])
    system = models.CharField(max_length=200)
    title = models.CharField(max_length=300)
    run_date = models.DateField()
    target_class = models.CharField(max_length=200, blank=True)
    boundary_kind = models.CharField(max_length=200, blank=True)
    reviewed_boundary = models.CharField(max_length=64, help_text="The frozen source commit")
    evidence_tier = models.CharField(max_length=200, blank=True)
    analysis_cutoff = models.DateField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    status_reason = models.TextField(blank=True)
    # The status a failed run failed in, so a retry knows where to resume.
    failed_from = models.CharField(max_length=20, choices=Status.choices, blank=True)
    manifest_sha256 = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Agents a reviewer or admin added (DESIGN §9); with the creator, the run's participants: only they
    # upload to it and answer its correction requests (reviews.access.check_participant).
    participants = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="participating_runs")
    # The final run this one revises (DESIGN §3): one successor per final run, linked both ways
    # (`run.revises`, `run.revised_by`), so validation can tell a revision's carried members from strays.
    revises = models.OneToOneField("self", null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="revised_by")
    # Independent reviews (DESIGN §5): how many reviewers decide blind, each in their own review pass,
    # before the passes' agreements become the run's decisions and their disagreements conflicts.
    reviews_required = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(MAX_REVIEWS_REQUIRED)])
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # The run's audit chain head: its last event's seq and hash, written by reviews.audit.record_event in
    # the transaction of each event, so a trail cut at its end no longer matches it (DESIGN §8). Only
    # record_event writes these columns (every other save names its own update_fields).
    audit_head_seq = models.PositiveIntegerField(default=0)
    audit_head_hash = models.CharField(max_length=64, blank=True)

    def has_participant(self, user) -> bool:
        """The user created the run or was added to its participants."""
        if user is None or not user.is_authenticated:
            return False
        return (self.created_by_id is not None and self.created_by_id == user.pk) or \
            self.participants.filter(pk=user.pk).exists()

    def participant_names(self) -> list[str]:
        """The added participants' user names, sorted (the creator is not among them)."""
        return sorted(self.participants.values_list("username", flat=True))

    def revised_run_ids(self) -> tuple[str, ...]:
        """The run IDs this run revises, nearest first (empty for a run that revises none)."""
        ids, earlier = [], self.revises
        while earlier is not None:
            ids.append(earlier.run_id)
            earlier = earlier.revises
        return tuple(ids)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status"]), models.Index(fields=["system"])]

    def __str__(self) -> str:
        return self.run_id

    @property
    def accepts_uploads(self) -> bool:
        return self.status in self.UPLOAD_STATUSES

    def can_transition_to(self, new_status: str) -> bool:
        return new_status in self.TRANSITIONS[self.Status(self.status)]

    def transition_to(self, new_status: str, *, reason: str = "") -> str:
        """Set the new status in memory and return the old one; callers save with update_fields."""
        if not self.can_transition_to(new_status):
            raise TransitionError(f"run {self.run_id} cannot go from {self.status} to {new_status}")
        old = self.status
        if new_status == self.Status.FAILED:
            self.failed_from = old
        self.status = new_status
        self.status_reason = reason
        self.updated_at = timezone.now()
        return old

    STATUS_FIELDS = ["status", "status_reason", "failed_from", "updated_at"]


def hash_token(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    """An API token. Only its SHA-256 is stored; the key is shown once, when issued."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=150)
    key_sha256 = models.CharField(max_length=64, unique=True)
    key_prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}…)"

    @staticmethod
    def new_key() -> str:
        return "aas_" + secrets.token_urlsafe(32)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class AuditEvent(models.Model):
    """One link of a run's tamper-evident chain (DESIGN.md §8).

    hash = SHA-256(prev_hash + canonical JSON of `chain_payload()`), signed by the audit key
    (reviews/audit_keys.py); rows are append-only, which PostgreSQL enforces with a trigger (migration 0002).
    Events without a run (tokens issued or revoked) form one chain of their own.
    """

    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events")
    seq = models.PositiveIntegerField()
    actor = models.CharField(max_length=200)
    action = models.CharField(max_length=80)
    object_type = models.CharField(max_length=80)
    object_id = models.CharField(max_length=200)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)
    # 16 random bytes in hex, part of the hashed payload and withheld with the content ('' before salts).
    salt = models.CharField(max_length=32, blank=True, default="")
    # Base64 Ed25519 signature of `hash` by the audit key, never held by the database ('' before signatures).
    signature = models.CharField(max_length=88, blank=True, default="")

    class Meta:
        ordering = ["run_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="audit_seq_unique_per_run"),
            models.UniqueConstraint(
                fields=["seq"], condition=models.Q(run__isnull=True), name="audit_seq_unique_without_run"
            ),
        ]
        indexes = [models.Index(fields=["run", "action"]), models.Index(fields=["run", "actor"])]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.action}"


class DenialTally(models.Model):
    """How many times one caller was denied on one run in its current fold window (reviews.audit.record_denial).

    The trail gets one `permission.denied` event per caller, run and window; the denials after it in the
    same window only count here, and the next window's event carries this window's final count. Mutable
    by design, and not part of the chain: the chain holds each window's first denial and its count.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    actor = models.CharField(max_length=200)
    window_start = models.DateTimeField()
    count = models.PositiveIntegerField(default=1)
    attempts = models.JSONField(default=dict)  # {attempted action: denials} in the window
    event = models.ForeignKey(AuditEvent, on_delete=models.PROTECT, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "actor"], name="denial_tally_one_per_caller_and_run")]

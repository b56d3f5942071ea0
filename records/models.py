from django.db import models
from django.utils import timezone

from reviews.models import Run

from .validation import quotes


class Role(models.TextChoices):
    RUNTIME = "runtime"
    MEMORY = "memory"
    WORKFLOW = "workflow"
    EPISTEMIC = "epistemic"
    BOUNDARY = "boundary"
    OVERVIEW = "overview"
    RECONCILIATION = "reconciliation"
    MEMORY_PROFILE = "memory-profile"
    SYNTHESIS = "synthesis"
    VERIFICATION = "verification"
    # The links form's verification members (DESIGN §1): one each for the reports, the profile and the synthesis.
    REPORT_VERIFICATION = "report-verification"
    PROFILE_VERIFICATION = "profile-verification"
    SYNTHESIS_VERIFICATION = "synthesis-verification"
    RESULT = "result"


class MemberReport(models.Model):
    """One member of a run: one per role. Its bytes live in its versions."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="members")
    role = models.CharField(max_length=30, choices=Role.choices)
    current_version = models.ForeignKey(
        "MemberVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run_id", "role"]
        constraints = [models.UniqueConstraint(fields=["run", "role"], name="one_member_per_role")]

    def __str__(self) -> str:
        return f"{self.run.run_id}/{self.role}"

    @property
    def member_id(self) -> str:
        return self.role


class MemberVersion(models.Model):
    """The exact uploaded bytes of one version of a member, with their SHA-256."""

    class Status(models.TextChoices):
        RECEIVED = "received"
        PARSING = "parsing"
        PARSED = "parsed"
        VALIDATED = "validated"
        FAILED = "failed"

    member = models.ForeignKey(MemberReport, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    filename = models.CharField(max_length=255)
    content = models.BinaryField()
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RECEIVED)
    status_reason = models.TextField(blank=True)
    uploaded_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    # When a worker claimed the parse; the sweep re-queues claims older than the timeout.
    claimed_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # When its parse was last handed to the broker; the sweep waits this long before queueing again.
    queued_at = models.DateTimeField(null=True, blank=True)
    parsed_at = models.DateTimeField(null=True, blank=True)
    # Parser output that is not a row of its own: front matter, sections, sources, mappings,
    # amendments, quotations, ranges, counts.
    front_matter = models.JSONField(default=dict, blank=True)
    doc_type = models.CharField(max_length=200, blank=True)
    generation = models.CharField(max_length=30, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    # The records per kind, kept by the parse for the member page's counters (records.member_page):
    # [[record type, kind, how many, first ordinal], …] in document order; None before it was kept.
    kind_counts = models.JSONField(null=True, blank=True)
    parsed = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["member_id", "version"]
        constraints = [models.UniqueConstraint(fields=["member", "version"], name="member_version_unique")]
        indexes = [models.Index(fields=["status", "claimed_at"])]

    def __str__(self) -> str:
        return f"{self.member} v{self.version}"

    STATUS_FIELDS = ["status", "status_reason"]


class Record(models.Model):
    """A declaration or an annotation of one member version, with its exact text."""

    class Type(models.TextChoices):
        DECLARATION = "declaration"
        ANNOTATION = "annotation"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="records")
    member_version = models.ForeignKey(MemberVersion, on_delete=models.CASCADE, related_name="records")
    ordinal = models.PositiveIntegerField()
    record_type = models.CharField(max_length=20, choices=Type.choices)
    record_id = models.CharField(max_length=120, help_text="The declared ID, or the annotated target")
    kind = models.CharField(max_length=3)
    prefix = models.CharField(max_length=3, blank=True)
    label = models.TextField(blank=True)
    text = models.TextField()
    body = models.TextField(blank=True)
    fields = models.JSONField(default=list, blank=True)
    references = models.JSONField(default=list, blank=True)
    line_start = models.PositiveIntegerField()
    line_end = models.PositiveIntegerField()
    form = models.CharField(max_length=20, blank=True)
    content_sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["member_version_id", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["member_version", "ordinal"], name="record_ordinal_unique"),
        ]
        indexes = [models.Index(fields=["run", "record_id"]), models.Index(fields=["run", "kind"])]

    def __str__(self) -> str:
        return self.record_id


class IntegrationIssue(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="integration_issues")
    member_version = models.ForeignKey(MemberVersion, on_delete=models.CASCADE, related_name="integration_issues")
    index = models.PositiveIntegerField()
    text = models.TextField()
    references = models.JSONField(default=list, blank=True)
    line = models.PositiveIntegerField()
    content_sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["member_version_id", "index"]
        constraints = [models.UniqueConstraint(fields=["member_version", "index"], name="issue_index_unique")]

    def __str__(self) -> str:
        return f"{self.member_version} issue {self.index}"


class ValidationReport(models.Model):
    """One validation pass over a run's set, keyed by the manifest hash it ran on."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="validation_reports")
    manifest_sha256 = models.CharField(max_length=64)
    errors = models.PositiveIntegerField(default=0)
    warnings = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["run", "manifest_sha256"], name="one_report_per_manifest")]


class Finding(models.Model):
    class Severity(models.TextChoices):
        ERROR = "error"
        WARNING = "warning"

    report = models.ForeignKey(ValidationReport, on_delete=models.CASCADE, related_name="findings")
    member_version = models.ForeignKey(MemberVersion, null=True, blank=True, on_delete=models.CASCADE,
                                       related_name="findings")
    member = models.CharField(max_length=40, blank=True)
    code = models.CharField(max_length=80)
    severity = models.CharField(max_length=10, choices=Severity.choices)
    record_id = models.CharField(max_length=120, blank=True)
    line = models.PositiveIntegerField(default=0)
    message = models.TextField()

    class Meta:
        ordering = ["report_id", "id"]


# --- the frozen source snapshot (DESIGN §4, §6) --------------------------------


class SourceBlob(models.Model):
    """Bytes kept once per content SHA-256: source files and the archives they came in.

    In the database, not on a web host's disk, so a worker on any host reads them.
    """

    sha256 = models.CharField(max_length=64, unique=True)
    size = models.PositiveBigIntegerField()
    content = models.BinaryField()

    def __str__(self) -> str:
        return f"sha256:{self.sha256}"


class SourceSnapshot(models.Model):
    """The run's source at its reviewed commit, as one uploaded archive; the newest activated one is current."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="source_snapshots")
    archive = models.ForeignKey(SourceBlob, on_delete=models.PROTECT, related_name="+")
    archive_sha256 = models.CharField(max_length=64)
    commit = models.CharField(max_length=64, blank=True)
    file_count = models.PositiveIntegerField()
    total_bytes = models.PositiveBigIntegerField()
    uploaded_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    # Set on upload and again when the same archive is uploaded after another one: the latest is current.
    activated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-activated_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "archive_sha256"], name="one_snapshot_per_archive"),
        ]

    def __str__(self) -> str:
        return f"{self.run.run_id} source sha256:{self.archive_sha256}"


class SourceFile(models.Model):
    snapshot = models.ForeignKey(SourceSnapshot, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024)
    blob = models.ForeignKey(SourceBlob, on_delete=models.PROTECT, related_name="+")
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()

    class Meta:
        ordering = ["snapshot_id", "path"]
        constraints = [models.UniqueConstraint(fields=["snapshot", "path"], name="source_path_unique")]

    def __str__(self) -> str:
        return self.path


class QuotationCheck(models.Model):
    """One quotation (or prose anchor) of a current member version, checked against the current snapshot."""

    # The values are the check's own (records.validation.quotes, which is pure): named once, stored as they are.
    class Kind(models.TextChoices):
        QUOTATION = quotes.QUOTATION
        ANCHOR = quotes.ANCHOR

    class Status(models.TextChoices):
        VERIFIED = quotes.VERIFIED
        NOT_FOUND = quotes.NOT_FOUND
        AMBIGUOUS = quotes.AMBIGUOUS
        PATH_MISSING = quotes.PATH_MISSING
        RANGE_OUTSIDE = quotes.RANGE_OUTSIDE
        COMMIT_MISMATCH = quotes.COMMIT_MISMATCH
        UNVERIFIED = quotes.UNVERIFIED

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="quotation_checks")
    member_version = models.ForeignKey(MemberVersion, on_delete=models.CASCADE, related_name="quotation_checks")
    snapshot = models.ForeignKey(SourceSnapshot, null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="quotation_checks")
    ordinal = models.PositiveIntegerField()
    kind = models.CharField(max_length=12, choices=Kind.choices)
    line = models.PositiveIntegerField()
    text = models.TextField(blank=True)
    path = models.CharField(max_length=1024)
    lines = models.CharField(max_length=60, blank=True)
    commit = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices)
    message = models.TextField(blank=True)
    # [[line number, text], ...] of the matched range, and the first lines of other occurrences.
    source_lines = models.JSONField(default=list, blank=True)
    candidates = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["member_version_id", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["member_version", "ordinal"], name="quotation_check_ordinal_unique"),
        ]
        indexes = [models.Index(fields=["run", "status"])]

    def __str__(self) -> str:
        return f"{self.member_version} {self.kind} {self.ordinal}: {self.status}"


class ValidationRequest(models.Model):
    """A run's pending validation: at most one per run, however many uploads arrive in a burst.

    A parse that finishes creates it (and queues `validate_run`) only when none
    is pending; the validate task deletes it under the run's lock and validates
    the run's latest state, so every parse committed before that lock is
    covered and a parse committed after it asks again.
    """

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="validation_request")
    requested_at = models.DateTimeField(default=timezone.now)


class ImportedManifest(models.Model):
    """What an imported run directory's `ARTIFACT.yaml` said beside its pins (the links form's `worker:`
    block and the like), kept as it was read; the run page shows it."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="imported_manifest")
    fields = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.run.run_id}/ARTIFACT.yaml"

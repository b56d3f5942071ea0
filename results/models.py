"""A run's approvals and its final result (DESIGN §3, §7)."""
from django.db import models
from django.utils import timezone

from reviews.models import Run


class Approval(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="approvals")
    note = models.TextField()
    approved_by = models.CharField(max_length=200)
    approved_at = models.DateTimeField(default=timezone.now)
    manifest_sha256 = models.CharField(max_length=64)
    manifest = models.TextField()
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawn_reason = models.TextField(blank=True)
    # The run's audit chain head (seq, hash) the approval saw, read under the run's lock before its event.
    audit_head_seq = models.PositiveIntegerField(null=True, blank=True)
    audit_head_hash = models.CharField(max_length=64, null=True, blank=True)  # null on approvals made before

    class Meta:
        db_table = "reconcile_approval"  # made by reconcile, which held it before results/ (migration 0001)
        ordering = ["-approved_at", "-id"]


class Result(models.Model):
    """The final result of a run: stored once, never changed."""

    run = models.OneToOneField(Run, on_delete=models.PROTECT, related_name="result")
    approval = models.ForeignKey(Approval, on_delete=models.PROTECT, related_name="+")
    markdown = models.TextField()
    data = models.JSONField()
    sha256 = models.CharField(max_length=64)
    manifest_sha256 = models.CharField(max_length=64)
    manifest = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "reconcile_result"


class Attestation(models.Model):
    """The signed statement of a final result (DESIGN §7 "Signed"), written in finalization's transaction.

    `envelope` is the DSSE envelope exactly as served and exported; `result_json` the exact bytes of
    result.json that the statement names as a subject; `public_key_pem` the public half of the key that
    signed (public, so it may live here: the private key never does).
    """

    result = models.OneToOneField(Result, on_delete=models.PROTECT, related_name="attestation")
    envelope = models.TextField()
    result_json = models.TextField()
    keyid = models.CharField(max_length=64)
    public_key_pem = models.TextField()
    audit_head_seq = models.PositiveIntegerField()
    audit_head_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

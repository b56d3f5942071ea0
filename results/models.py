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

"""The sweep that re-queues pipeline work a lost message or a killed worker left behind (DESIGN §10)."""
from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from reviews.actions import Action
from reviews.audit import Actor, lock_run, record_event
from reviews.models import Run

from ..models import MemberReport, MemberVersion
from .current import version_label
from .jobs import PARSE, VALIDATE

logger = logging.getLogger(__name__)


def sweep_stuck_members(*, older_than_seconds: int, actor: Actor | None = None) -> dict[str, int]:
    """Re-queue parses that never ran or whose worker died, and validations of runs stuck in validating."""
    actor = actor or Actor.worker("sweep_stuck_members")
    now = timezone.now()
    cutoff = now - timedelta(seconds=older_than_seconds)
    stuck = (
        MemberVersion.objects
        # Last touched: claimed by a worker, queued, or created (whichever is latest).
        .annotate(touched=Greatest(Coalesce("claimed_at", "created_at"), Coalesce("queued_at", "created_at")))
        .filter(status__in=[MemberVersion.Status.RECEIVED, MemberVersion.Status.PARSING], touched__lt=cutoff)
        .select_related("member__run")
    )
    versions = 0
    for version in stuck:
        with transaction.atomic():
            lock_run(version.member.run)
            # Release the dead claim so the queued task can take it; only if nobody touched it meanwhile.
            released = MemberVersion.objects.filter(pk=version.pk, status=version.status,
                                                    claimed_at=version.claimed_at).update(
                status=MemberVersion.Status.RECEIVED, queued_at=now)
            if not released:
                continue
            record_event(run=version.member.run, actor=actor, action=Action.MEMBER_REQUEUED, object_type="member_version",
                         object_id=version_label(version.member.role, version.version),
                         before={"status": version.status, "claimed_at": version.claimed_at},
                         after={"status": MemberVersion.Status.RECEIVED, "attempts": version.attempts})
            PARSE.after_commit(version.pk)
        versions += 1
    runs = 0
    waiting = MemberVersion.objects.filter(
        status__in=[MemberVersion.Status.RECEIVED, MemberVersion.Status.PARSING],
        pk__in=MemberReport.objects.values("current_version"),
    ).values("member__run")
    stuck_runs = (Run.objects.filter(Q(status=Run.Status.VALIDATING, updated_at__lt=cutoff)
                                     | Q(validation_request__requested_at__lt=cutoff))
                  .exclude(pk__in=waiting).distinct())
    for run_pk in stuck_runs.values_list("pk", flat=True):
        with transaction.atomic():
            VALIDATE.after_commit(run_pk)
        runs += 1
    return {"versions": versions, "runs": runs}

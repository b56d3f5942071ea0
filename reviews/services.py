"""State changes of runs and tokens; each writes its audit event in the same transaction."""
from __future__ import annotations

import re
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.utils import timezone

from .access import ADJUDICATOR, ADMIN, AGENT, REVIEWER, ROLES, ensure_role_groups
from .actions import DECISIONS, Action
from .audit import Actor, lock_run, record_event
from .models import MAX_REVIEWS_REQUIRED, ApiToken, AuditEvent, Run, hash_token


class RunExists(Exception):
    pass


RUN_FIELDS = (
    "run_id", "system", "title", "run_date", "target_class", "boundary_kind",
    "reviewed_boundary", "evidence_tier", "analysis_cutoff",
)


def run_snapshot(run: Run) -> dict[str, Any]:
    return {name: getattr(run, name) for name in RUN_FIELDS} | {"status": run.status}


def create_run(*, actor: Actor, user=None, revises: Run | None = None, **fields: Any) -> Run:
    run = Run(created_by=user, revises=revises, **{k: v for k, v in fields.items() if k in RUN_FIELDS})
    if revises is not None:  # a revision is reviewed as the revised run was: by as many independent reviews
        run.reviews_required = revises.reviews_required
    run.full_clean(validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            run.save(force_insert=True)
            if revises is not None:  # a revision's uploaders are the revised run's (DESIGN §9)
                run.participants.set(revises.participants.all())
                if revises.created_by_id is not None and revises.created_by_id != run.created_by_id:
                    run.participants.add(revises.created_by_id)
            record_event(run=run, actor=actor, action=Action.RUN_CREATED, object_type="run",
                         object_id=run.run_id,
                         after=run_snapshot(run) | ({"revises": revises.run_id} if revises is not None else {})
                         | ({"reviews_required": run.reviews_required} if run.reviews_required > 1 else {}))
    except IntegrityError:
        raise RunExists(f"A run with run_id {run.run_id} already exists.") from None
    return run


def set_run_status(*, run: Run, status: str, actor: Actor, reason: str = "") -> Run:
    """Move a run along its lifecycle, under a row lock, audited. No-op if already there."""
    with transaction.atomic():
        locked = lock_run(run)
        if locked.status == status and locked.status_reason == reason:
            return locked
        old = locked.transition_to(status, reason=reason)
        locked.save(update_fields=Run.STATUS_FIELDS)
        record_event(run=locked, actor=actor, action=Action.RUN_STATUS_CHANGED, object_type="run",
                     object_id=locked.run_id, before={"status": old},
                     after={"status": status, "reason": reason})
    run.status, run.status_reason, run.failed_from = locked.status, locked.status_reason, locked.failed_from
    return locked


USERNAME_RE = re.compile(r"^[\w.@+-]{1,150}\Z")  # Django's user name rule


class ParticipantsRefused(ValueError):
    """Names that are not agents' user names."""

    field = "participants"  # the part of the run's PATCH at fault


def set_participants(*, run: Run, usernames: list[str], actor: Actor) -> list[str]:
    """Make the run's added participants exactly these agents (the creator stays one regardless), audited.

    Refuses (ParticipantsRefused, nothing changed) a name that is no user, or a user without the agent role.
    """
    User = get_user_model()
    wanted = sorted(set(usernames))
    malformed = [name for name in wanted if not USERNAME_RE.match(name)]
    if malformed:  # never sent to the database (a NUL fails there) nor echoed (lone surrogates do not encode)
        raise ParticipantsRefused(f"participants: {len(malformed)} of the names are not user names "
                                  "(letters, digits and @.+-_ only, at most 150)")
    users = list(User.objects.filter(username__in=wanted, groups__name=AGENT).distinct())
    unknown = sorted(set(wanted) - {user.username for user in users})
    if unknown:
        raise ParticipantsRefused(f"participants: {', '.join(unknown)}: not the user name of an agent")
    with transaction.atomic():
        locked = lock_run(run)
        before = locked.participant_names()
        if before == wanted:
            return before
        locked.participants.set(users)
        record_event(run=locked, actor=actor, action=Action.RUN_PARTICIPANTS_CHANGED, object_type="run",
                     object_id=locked.run_id, before={"participants": before}, after={"participants": wanted})
    return wanted


def issue_token(*, name: str, role: str, actor: Actor, password: str | None = None,
                adjudicate: bool = False) -> tuple[ApiToken, str]:
    """Create the user if needed, give it the role (and, for a reviewer, the adjudicate permission when
    `adjudicate`), and return a new token with its key (shown once)."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    if adjudicate and role not in (REVIEWER, ADMIN):
        raise ValueError(f"--adjudicate is a reviewer's permission, not an {role}'s")
    User = get_user_model()
    with transaction.atomic():
        ensure_role_groups()
        user, _ = User.objects.get_or_create(username=name)
        if password:
            user.set_password(password)
            user.save(update_fields=["password"])
        user.groups.add(Group.objects.get(name=role))
        if adjudicate:
            user.groups.add(Group.objects.get(name=ADJUDICATOR))
        if role == ADMIN and not (user.is_staff and user.is_superuser):
            user.is_staff = user.is_superuser = True
            user.save(update_fields=["is_staff", "is_superuser"])
        key = ApiToken.new_key()
        token = ApiToken.objects.create(user=user, name=name, key_sha256=hash_token(key), key_prefix=key[:10])
        record_event(run=None, actor=actor, action=Action.TOKEN_ISSUED, object_type="api_token",
                     object_id=token.pk, after={"name": name, "user": user.username, "role": role,
                                                "key_prefix": token.key_prefix,
                                                **({"adjudicate": True} if adjudicate else {})})
    return token, key


def revoke_token(*, token: ApiToken, actor: Actor) -> ApiToken:
    with transaction.atomic():
        updated = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        token.refresh_from_db(fields=["revoked_at"])
        if updated:
            record_event(run=None, actor=actor, action=Action.TOKEN_REVOKED, object_type="api_token",
                         object_id=token.pk, before={"revoked": False}, after={"revoked": True, "name": token.name})
    return token


def record_login_lockout(*, username: str, address: str, failures: int) -> None:
    """Audit that a user name or address reached the failed-login limit (no run: the global chain)."""
    record_event(run=None, actor=Actor("anonymous"), action=Action.LOGIN_LOCKED, object_type="user",
                 object_id=username, after={"address": address, "failures": failures})


class ReviewsRequiredRefused(ValueError):
    """`reviews_required` out of range, or changed after the run's first decision."""

    field = "reviews_required"  # the part of the run's PATCH at fault




def decisions_taken(run: Run) -> bool:
    """The run has a decision on its trail: how many reviews it needs is settled."""
    return AuditEvent.objects.filter(run=run, action__in=DECISIONS).exists()


def set_reviews_required(*, run: Run, count: int, actor: Actor) -> int:
    """How many independent review passes the run needs (1-5), settable until its first decision, audited."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_REVIEWS_REQUIRED:
        raise ReviewsRequiredRefused(f"reviews_required: a whole number from 1 to {MAX_REVIEWS_REQUIRED}")
    with transaction.atomic():
        locked = lock_run(run)
        if locked.reviews_required == count:
            return count
        if decisions_taken(locked):
            raise ReviewsRequiredRefused(
                f"reviews_required: run {locked.run_id} already has decisions; how many independent reviews "
                "it needs is set before the first one")
        before = locked.reviews_required
        locked.reviews_required, locked.updated_at = count, timezone.now()
        locked.save(update_fields=["reviews_required", "updated_at"])
        record_event(run=locked, actor=actor, action=Action.RUN_REVIEWS_REQUIRED_CHANGED, object_type="run",
                     object_id=locked.run_id, before={"reviews_required": before},
                     after={"reviews_required": count})
    run.reviews_required = count
    return count


def change_run(*, run: Run, actor: Actor, participants: list[str] | None = None,
               reviews_required: int | None = None) -> None:
    """The run's PATCH: how many independent reviews it needs, then its participants, both or neither (one
    transaction; ReviewsRequiredRefused or ParticipantsRefused), each change audited by its own service."""
    with transaction.atomic():
        if reviews_required is not None:
            set_reviews_required(run=run, count=reviews_required, actor=actor)
        if participants is not None:
            set_participants(run=run, usernames=participants, actor=actor)

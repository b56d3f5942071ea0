"""Roles (DESIGN.md §9) and the access checks every view and API call goes through.

Roles are Django groups named after them; a superuser holds every role. A view that
reads a run asks `run_for`, which 404s, checks the role and writes the audited denial; nothing
else. (A view that reads or decides inside a reviewer's own review pass says so itself, with
`reconcile.passes.entering`.)
"""
from __future__ import annotations

from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db import models
from django.shortcuts import get_object_or_404

from .audit import DENIED, Actor, record_denial
from .models import ApiToken, AuditEvent, Run

AGENT, REVIEWER, AUDITOR, ADMIN = "agent", "reviewer", "auditor", "admin"
ROLES = (AGENT, REVIEWER, AUDITOR, ADMIN)
# Not a role but a permission a reviewer may hold (DESIGN §9): settling the conflicts between
# independent review passes. A group of this name, like the roles; the admin role holds it too.
ADJUDICATOR = "adjudicator"

# Who may do what. Reading a run is open to every role.
READ_RUNS = {AGENT, REVIEWER, AUDITOR, ADMIN}
UPLOAD = {AGENT, ADMIN}
PROPOSE = {AGENT, REVIEWER, ADMIN}
DECIDE = {REVIEWER, ADMIN}
READ_AUDIT = {AUDITOR, REVIEWER, ADMIN}
# `run_for(..., allowed=TRAIL_READERS)`: the roles of READ_AUDIT, or an agent that took part in the run.
TRAIL_READERS = frozenset({"audit trail"})
# Actions that do not make the actor a participant of the run (see may_read_audit).
NOT_PARTICIPATION = {DENIED}


def ensure_role_groups() -> None:
    for role in (*ROLES, ADJUDICATOR):
        Group.objects.get_or_create(name=role)


def may_adjudicate(user) -> bool:
    """A reviewer granted the adjudicate permission, or an admin (DESIGN §9)."""
    if user is None or not user.is_authenticated:
        return False
    roles = roles_of(user)
    return ADMIN in roles or (REVIEWER in roles and user.groups.filter(name=ADJUDICATOR).exists())


def roles_of(user) -> set[str]:
    if user is None or not user.is_authenticated:
        return set()
    if user.is_superuser:
        return set(ROLES)
    cached = getattr(user, "_aas_roles", None)
    if cached is None:
        cached = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        user._aas_roles = cached
    return cached


def has_any_role(user, allowed: set[str]) -> bool:
    return bool(roles_of(user) & allowed)


def _deny(run: Run, *, user, actor: Actor | None, attempted: str) -> None:
    """The audited denial, folded per caller and run (reviews.audit.record_denial)."""
    record_denial(run=run, actor=actor or (Actor.for_user(user) if user.is_authenticated else Actor("anonymous")),
                  attempted=attempted, roles=roles_of(user))


def check_role(user, allowed: set[str], *, run=None, action: str = "", actor=None) -> None:
    """Raise PermissionDenied unless the user holds one of `allowed`; a denial on a run is audited."""
    if has_any_role(user, allowed):
        return
    if run is not None:
        _deny(run, user=user, actor=actor, attempted=action)
    needed = " or ".join(sorted(allowed))
    raise PermissionDenied(f"This needs the {needed} role.")


def run_for(request, run_id: str, *, allowed: set[str] | frozenset = READ_RUNS, action: str = "read") -> Run:
    """The run named in the URL if the caller may do `action` on it: 404 when there is none, else
    PermissionDenied with the denial audited. `allowed=TRAIL_READERS` asks whether the caller may read
    the run's audit trail."""
    run = get_object_or_404(Run, run_id=run_id)
    actor = Actor.for_request(request)
    if allowed is TRAIL_READERS:
        check_audit_access(request.user, run, actor=actor)
    else:
        check_role(request.user, allowed, run=run, action=action, actor=actor)
    return run


def participant_refusal(run: Run) -> str:
    return (f"Only the participants of run {run.run_id} may upload to it or answer its correction requests: "
            "the agent that created it, and agents a reviewer or admin adds with "
            f"PATCH /api/runs/{run.run_id}/ {{\"participants\": [...]}}.")


def check_participant(request, run_id: str, *, action: str) -> Run:
    """The run, if the caller may `action` on it as an uploader: an admin, or an agent among its participants
    (DESIGN §9). 404 when there is none; PermissionDenied, audited, naming how to be added, otherwise."""
    run = run_for(request, run_id, allowed=UPLOAD, action=action)
    if ADMIN in roles_of(request.user) or run.has_participant(request.user):
        return run
    _deny(run, user=request.user, actor=Actor.for_request(request), attempted=action)
    raise PermissionDenied(participant_refusal(run))


def refuse_unless_allowed(request, run_id: str, *, allowed: set[str], action: str) -> None:
    """`run_for` for a caller that reads the run itself (under its row lock, say): the run is read here
    only to refuse, 404 when there is none, else the audited denial."""
    if not has_any_role(request.user, allowed):
        run_for(request, run_id, allowed=allowed, action=action)  # the caller lacks every allowed role: this raises


# Who may read a run's trail: the rule reads the trail itself (reviews must not ask records who uploaded).

def actor_labels_of(user) -> set[str]:
    """Every label the user acts under: the browser login and each of their API tokens."""
    labels = {Actor.for_user(user).label}
    labels.update(f"token:{name}" for name in ApiToken.objects.filter(user=user).values_list("name", flat=True))
    return labels


def may_read_audit(user, run: Run) -> bool:
    """Auditors, reviewers and admins read every run's trail; an agent reads the runs it took part in.

    An agent took part when it is one of the run's participants or when any event of the run,
    other than a denial, names one of its labels (it uploaded, proposed, …).
    """
    roles = roles_of(user)
    if roles & READ_AUDIT:
        return True
    if AGENT not in roles:
        return False
    if run.has_participant(user):
        return True
    return (AuditEvent.objects.filter(run=run, actor__in=actor_labels_of(user))
            .exclude(action__in=NOT_PARTICIPATION).exists())


def check_audit_access(user, run: Run, *, actor: Actor) -> None:
    """Raise PermissionDenied unless the user may read the run's trail; the denial is itself audited."""
    if may_read_audit(user, run):
        return
    _deny(run, user=user, actor=actor, attempted="read audit")
    raise PermissionDenied("Reading this run's audit trail needs the auditor, reviewer or admin role, "
                           "or an agent that took part in the run.")


def runs_with_readable_audit(user):
    """The runs whose trail `user` may read, as a queryset (the rule of may_read_audit, in SQL):
    every run for READ_AUDIT roles, for an agent the runs it created or any event of which, other
    than a denial, names one of its labels; none for anyone else."""
    roles = roles_of(user)
    if roles & READ_AUDIT:
        return Run.objects.all()
    if AGENT not in roles:
        return Run.objects.none()
    took_part = (AuditEvent.objects.filter(actor__in=actor_labels_of(user), run__isnull=False)
                 .exclude(action__in=NOT_PARTICIPATION).values("run_id"))
    return Run.objects.filter(models.Q(created_by=user) | models.Q(pk__in=took_part))

"""Roles (DESIGN.md §9) and the access checks every view and API call goes through.

Roles are Django groups named after them; a superuser holds every role. A view that
reads a run asks `run_for`, which 404s, checks the role and writes the audited denial; nothing
else. A write route declares who may call it once, beside itself, with `@route_policy` (roles, and
whether an agent must be a participant of the run), which enforces it the same way before the view
runs. (A view that reads or decides inside a reviewer's own review pass says so itself, with
`reconcile.passes.entering`.)
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import wraps
from typing import Callable

from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import Http404, HttpRequest
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
    """The audited denial, folded per caller and run (reviews.audit.record_denial); an agent outside the run is
    denied on the run-less chain, so that it writes nothing to the run's trail (DESIGN §9)."""
    roles = roles_of(user)
    outside = roles == {AGENT} and not run.has_participant(user)
    record_denial(run=run, actor=actor or (Actor.for_user(user) if user.is_authenticated else Actor("anonymous")),
                  attempted=attempted, roles=roles, outside=outside)


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
    return (f"Only the participants of run {run.run_id} may upload to it, propose its mappings or answer and reply "
            "to its correction requests: the agent that created it, and agents a reviewer or admin adds with "
            f"PATCH /api/runs/{run.run_id}/ {{\"participants\": [...]}}.")


def check_participant(request, run_id: str, *, action: str) -> Run:
    """The run, if the caller may `action` on it as an uploader: an admin, or an agent among its participants
    (DESIGN §9). 404 when there is none; PermissionDenied, audited, naming how to be added, otherwise."""
    return enforce(request, RoutePolicy(frozenset(UPLOAD), action, participant=True), run_id)


# Who may call each write route (DESIGN §9), declared once beside the route with `@route_policy` and
# enforced by it before the view runs; tests/security/test_authorisation_matrix.py reads the declarations.

RUN_ROUTE, CALLER_ROUTE = "run", "caller"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class RoutePolicy:
    """Who may call one write route.

    `roles`: the caller holds one of them (a superuser holds every role). `action`: what an audited denial
    says was attempted. `participant`: an agent must also be one of the run's participants (DESIGN §9); a
    caller admitted by another of `roles` (a reviewer, an admin) need not be. `scope`: RUN_ROUTE, the URL
    names a run (`run_id`): 404 when there is none, a denial audited on it; CALLER_ROUTE, the route acts on
    no run (it creates one, or acts on the caller's own things). `own`: the thing acted on is the caller's
    own, looked up among theirs (another's is 404 to everyone). `lookup`: False when the view reads the run
    itself, under its lock, and judges participation there (`check_participant` refuses): the role is
    checked here without reading the run, which is read only to refuse. `form`: the view's GET serves the
    write's form, for which the role is checked too (participation only for the write).
    """

    roles: frozenset[str]
    action: str
    participant: bool = False
    scope: str = RUN_ROUTE
    own: bool = False
    lookup: bool = True
    form: bool = False

    def __post_init__(self):
        object.__setattr__(self, "roles", frozenset(self.roles))

    def admits(self, user, run: Run | None) -> bool:
        """The rule `enforce` applies, as a question (a page asks it before offering a form)."""
        roles = roles_of(user)
        if not roles & self.roles:
            return False
        if not self.participant or roles & (self.roles - {AGENT}):
            return True
        return run is not None and run.has_participant(user)


def enforce(request, policy: RoutePolicy, run_id: str | None = None) -> Run | None:
    """Look up, check, audit a denial: the run a RUN_ROUTE names, if the caller may do `policy.action` on it
    (404 when there is none; PermissionDenied, audited, otherwise: naming how to be added when the caller
    holds the role but is no participant). A CALLER_ROUTE only checks the role and returns None."""
    if policy.scope == CALLER_ROUTE:
        check_role(request.user, policy.roles, action=policy.action)
        return None
    if not policy.lookup:
        refuse_unless_allowed(request, run_id, allowed=policy.roles, action=policy.action)
        return None
    run = run_for(request, run_id, allowed=policy.roles, action=policy.action)
    if policy.admits(request.user, run):
        return run
    _deny(run, user=request.user, actor=Actor.for_request(request), attempted=policy.action)
    raise PermissionDenied(participant_refusal(run))


def route_policy(roles, *, action: str, participant: bool = False, scope: str = RUN_ROUTE, own: bool = False,
                 lookup: bool = True, form: bool = False) -> Callable:
    """Declare, on a view or a DRF handler method, who may call it (see RoutePolicy), and enforce it on its
    write requests before it runs: the view finds the run it checked as `request.run` (a RUN_ROUTE's).
    Innermost: below `login_required`, the method checks and `reconcile.passes.entering`'s decorators."""
    return _declared({None: RoutePolicy(roles, action, participant, scope, own, lookup, form)})


def route_policies(kwarg: str, **policies: RoutePolicy) -> Callable:
    """As `route_policy`, for a view whose URL names what it does (`…/<str:verb>/`): one policy per value of
    the URL's `kwarg`; any other value is 404."""
    return _declared({(kwarg, value): policy for value, policy in policies.items()})


def _declared(policies: dict) -> Callable:
    def declare(view: Callable) -> Callable:
        @wraps(view)
        def enforced(*args, **kwargs):
            request = args[0] if isinstance(args[0], HttpRequest) else args[1]  # a function view, or a handler
            key = next(iter(policies))
            if key is not None:
                key = (key[0], kwargs.get(key[0]))
                if key not in policies:
                    raise Http404("no such action")
            policy = policies[key]
            if request.method == "GET" and policy.form:
                policy = replace(policy, participant=False)  # the write's form: the role only
            elif request.method not in WRITE_METHODS:
                policy = None
            if policy is not None:
                run = enforce(request, policy, kwargs.get("run_id"))
                if run is not None:
                    request.run = run
            return view(*args, **kwargs)

        enforced.route_policies = policies
        return enforced

    return declare


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

"""Roles (DESIGN.md §9) and the access checks every view and API call goes through.

Roles are Django groups named after them; a superuser holds every role.
"""
from __future__ import annotations

from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied

AGENT, REVIEWER, AUDITOR, ADMIN = "agent", "reviewer", "auditor", "admin"
ROLES = (AGENT, REVIEWER, AUDITOR, ADMIN)

# Who may do what. Reading a run is open to every role.
READ_RUNS = {AGENT, REVIEWER, AUDITOR, ADMIN}
UPLOAD = {AGENT, ADMIN}
PROPOSE = {AGENT, REVIEWER, ADMIN}
DECIDE = {REVIEWER, ADMIN}
READ_AUDIT = {AUDITOR, REVIEWER, ADMIN}


def ensure_role_groups() -> None:
    for role in ROLES:
        Group.objects.get_or_create(name=role)


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


def check_role(user, allowed: set[str], *, run=None, action: str = "", actor=None) -> None:
    """Raise PermissionDenied unless the user holds one of `allowed`; a denial on a run is audited."""
    if has_any_role(user, allowed):
        return
    if run is not None:
        from .audit import Actor, record_denial

        record_denial(run=run, actor=actor or (Actor.for_user(user) if user.is_authenticated else Actor("anonymous")),
                      attempted=action, roles=roles_of(user))
    needed = " or ".join(sorted(allowed))
    raise PermissionDenied(f"This needs the {needed} role.")

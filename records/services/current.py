"""A run's current member set: the current version of each member, and the manifest pinning them."""
from __future__ import annotations

from django.db.models import F, QuerySet

from reviews.models import Run

from .. import manifests
from ..models import MemberVersion


def current_versions(run: Run, *, content: bool = False, parsed: bool = True) -> QuerySet[MemberVersion]:
    """The current version of every member of the run, by role (a query: it also serves as a subquery,
    `member_version__in=current_versions(run)`). Its bytes only when `content` is asked
    (approval, finalization and export hash or carry them; everyone else reads the recorded SHA-256 or
    the bytes through `records.parsed`); the parser output unless `parsed=False`."""
    versions = (MemberVersion.objects.filter(member__run=run, member__current_version_id=F("id"))
                .select_related("member").order_by("member__role"))
    deferred = [field for field, wanted in (("content", content), ("parsed", parsed)) if not wanted]
    return versions.defer(*deferred) if deferred else versions


def member_name(version: MemberVersion) -> str:
    """The member's file name in the set layout (`memory.md`), which manifests pin."""
    return manifests.member_filename(version.member.role)


def member_files(versions: list[MemberVersion]) -> dict[str, bytes]:
    """Set-layout file name → bytes, for versions read with `content=True`."""
    return {member_name(v): bytes(v.content) for v in versions}


def run_manifest(versions: list[MemberVersion], *, rehash: bool = False) -> tuple[str, str]:
    """The §1 ARTIFACT.yaml text of these member versions and its own SHA-256: pinning their recorded
    SHA-256, or with `rehash` (versions read with `content=True`) the SHA-256 of their stored bytes
    computed now, which is what approval signs off."""
    pins = (manifests.pins_of(member_files(versions)) if rehash
            else {member_name(v): v.sha256 for v in versions})
    text = manifests.build_manifest(pins)
    return text, manifests.manifest_sha256(text)


def version_label(role: str, number: int) -> str:
    """A member version as the audit trail names it: `memory/v2`."""
    return f"{role}/v{number}"

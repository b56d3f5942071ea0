"""Run directories imported as one archive: every pin checked, all members or none (DESIGN §4)."""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction

from reviews.actions import Action
from reviews.audit import Actor, record_event
from reviews.models import Run

from .. import archive_reading, manifests
from ..models import MemberVersion
from .parse import json_safe
from .refusals import BundleRefused, BundleTooLarge, UploadRefused, check_report_bytes
from .upload import ingest_member_report

logger = logging.getLogger(__name__)


def read_bundle(archive: bytes) -> tuple[dict[str, bytes], dict, dict[str, str], dict[str, str]]:
    """(files, manifest, pins, roles) of a run directory archive whose every pin holds; raises
    BundleTooLarge or BundleRefused (naming the file) otherwise."""
    try:
        files = archive_reading.read_archive(archive, max_bytes=settings.MAX_BUNDLE_BYTES)
        manifest = manifests.read_manifest(files)
        pins = manifests.check_pins(files)
        return files, manifest, pins, manifests.members_of(pins)
    except archive_reading.BundleTooLarge as error:
        raise BundleTooLarge(error.message, details={"problems": error.problems}) from None
    except archive_reading.BundleError as error:
        raise BundleRefused(error.message, details={"problems": error.problems}) from None


def import_bundle(*, run: Run, archive: bytes, actor: Actor) -> list[tuple[MemberVersion, bool]]:
    """Ingest every member of a run directory (zip or tar.gz) whose pins all hold, or none of them."""
    return ingest_bundle(run=run, bundle=read_bundle(archive), actor=actor)


def ingest_bundle(*, run: Run, bundle, actor: Actor) -> list[tuple[MemberVersion, bool]]:
    """`import_bundle` of a run directory already read by `read_bundle` (the archive is unpacked once)."""
    files, manifest, pins, roles = bundle
    if not roles:
        raise BundleRefused(f"{manifests.MANIFEST_NAME}: pins no member file", details={"problems": []})
    for name in sorted(roles):
        try:
            check_report_bytes(files[name])
        except UploadRefused as error:
            raise type(error)(f"{name}: {error.message}", details={"file": name, **(error.details or {})}) from None
    results = []
    with transaction.atomic():
        for name in sorted(roles):
            results.append(ingest_member_report(run=run, role=roles[name], filename=name, content=files[name],
                                                actor=actor))
        record_event(run=run, actor=actor, action=Action.BUNDLE_IMPORTED, object_type="run", object_id=run.run_id,
                     after={"manifest": json_safe(manifest),
                            "members": {name: {"role": roles[name], "sha256": pins[name], "version": v.version,
                                               "created": created}
                                        for name, (v, created) in zip(sorted(roles), results)}})
    return results

"""Creating a run from a run directory archive (DESIGN §4 `POST /api/runs/import/`)."""
from __future__ import annotations

from django.conf import settings
from django.db import transaction

from records import archives, run_identity
from records.services import BundleRefused, BundleTooLarge, import_bundle
from reviews.audit import Actor
from reviews.models import Run
from reviews.services import create_run


def import_run(*, archive: bytes, actor: Actor, user=None) -> tuple[Run, list]:
    """Create the run the archive names and ingest its members, all or nothing.

    Raises BundleRefused/BundleTooLarge for an archive, pin or identity problem
    (nothing stored) and `reviews.services.RunExists` when the run exists.
    """
    try:
        files = archives.read_archive(archive, max_bytes=settings.MAX_BUNDLE_BYTES)
        manifest = archives.read_manifest(files)
        pins = archives.check_pins(files)
        roles = archives.members_of(pins)
    except archives.BundleTooLarge as error:
        raise BundleTooLarge(error.message, details={"problems": error.problems}) from None
    except archives.BundleError as error:
        raise BundleRefused(error.message, details={"problems": error.problems}) from None
    try:
        identity = run_identity.identity_of(manifest, {name: files[name] for name in roles})
    except run_identity.IdentityError as error:
        raise BundleRefused(str(error), details={"problems": error.problems}) from None
    with transaction.atomic():
        run = create_run(actor=actor, user=user, **identity)
        results = import_bundle(run=run, archive=archive, actor=actor)
    return run, results

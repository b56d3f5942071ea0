"""Creating a run from a run directory archive (DESIGN §4 `POST /api/runs/import/`)."""
from __future__ import annotations

from django.db import transaction

from records import run_identity
from records.manifests import manifest_fields
from records.models import ImportedManifest
from records.services import BundleRefused, ingest_bundle, read_bundle
from reviews.audit import Actor
from reviews.models import Run
from reviews.services import create_run


def import_run(*, archive: bytes, actor: Actor, user=None) -> tuple[Run, list]:
    """Create the run the archive names and ingest its members, all or nothing.

    Raises BundleRefused/BundleTooLarge for an archive, pin or identity problem
    (nothing stored) and `reviews.services.RunExists` when the run exists.
    """
    bundle = read_bundle(archive)
    files, manifest, _pins, roles = bundle
    try:
        identity = run_identity.identity_of(manifest, {name: files[name] for name in roles})
    except run_identity.IdentityError as error:
        raise BundleRefused(str(error), details={"problems": error.problems}) from None
    with transaction.atomic():
        run = create_run(actor=actor, user=user, **identity)
        results = ingest_bundle(run=run, bundle=bundle, actor=actor)
        ImportedManifest.objects.create(run=run, fields=manifest_fields(manifest))
    return run, results

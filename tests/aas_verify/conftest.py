"""One real finalized run, signed by finalization and exported by the app, once per session.

The verifier's tests themselves read only the bundle's bytes: the database
is used here to produce the bundle through the app's own code paths, inside
a transaction rolled back at once (so pytest-django must set it up for them).
The tests of the canonical form and of the isolated command line use none.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest


def pytest_collection_modifyitems(config, items):
    # pytest-django creates the test database only when a collected test asks for it: a test that uses
    # the session's bundle does, for the fixture's sake (the test itself reads only the bundle's bytes).
    for item in items:
        if "signed_bundle" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.django_db)


@dataclass(frozen=True)
class SignedBundle:
    files: dict[str, bytes]
    key: object  # results.signing.SigningKey
    key_dir: Path

    def copy(self) -> dict[str, bytes]:
        return dict(self.files)


@pytest.fixture(scope="session")
def signed_bundle(django_db_setup, django_db_blocker, tmp_path_factory) -> SignedBundle:
    from django.db import transaction

    from records.archive_reading import read_archive
    from results.services import approve_run, export_bundle, finalize_run
    from results.signing import create_key, load_signing_key
    from reviews.audit import Actor
    from reviews.services import create_run
    from tests.aas_verify.bundle_files import MAX_BYTES
    from tests.results.test_approval import (
        CHEATSHEET,
        CHEATSHEET_FIELDS,
        REVIEWER,
        corpus_files,
        mark_validated,
        reconcile_rows,
        store_members,
    )

    from django.conf import settings

    # A key of this fixture's own (the session's is shared with other tests, which may rotate theirs).
    key_dir = tmp_path_factory.mktemp("signing")
    create_key(key_dir / "ed25519.pem", key_dir / "public")
    key = load_signing_key(key_dir / "ed25519.pem")
    saved = settings.SIGNING_KEY_PATH, settings.SIGNING_PUBLIC_KEYS_DIR
    settings.SIGNING_KEY_PATH, settings.SIGNING_PUBLIC_KEYS_DIR = str(key_dir / "ed25519.pem"), str(key_dir / "public")
    with django_db_blocker.unblock(), transaction.atomic():
        run = create_run(actor=Actor.command("test"), **CHEATSHEET_FIELDS)
        files = corpus_files(CHEATSHEET)
        versions = store_members(run, files)
        mark_validated(run, files, warnings=1)
        reconcile_rows(run, versions)
        approve_run(run=run, note="Checked every mapping against the runtime routes.", actor=REVIEWER)
        result = finalize_run(run=run, actor=Actor.worker("finalize_run"))
        assert result is not None, run.status_reason
        bundle = read_archive(export_bundle(run=run), max_bytes=MAX_BYTES)
        transaction.set_rollback(True)
    settings.SIGNING_KEY_PATH, settings.SIGNING_PUBLIC_KEYS_DIR = saved
    return SignedBundle(bundle, key, key_dir)

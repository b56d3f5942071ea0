"""The stand-in signer adds only the signed extras to the real export (so the forgery tests forge a real bundle)."""
from __future__ import annotations

import pytest

from reconcile.approval import approve_run, export_bundle, finalize_run
from records.archives import read_archive
from results.signing import create_key, load_signing_key
from reviews.audit import Actor
from tests.aas_verify.standin_signing import MAX_BYTES, standin_signed_export
from tests.reconcile.test_approval import REVIEWER, ready_run  # noqa: F401


@pytest.mark.django_db
def test_it_keeps_every_exported_file_and_adds_the_signed_extras(ready_run, tmp_path,  # noqa: F811
                                                                 django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        approve_run(run=ready_run, note="Checked.", actor=REVIEWER)
    finalize_run(run=ready_run, actor=Actor.worker("finalize_run"))
    create_key(tmp_path / "k.pem", tmp_path / "public")
    exported = read_archive(export_bundle(run=ready_run), max_bytes=MAX_BYTES)
    signed = standin_signed_export(ready_run, load_signing_key(tmp_path / "k.pem"))
    assert set(signed) - set(exported) == {"result.json", "attestation.dsse.json", "public-key.pem"}
    assert {name for name in exported if exported[name] != signed[name]} == {"audit.json", "MANIFEST.json"}

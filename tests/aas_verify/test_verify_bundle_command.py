"""`manage.py verify_bundle` runs aas_verify: the same lines and exit codes as `python -m aas_verify`."""
from __future__ import annotations

import io
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from tests.aas_verify.bundle_files import manifest_json, zipped
from tests.conftest import ROOT


def test_it_prints_ok_for_a_clean_signed_export(signed_bundle, tmp_path):
    path = tmp_path / "run.zip"
    path.write_bytes(zipped(signed_bundle.files))
    key = tmp_path / "server.pem"
    key.write_text(signed_bundle.key.public_key_pem)
    out = io.StringIO()
    call_command("verify_bundle", str(path), "--key", str(key), stdout=out)
    assert out.getvalue().splitlines()[-1].startswith("OK 12 files, ") and signed_bundle.key.keyid in out.getvalue()


def test_it_names_the_tampered_file_and_exits_1(signed_bundle, tmp_path):
    files = signed_bundle.copy()
    files["memory.md"] = files["memory.md"].replace(b"cheatsheet", b"cheat-sheet", 1)
    path = tmp_path / "tampered.zip"
    path.write_bytes(zipped(files))
    out = io.StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("verify_bundle", str(path), stdout=out)
    assert failed.value.returncode == 1
    assert "FAIL memory.md: SHA-256 mismatch, ARTIFACT.yaml pins" in out.getvalue()


def test_an_unsigned_export_fails_naming_the_missing_envelope(signed_bundle, tmp_path):
    files = signed_bundle.copy()
    for name in ("attestation.dsse.json", "public-key.pem"):
        del files[name]
    files["MANIFEST.json"] = manifest_json(files)
    path = tmp_path / "unsigned.zip"
    path.write_bytes(zipped(files))
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("verify_bundle", str(path), stdout=out)
    assert "FAIL attestation.dsse.json: missing from the bundle" in out.getvalue()


def test_it_exits_1_from_the_command_line_without_debug_or_secret_or_a_database_that_answers(tmp_path):
    """With DEBUG off the settings need DATABASE_URL and REDIS_URL (fail closed), but verify_bundle never
    connects: here both name ports where nothing listens."""
    path = tmp_path / "not-a-bundle.zip"
    path.write_bytes(b"hello")
    env = {"PATH": "/usr/bin:/bin", "VAR_DIR": str(tmp_path), "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
           "REDIS_URL": "redis://127.0.0.1:1/0"}
    done = subprocess.run([sys.executable, "manage.py", "verify_bundle", str(path)], cwd=ROOT, capture_output=True,
                          text=True, env=env)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == ["FAIL bundle: not a zip or tar.gz file", "FAILED: 1 problem"]


def test_it_refuses_a_missing_file_clearly(tmp_path):
    with pytest.raises(CommandError) as failed:
        call_command("verify_bundle", str(tmp_path / "nowhere.zip"), stderr=io.StringIO())
    assert failed.value.returncode == 2

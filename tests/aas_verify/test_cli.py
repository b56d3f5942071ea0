"""`python -m aas_verify` from the command line: exit codes, --json, --key with GET /api/keys/'s JSON, no Django."""
from __future__ import annotations

import io
import json
import subprocess
import sys

from aas_verify.cli import main
from results.signing import load_signing_key, published_keys, rotate_key
from tests.aas_verify.bundle_files import manifest_json, zipped
from tests.conftest import ROOT

# Refuses any import of Django, YAML or the apps: the verifier must run where none of them is installed.
NO_DJANGO = r"""
import sys
BANNED = ("django", "rest_framework", "yaml", "rfc8785", "securesystemslib", "reviews", "records", "reconcile",
          "results", "config", "celery")
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BANNED:
            raise ImportError(f"aas_verify imported {name}")
sys.meta_path.insert(0, Refuse())
sys.path.insert(0, sys.argv.pop(1))
from aas_verify.cli import main
code = main(sys.argv[1:])
assert not [m for m in sys.modules if m.split(".")[0] in BANNED]
sys.exit(code)
"""


def run_isolated(*args) -> subprocess.CompletedProcess:
    """`python -I` (no PYTHONPATH, no cwd, no user site), no DJANGO_SETTINGS_MODULE, no SECRET_KEY."""
    return subprocess.run([sys.executable, "-I", "-c", NO_DJANGO, str(ROOT), *args], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"}, timeout=60)


def test_it_passes_a_clean_bundle_in_an_isolated_interpreter_without_django(signed_bundle, tmp_path):
    bundle = tmp_path / "run.zip"
    bundle.write_bytes(zipped(signed_bundle.files))
    key = tmp_path / "server.pem"
    key.write_text(signed_bundle.key.public_key_pem)
    done = run_isolated(str(bundle), "--key", str(key))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("OK 12 files, ") and signed_bundle.key.keyid in done.stdout


def test_it_fails_a_forged_bundle_in_an_isolated_interpreter_naming_the_file(signed_bundle, tmp_path):
    files = signed_bundle.copy()
    files["result.md"] += b"\nedited\n"
    files["MANIFEST.json"] = manifest_json(files)
    bundle = tmp_path / "forged.zip"
    bundle.write_bytes(zipped(files))
    done = run_isolated(str(bundle), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert {"file": "result.md", "field": "subject.digest.sha256"} in [
        {"file": f["file"], "field": f["field"]} for f in report["failures"]]


def test_it_exits_2_when_the_bundle_cannot_be_read(tmp_path):
    done = run_isolated(str(tmp_path / "nowhere.zip"))
    assert done.returncode == 2 and "nowhere.zip: cannot read" in done.stderr


def test_it_names_a_file_that_is_no_archive(tmp_path):
    path = tmp_path / "x.zip"
    path.write_bytes(b"hello")
    out = io.StringIO()
    assert main([str(path)], stdout=out) == 1
    assert out.getvalue().splitlines()[0] == "FAIL bundle: not a zip or tar.gz file"


def test_a_bundle_signed_before_a_rotation_verifies_against_the_retired_key(signed_bundle, tmp_path):
    """The session's key is rotated out; GET /api/keys/'s JSON still lists it, retired, and the bundle verifies."""
    key_path, public = signed_bundle.key_dir / "rotated.pem", tmp_path / "public"
    import shutil

    shutil.copytree(signed_bundle.key_dir / "public", public)
    shutil.copy(signed_bundle.key_dir / "ed25519.pem", key_path)
    retired, current = rotate_key(key_path, public)
    assert retired.keyid == signed_bundle.key.keyid and load_signing_key(key_path).keyid == current.keyid
    listing = tmp_path / "keys.json"
    listing.write_text(json.dumps({"keys": [k.as_api() for k in published_keys(public)]}))
    bundle = tmp_path / "run.zip"
    bundle.write_bytes(zipped(signed_bundle.files))
    out = io.StringIO()
    assert main([str(bundle), "--key", str(listing)], stdout=out) == 0, out.getvalue()
    assert f"signed by key {retired.keyid}" in out.getvalue()
    only_current = tmp_path / "current.pem"
    only_current.write_text(current.public_key_pem)
    assert main([str(bundle), "--key", str(only_current)], stdout=io.StringIO()) == 1

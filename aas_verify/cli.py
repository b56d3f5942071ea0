"""`python -m aas_verify BUNDLE (--key FILE | --key-fingerprint SHA256) [--json]`: exit 0 only when every check
holds and the signature verified against a key the caller trusts (exit codes: report.py)."""
from __future__ import annotations

import argparse
import json
import sys

from . import keys as trusted_keys
from .checks import DEFAULT_MAX_BYTES, verify_bundle
from .report import NOT_VERIFIED, VERIFIED

USAGE_ERROR = NOT_VERIFIED
KEY_HELP = ("a key you trust, obtained out of band: a PEM public key, or the keys document of GET /api/keys/ "
            "(each key with purpose, valid_from, valid_until); repeatable")
FINGERPRINT_HELP = ("the SHA-256 (hex) of the raw 32-byte Ed25519 public key you trust, pinned out of band "
                    "(`manage.py signing_key list` prints it); repeatable; with --key it restricts those keys")


def add_key_arguments(parser) -> None:
    """--key and --key-fingerprint, as every verifier takes them (aas_verify, verify_bundle, aas verify)."""
    parser.add_argument("--key", action="append", default=[], metavar="FILE", help=KEY_HELP)
    parser.add_argument("--key-fingerprint", action="append", default=[], metavar="SHA256", help=FINGERPRINT_HELP)


def main(argv: list[str] | None = None, *, stdout=None) -> int:
    stdout = stdout or sys.stdout
    parser = argparse.ArgumentParser(
        prog="python -m aas_verify",
        description="Verify an exported run bundle offline: pins, manifest, member hashes in the result, "
                    "the audit chain and its head, and the signed attestation against a key you trust (DESIGN §7). "
                    "Exit 0 verified, 1 a check failed, 2 no trusted key given or the bundle or key cannot be read.")
    parser.add_argument("bundle", help="the exported bundle (zip or tar.gz)")
    add_key_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                        help="refuse bundles that uncompress to more than this (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        pins = [trusted_keys.pinned(value) for value in args.key_fingerprint]
        with open(args.bundle, "rb") as handle:
            data = handle.read()
        keys = []
        for path in args.key:
            with open(path, "rb") as handle:
                keys += trusted_keys.load_keys(handle.read(), f"--key {path}")
    except OSError as error:
        print(f"{error.filename}: cannot read ({error.strerror or error})", file=sys.stderr)
        return USAGE_ERROR
    except trusted_keys.KeyFileError as error:
        print(str(error), file=sys.stderr)
        return USAGE_ERROR
    # The keys document lists the audit key beside the result key: each is used only for its purpose.
    audit_keys = [key for key in keys if key.purpose == trusted_keys.AUDIT]
    report = verify_bundle(data, keys, fingerprints=pins, max_bytes=args.max_bytes, audit_keys=audit_keys or None)
    if not audit_keys and report.events:
        report.notes.append("audit events' signatures not checked: the keys given hold no audit key "
                            "(the keys document of GET /api/keys/ lists it)")
    if args.json:
        stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
    else:
        for failure in report.failures:
            stdout.write(f"FAIL {failure.line()}\n")
        for note in report.notes:
            stdout.write(f"NOTE {note}\n")
        if report.exit_code == VERIFIED:
            stdout.write(f"OK {report.files} files, {report.events} audit events, signed by key {report.keyid} "
                         f"(fingerprint {report.fingerprint}, {report.key_origin}; {report.key_window})\n")
        elif report.exit_code == NOT_VERIFIED:
            stdout.write("NOT VERIFIED: the other checks hold, but the signature was not checked against a key you "
                         "trust (--key FILE or --key-fingerprint SHA256)\n")
        else:
            stdout.write(f"FAILED: {len(report.failures)} problem{'s' if len(report.failures) != 1 else ''}\n")
    return report.exit_code

"""`python -m aas_verify BUNDLE [--key PEM] [--json]`: exit 0 only when every check holds."""
from __future__ import annotations

import argparse
import json
import sys

from . import dsse
from .checks import DEFAULT_MAX_BYTES, verify_bundle

USAGE_ERROR = 2


def main(argv: list[str] | None = None, *, stdout=None) -> int:
    stdout = stdout or sys.stdout
    parser = argparse.ArgumentParser(
        prog="python -m aas_verify",
        description="Verify an exported run bundle offline: pins, manifest, member hashes in the result, "
                    "the audit chain and its head, and the signed attestation (DESIGN §7).")
    parser.add_argument("bundle", help="the exported bundle (zip or tar.gz)")
    parser.add_argument("--key", help="the server's public key: a PEM file, or the JSON of GET /api/keys/ "
                                      "(default: the bundle's own public-key.pem, which proves nothing alone)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                        help="refuse bundles that uncompress to more than this (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        with open(args.bundle, "rb") as handle:
            data = handle.read()
        keys = None
        if args.key:
            with open(args.key, "rb") as handle:
                keys = dsse.load_keys(handle.read(), f"--key {args.key}")
    except OSError as error:
        print(f"{error.filename}: cannot read ({error.strerror or error})", file=sys.stderr)
        return USAGE_ERROR
    except dsse.EnvelopeError as error:
        print(str(error), file=sys.stderr)
        return USAGE_ERROR
    report = verify_bundle(data, keys, max_bytes=args.max_bytes)
    if args.json:
        stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
    else:
        for failure in report.failures:
            stdout.write(f"FAIL {failure.line()}\n")
        for note in report.notes:
            stdout.write(f"NOTE {note}\n")
        if report.ok:
            stdout.write(f"OK {report.files} files, {report.events} audit events, signed by key {report.keyid}\n")
        else:
            stdout.write(f"FAILED: {len(report.failures)} problem{'s' if len(report.failures) != 1 else ''}\n")
    return 0 if report.ok else 1

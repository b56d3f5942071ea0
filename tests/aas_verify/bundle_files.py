"""What the verifier's tests do to a bundle's files: rebuild MANIFEST.json after a forgery, zip them again."""
from __future__ import annotations

import json

from records.manifests import pins_of
from results.bundles import write_export_zip

MAX_BYTES = 200 * 1024 * 1024


def manifest_json(files: dict[str, bytes]) -> bytes:
    """MANIFEST.json over every other file, as the exporter writes it (a forger can recompute it)."""
    listing = pins_of({name: data for name, data in files.items() if name != "MANIFEST.json"})
    return (json.dumps({"files": listing}, indent=2, sort_keys=True) + "\n").encode("utf-8")


def zipped(files: dict[str, bytes]) -> bytes:
    return write_export_zip(files)

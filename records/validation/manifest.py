"""An `ARTIFACT.yaml` checked against the exact bytes of the files pinned beside it.
"""
from __future__ import annotations

import hashlib
import re
from typing import Mapping

import yaml

from .findings import ERROR, Finding, Collector, sorted_findings


def validate_manifest(artifact_yaml_text: str, files: Mapping[str, bytes]) -> list[Finding]:
    """Check an `ARTIFACT.yaml` against the files kept beside it.

    `files` maps each file name in the set directory to its exact bytes
    (`ARTIFACT.yaml` itself, if included, is ignored).
    """
    out = Collector("ARTIFACT.yaml")
    try:
        manifest = yaml.safe_load(artifact_yaml_text)
    except yaml.YAMLError as exc:
        out.add("manifest-unreadable", ERROR, f"ARTIFACT.yaml is not valid YAML ({exc.__class__.__name__}); fix its syntax.")
        return sorted_findings(out.findings)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("members"), dict):
        out.add(
            "manifest-unreadable",
            ERROR,
            "ARTIFACT.yaml needs a `members:` mapping from each member file name to its `sha256:` pin.",
        )
        return sorted_findings(out.findings)
    pins = manifest["members"]
    for name in sorted(pins, key=str):
        entry = pins[name]
        name = str(name)
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            out.add(
                "malformed-pin",
                ERROR,
                f"The pin for {name} is not a lower-case 64-digit hex SHA-256 under `sha256:`; write the digest of the file's exact bytes.",
                record_id=name,
            )
            continue
        if name not in files:
            out.add(
                "pinned-file-missing",
                ERROR,
                f"ARTIFACT.yaml pins {name}, but the set holds no such file; add the file or remove its pin.",
                record_id=name,
            )
            continue
        actual = hashlib.sha256(files[name]).hexdigest()
        if actual != digest:
            out.add(
                "pin-mismatch",
                ERROR,
                f"{name} has SHA-256 {actual}, but ARTIFACT.yaml pins {digest}; the bytes changed after pinning — restore them or re-pin.",
                record_id=name,
            )
    for name in sorted(files):
        if name == "ARTIFACT.yaml" or name in {str(k) for k in pins}:
            continue
        out.add(
            "member-not-pinned",
            ERROR,
            f"{name} is in the set but ARTIFACT.yaml does not pin it; add its SHA-256 under `members:` or remove the file.",
            record_id=name,
        )
    return sorted_findings(out.findings)

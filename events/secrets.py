"""Webhook signing secrets: made, shown once, stored encrypted (DESIGN.md §9).

A signing secret must be read back to sign, so it cannot be hashed; it is encrypted with
Fernet under a key derived from SECRET_KEY (or WEBHOOK_SECRET_KEY when set, so that the
two can be rotated apart). Losing that key only invalidates the subscriptions' secrets.
"""
from __future__ import annotations

import base64
import hashlib
import secrets

from cryptography.fernet import Fernet
from django.conf import settings

PREFIX = "whsec_"


def new_secret() -> str:
    """A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes."""
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def _fernet() -> Fernet:
    material = settings.WEBHOOK_SECRET_KEY or settings.SECRET_KEY
    key = hashlib.sha256(b"aas webhook secrets\x00" + material.encode("utf-8")).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def seal(secret: str) -> str:
    return _fernet().encrypt(secret.encode("ascii")).decode("ascii")


def unseal(sealed: str) -> str:
    return _fernet().decrypt(sealed.encode("ascii")).decode("ascii")

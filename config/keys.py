"""With DEBUG off, serving and the worker do not start without their signing keys (issue 36 item 8; DESIGN §9).

The result key (SIGNING_KEY_PATH, results.signing) signs every final result and the audit key
(AUDIT_KEY_PATH, reviews.audit_keys) every audit event, so no change is written without it. In
production neither is made on the fly: serving (config/wsgi.py) and the worker (config/celery.py)
refuse to start, naming each file and the command that makes them. Commands that sign nothing
(check, migrate, verify_audit, verify_bundle, signing_key itself) do not ask. With DEBUG on nothing
is asked: `make run` ensures both keys, and the first event makes a missing audit key.
"""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

ENSURE = "python manage.py signing_key ensure"


def key_problems() -> list[str]:
    """What is wrong with each key, in one phrase each (a missing file, or why the file is not usable)."""
    from results import signing
    from reviews import audit_keys

    problems = []
    for what, setting, path, load, unusable in (
            ("result-signing key", "SIGNING_KEY_PATH", signing.key_path(), signing.load_signing_key,
             signing.SigningKeyError),
            ("audit key", "AUDIT_KEY_PATH", audit_keys.key_path(), audit_keys.load_audit_key,
             audit_keys.AuditKeyError)):
        if not path.exists():
            problems.append(f"no {what} at {path} ({setting})")
            continue
        try:
            load(path)
        except unusable as error:
            problems.append(str(error))
    return problems


def refuse_without_keys() -> None:
    """ImproperlyConfigured naming every missing or unusable key when DEBUG is off; nothing with DEBUG on."""
    if settings.DEBUG:
        return
    problems = key_problems()
    if problems:
        raise ImproperlyConfigured(f"With DEBUG off the app does not serve or work without its signing keys, and "
                                   f"makes none: {'; '.join(problems)}. Create them with `{ENSURE}` (or set "
                                   "DEBUG=1 for development)")

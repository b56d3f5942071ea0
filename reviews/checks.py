"""System checks of the environment the app serves from (DESIGN §9).

SECRET_KEY may be left unset for the commands that need no secret
(verify_bundle, verify_audit, issue_token, signing_key: they skip system
checks); everything that runs the checks, and serving itself
(config/wsgi.py), refuses to go on without one, in one line.
"""
from django.conf import settings
from django.core.checks import Error, register

NO_SECRET = "Environment variable SECRET_KEY is required (set it, or DEBUG=1 for development)"


def secret_key_missing() -> bool:
    # settings.SECRET_KEY itself raises when empty; the wrapped settings say so without raising.
    return not getattr(settings._wrapped, "SECRET_KEY", "")


@register()
def secret_key_is_set(app_configs, **kwargs):
    if secret_key_missing():
        return [Error(NO_SECRET, id="reviews.E001")]
    return []

import os

from django.core.exceptions import ImproperlyConfigured
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from reviews.checks import NO_SECRET, secret_key_missing  # noqa: E402 — needs the apps loaded above

if secret_key_missing():
    # Serving never runs without a secret (sessions, CSRF and password resets sign with it).
    raise ImproperlyConfigured(NO_SECRET)

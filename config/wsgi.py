import os

from django.core.exceptions import ImproperlyConfigured
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from reviews.checks import NO_SECRET, secret_key_missing  # noqa: E402 — needs the apps loaded above

if secret_key_missing():
    # Serving never runs without a secret (sessions, CSRF and password resets sign with it).
    raise ImproperlyConfigured(NO_SECRET)

from config.keys import refuse_without_keys  # noqa: E402

refuse_without_keys()  # nor, with DEBUG off, without the keys that sign results and audit events

# What the app holds from its start (about 200,000 objects: modules, URL patterns, templates' code) lives
# as long as the worker. Frozen, the collector's full passes no longer walk it: in the upload profile one
# such pass took 150 ms (a worker stalled for that long) every few hundred requests. The URL patterns are
# read first so that the views' modules are imported here, not on the first request.
import gc  # noqa: E402

from django.urls import get_resolver  # noqa: E402

get_resolver().url_patterns  # noqa: B018 — imports every view
gc.collect()
gc.freeze()

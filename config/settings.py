"""One settings module, read from the environment through strict helpers.

With DEBUG=1 and no DATABASE_URL the app runs on SQLite under var/; without
REDIS_URL Celery tasks run in process (eager). Both are for a newcomer's first
run: with DEBUG off (production) a missing DATABASE_URL or REDIS_URL is a
start-up error, never a fallback (DESIGN §10).
"""
from pathlib import Path
import os

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None or value == "":
        if default is None:
            raise ImproperlyConfigured(f"Environment variable {name} is required")
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None


def env_required(name: str, development_default: str) -> str:
    """The variable; when it is unset, the development default under DEBUG and a start-up error without."""
    value = os.environ.get(name, "")
    if value or DEBUG:
        return value or development_default
    raise ImproperlyConfigured(f"Environment variable {name} is required (set it, or DEBUG=1 for development)")


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
# Required to serve and for every command that runs system checks (reviews/checks.py says so in one
# line); left empty here so that commands needing no secret (verify_bundle, verify_audit, issue_token,
# signing_key) run without one. Django itself refuses an empty SECRET_KEY wherever it is used.
SECRET_KEY = env_str("SECRET_KEY", "insecure-development-key-only-for-debug" if DEBUG else "")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "reviews",
    "records",
    # Before reconcile: its verify_bundle (aas_verify) is the one `manage.py verify_bundle` runs.
    "reconcile",
    "results",
    "events",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.security.ContentSecurityPolicyMiddleware",
    "config.security.RefuseNulBytesMiddleware",
    "config.security.DatabaseOutageMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.security.AppNotFoundPageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))
DATABASES = {
    "default": dj_database_url.parse(
        env_required("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("CONN_MAX_AGE", 0),
        # A persistent connection the server dropped (restart, failover, idle kill) is replaced at
        # the next request instead of failing it (tests/reliability/test_database_connection.py); under
        # the pool, the pool checks each connection it hands out.
        conn_health_checks=env_bool("CONN_HEALTH_CHECKS", True),
    )
}
# PostgreSQL connections come from psycopg's pool (DESIGN §10): at most DB_POOL_MAX_SIZE per process
# (gevent workers run many requests per process; without a pool each would hold a connection of its
# own), DB_POOL_MIN_SIZE kept open, and a request waits at most DB_POOL_TIMEOUT seconds for one, then
# answers 503 (config/security.py). On by default with DEBUG off; 0 turns it off. The README's
# production recipe sizes it against max_connections (tests/reliability/test_pool_under_load.py).
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 0 if DEBUG else 4)
if DB_POOL_MAX_SIZE > 0 and DATABASES["default"]["ENGINE"].endswith("postgresql"):
    if DATABASES["default"]["CONN_MAX_AGE"] != 0:
        raise ImproperlyConfigured(f"CONN_MAX_AGE={DATABASES['default']['CONN_MAX_AGE']} does not go with the "
                                   f"connection pool (DB_POOL_MAX_SIZE={DB_POOL_MAX_SIZE}): the pool keeps the "
                                   "connections; set CONN_MAX_AGE=0, or DB_POOL_MAX_SIZE=0 for no pool")
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(env_int("DB_POOL_MIN_SIZE", 1), DB_POOL_MAX_SIZE),
        "max_size": DB_POOL_MAX_SIZE,
        "timeout": env_int("DB_POOL_TIMEOUT", 5),
    }
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # IMMEDIATE: a transaction takes SQLite's write lock when it begins, so two that read and then write
    # (a reviewer's pass laid over the rows, reconcile/passes/world.py) queue instead of each failing
    # "database is locked" on the other's read lock.
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 30, "transaction_mode": "IMMEDIATE"})
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]
# Django's backend behind the failed-login limits, for every login path (admin's too).
AUTHENTICATION_BACKENDS = ["reviews.login_throttle.ThrottledModelBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "runs"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

# The Ed25519 key that signs final results (results/signing.py): a PEM file only `manage.py signing_key`
# writes, mode 0600; its public keys, retired ones too, are published beside it in public/ (or
# SIGNING_PUBLIC_KEYS_DIR) and listed by GET /api/keys/.
SIGNING_KEY_PATH = env_str("SIGNING_KEY_PATH", str(VAR_DIR / "signing" / "ed25519.pem"))
SIGNING_PUBLIC_KEYS_DIR = env_str("SIGNING_PUBLIC_KEYS_DIR", "")
# The audit key (reviews/audit_keys.py) signs every audit event; a file beside the result key, never in the database.
AUDIT_KEY_PATH = env_str("AUDIT_KEY_PATH", str(Path(SIGNING_KEY_PATH).parent / "audit-ed25519.pem"))
# The seal of the history written before signatures (reviews/audit_seal.py); empty: audit-seal.json beside the audit key.
AUDIT_SEAL_PATH = env_str("AUDIT_SEAL_PATH", "")

# Uploads: reports are UTF-8 text, 5 MB by default; bundles may be larger.
MAX_UPLOAD_BYTES = env_int("MAX_UPLOAD_BYTES", 5 * 1024 * 1024)
MAX_BUNDLE_BYTES = env_int("MAX_BUNDLE_BYTES", 50 * 1024 * 1024)
# Source snapshots (the reviewed commit's files): uncompressed bytes and file count of one archive.
MAX_SOURCE_BYTES = env_int("MAX_SOURCE_BYTES", 100 * 1024 * 1024)
MAX_SOURCE_FILES = env_int("MAX_SOURCE_FILES", 20_000)
# Django refuses bodies over this before our code sees them; leave room for
# a JSON-encoded report at the limit (escaping can double it).
DATA_UPLOAD_MAX_MEMORY_SIZE = 3 * MAX_UPLOAD_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = MAX_UPLOAD_BYTES

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "reviews.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "reviews.pagination.Pagination",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "reviews.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # JSON nested too deep for Python's parser is a 400, not a RecursionError (reviews/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "reviews.parsers.JSONParser",
        "reviews.parsers.FormParser",
        "reviews.parsers.MultiPartParser",
    ],
    # Per token (or user), and per address for the few endpoints open without one (reviews/throttles.py).
    "DEFAULT_THROTTLE_CLASSES": ["reviews.throttles.TokenRateThrottle", "reviews.throttles.AnonymousRateThrottle"],
    # How many proxies stand before the app: the anonymous rate counts the address that many hops back in
    # X-Forwarded-For (0: REMOTE_ADDR). Left unset, DRF would count the whole header, which a client writes.
    "NUM_PROXIES": env_int("API_NUM_PROXIES", 0),
}
# Request rates ("N/second|minute|hour|day"), counted in the "limits" cache (below), shared by every
# process when REDIS_URL is set.
API_THROTTLE_RATE = env_str("API_THROTTLE_RATE", "6000/minute")
API_ANON_THROTTLE_RATE = env_str("API_ANON_THROTTLE_RATE", "600/minute")
# Failed logins: after this many for one user name (five times as many for one address) within the
# window, every login path refuses and the login form answers 429 (reviews/login_throttle.py);
# counted in the "limits" cache, like the request rates.
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
LOGIN_FAILURE_WINDOW_SECONDS = env_int("LOGIN_FAILURE_WINDOW_SECONDS", 900)
# Where the client address of a login is read, to count failures per address too: "" (per user name
# only, the default), REMOTE_ADDR (clients connect directly) or a trusted proxy's header (HTTP_X_REAL_IP).
LOGIN_CLIENT_ADDRESS = env_str("LOGIN_CLIENT_ADDRESS", "")
SPECTACULAR_SETTINGS = {
    "TITLE": "Analysis review and reconciliation API",
    "DESCRIPTION": "Runs, member reports, records, mappings, decisions, results and the audit trail.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Multipart and JSON request bodies as separate components (a client needs both shapes).
    "COMPONENT_SPLIT_REQUEST": True,
    # The error shape on every operation; integer ranges of PostgreSQL (reviews/schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "reviews.schema.postprocess",
    ],
    # Swagger UI's files come from our own static files, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Two models call their choice field `state`: name each enum after what it describes.
    "ENUM_NAME_OVERRIDES": {
        "CanonicalRecordStateEnum": "reconcile.models.CanonicalRecord.State",
        "DecisionStateEnum": "reconcile.models.Decidable.State",
        "RoleEnum": "records.models.Role",
        "RunStatusEnum": "reviews.models.Run.Status",
        "MemberVersionStatusEnum": "records.models.MemberVersion.Status",
    },
}

# Celery: Redis when REDIS_URL is set, otherwise (DEBUG=1 only) tasks run in process.
REDIS_URL = env_required("REDIS_URL", "")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A broker that is down, full or read-only is waited for, never given up on (config/broker.py; DESIGN §10):
# retried forever, with Celery's backoff (2 s more per try, at most 30 s apart).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_TRANSPORT = "config.broker:Transport" if REDIS_URL else None
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)}
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "aas")
# A member stuck in received/parsing longer than this is re-queued by the sweep.
PIPELINE_STUCK_AFTER_SECONDS = env_int("PIPELINE_STUCK_AFTER_SECONDS", 300)
PIPELINE_SWEEP_EVERY_SECONDS = env_int("PIPELINE_SWEEP_EVERY_SECONDS", 60)
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-members": {
        "task": "records.tasks.sweep_stuck_members",
        "schedule": PIPELINE_SWEEP_EVERY_SECONDS,
    },
    "sweep-pending-consensus": {
        "task": "reconcile.tasks.sweep_pending_consensus",
        "schedule": PIPELINE_SWEEP_EVERY_SECONDS,
    },
    "sweep-unfinished-finalizations": {
        "task": "results.tasks.sweep_unfinished_finalizations",
        "schedule": PIPELINE_SWEEP_EVERY_SECONDS,
    },
    "sweep-webhook-deliveries": {
        "task": "events.tasks.sweep_webhook_deliveries",
        "schedule": PIPELINE_SWEEP_EVERY_SECONDS,
    },
}

# Webhooks (DESIGN.md §9, §10): https to public addresses only unless WEBHOOK_ALLOW_PRIVATE=1 (tests,
# local set-ups); attempt n+1 waits base × 4^(n-1); a subscription whose attempts fail this many
# times in a row is disabled. WEBHOOK_SECRET_KEY (default: SECRET_KEY) encrypts the signing secrets.
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", False)
WEBHOOK_RETRY_BASE_MS = env_int("WEBHOOK_RETRY_BASE_MS", 30_000)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 5)
WEBHOOK_DISABLE_AFTER_FAILURES = env_int("WEBHOOK_DISABLE_AFTER_FAILURES", 15)
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 10)
WEBHOOK_STUCK_AFTER_SECONDS = env_int("WEBHOOK_STUCK_AFTER_SECONDS", 300)
WEBHOOK_SECRET_KEY = os.environ.get("WEBHOOK_SECRET_KEY", "")

# Caches. "limits" holds the API request counts and the failed-login counts (reviews/limits.py).
# With REDIS_URL it is Redis, so every worker process and host counts against one budget: keys
# start "aas-limits:" in REDIS_URL's database, beside Celery's queues (so never clear() this
# cache: that is FLUSHDB). Short socket timeouts: a Redis that stops answering costs a request
# about half a second, then the process counts in its own memory for a while (reviews/limits.py).
# Without REDIS_URL (the single-process `make run`), the process's memory, with room for more keys
# than the 300 Django keeps by default (a flood of user names must not evict the counts that
# matter). Nothing else uses a cache.
if REDIS_URL:
    LIMITS_CACHE = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "aas-limits",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    }
else:
    LIMITS_CACHE = {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "aas-limits",
        "OPTIONS": {"MAX_ENTRIES": 100_000},
    }
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "limits": LIMITS_CACHE,
}

SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
# Only a proxy the operator put in front says how the client came; without one (API_NUM_PROXIES=0)
# X-Forwarded-Proto is the client's own word and a plain request stays plain.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if REST_FRAMEWORK["NUM_PROXIES"] >= 1 else None
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# The CSRF token reaches htmx through the page (<body hx-headers>), never through script reading the cookie.
CSRF_COOKIE_HTTPONLY = True
# Content-Security-Policy: see config/security.py (Django has none built in before 6.0).

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}

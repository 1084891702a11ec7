"""relaybay settings, read from the environment.

Embedded default: SQLite in ./data (WAL) and the in-memory channel layer, one daphne
process. Scale-out: DATABASE_URL=postgres://... and REDIS_URL=redis://...
"""

import os
import secrets
import tempfile
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from core.limits import Limits

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name, default=False):
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def envint(name, default):
    return int(os.environ.get(name, default))


DATA_DIR = Path(os.environ.get("RELAYBAY_DATA", BASE_DIR / "data"))
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _secret_from_file(name, env_name):
    """An env value wins; otherwise a value kept in the data folder, made on first use."""
    if os.environ.get(env_name):
        return os.environ[env_name]
    path = DATA_DIR / name
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32))
    return path.read_text().strip()


SECRET_KEY = _secret_from_file("secret-key", "DJANGO_SECRET_KEY")
# Two credentials (docs/rules.md §6): the agents' token, which every session's hook and MCP config
# holds, and the owner's, for the owner's scripts and relaybay's own commands, kept only here.
RELAYBAY_TOKEN = _secret_from_file("token", "RELAYBAY_TOKEN")
RELAYBAY_OWNER_TOKEN = _secret_from_file("owner-token", "RELAYBAY_OWNER_TOKEN")
if RELAYBAY_OWNER_TOKEN == RELAYBAY_TOKEN:
    raise ImproperlyConfigured(
        "RELAYBAY_OWNER_TOKEN is the agents' token (RELAYBAY_TOKEN): every session could act as the owner. "
        "Give the owner a token of its own, or unset RELAYBAY_OWNER_TOKEN to use data/owner-token."
    )
RELAYBAY_HOST = os.environ.get("RELAYBAY_HOST", "127.0.0.1")
RELAYBAY_PORT = envint("RELAYBAY_PORT", 8000)
# Where `make run` serves, recorded in the data folder (manage.py setup_owner) so every command
# reaches that port without RELAYBAY_URL.
RELAYBAY_ADDRESS_FILE = DATA_DIR / "address"


def _recorded_address():
    try:
        return RELAYBAY_ADDRESS_FILE.read_text().strip()
    except OSError:
        return ""


RELAYBAY_URL = os.environ.get("RELAYBAY_URL") or _recorded_address() or f"http://{RELAYBAY_HOST}:{RELAYBAY_PORT}"

# Hook payload cap: a larger body is refused with 413; big tool responses below it are
# truncated in storage instead.
RELAYBAY_MAX_PAYLOAD = envint("RELAYBAY_MAX_PAYLOAD", 2 * 1024 * 1024)
RELAYBAY_STORED_FIELD_CHARS = envint("RELAYBAY_STORED_FIELD_CHARS", 4000)
# Longest single long poll on /api/hooks/wait; the hook client loops polls up to its own bound.
RELAYBAY_MAX_WAIT = envint("RELAYBAY_MAX_WAIT", 60)

# Messaging for a fleet (docs/rules.md §4.8): the limits every send, broadcast and wake-up obeys.
# The defaults of the four the MCP tools' descriptions quote are in core/limits.py, where the
# stdio MCP server, which runs without Django, finds them too.
RELAYBAY_SENDS_PER_MINUTE = envint("RELAYBAY_SENDS_PER_MINUTE", Limits.sends_per_minute)
RELAYBAY_DEDUPE_SECONDS = envint("RELAYBAY_DEDUPE_SECONDS", Limits.dedupe_seconds)
RELAYBAY_REQUEST_ID_HOURS = envint("RELAYBAY_REQUEST_ID_HOURS", Limits.request_id_hours)
RELAYBAY_UNREAD_CAP = envint("RELAYBAY_UNREAD_CAP", Limits.unread_cap)
RELAYBAY_HOLD_HOURS = envint("RELAYBAY_HOLD_HOURS", 72)
RELAYBAY_WAKE_CAP = envint("RELAYBAY_WAKE_CAP", 3)
# An item handed to a hook client that confirms what it prints, not confirmed this many seconds
# later, is offered again by the session's next hook (docs/rules.md §2.6). Longer than the
# client's own timeout (RELAYBAY_TIMEOUT, 10 s), so an answer still on its way is not offered twice.
RELAYBAY_REOFFER_SECONDS = envint("RELAYBAY_REOFFER_SECONDS", 30)
# How long a session's request waits on the owner before it expires (docs/rules.md §8).
RELAYBAY_APPROVAL_SECONDS = envint("RELAYBAY_APPROVAL_SECONDS", 3600)
# Rows made for sender names no session proves (kind mcp, docs/rules.md §4.2): past this many,
# a send under yet another new unproven name is refused.
RELAYBAY_UNPROVEN_NAMES = envint("RELAYBAY_UNPROVEN_NAMES", 200)
# Edit collisions (docs/rules.md §7.1): a session about to edit a file another live session edited
# in the same working tree within this many minutes is told so, and so is the other.
RELAYBAY_COLLISION_MINUTES = envint("RELAYBAY_COLLISION_MINUTES", 30)

DEBUG = envbool("DJANGO_DEBUG", False)


def served_hosts(extra, bind_host):
    """The host names relaybay answers to on every path, the board, /api/ and /mcp alike
    (core/hosts.py): loopback, the address it binds when that is one address, and the names
    RELAYBAY_ALLOWED_HOSTS adds (comma-separated; a reverse proxy's name, docs/scale-out.md)."""
    names = ["127.0.0.1", "localhost", "[::1]"]
    if bind_host not in {"", "0.0.0.0", "::"}:
        names.append(f"[{bind_host}]" if ":" in bind_host and not bind_host.startswith("[") else bind_host)
    names += [name.strip() for name in extra.split(",") if name.strip()]
    return list(dict.fromkeys(names))


ALLOWED_HOSTS = served_hosts(os.environ.get("RELAYBAY_ALLOWED_HOSTS", ""), RELAYBAY_HOST)
# A reverse proxy in front terminates TLS (relaybay/serve.py, docs/scale-out.md): it says so
# with X-Forwarded-Proto, so the board's login form is checked against its https:// origin.
RELAYBAY_BEHIND_TLS_PROXY = envbool("RELAYBAY_BEHIND_TLS_PROXY")
if RELAYBAY_BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    # django-ninja's templates and static files: /api/docs loads Swagger UI from relaybay,
    # never from a CDN.
    "ninja",
    "channels",
    "core",
    "machines",
    "sessions_app",
    "collisions",
    "approvals",
    "messaging",
    "mcp_server",
    "board",
    "install",
]

# The board's chain. Under daphne neither the JSON API nor the MCP server runs it: relaybay/asgi.py
# serves /api/ (all but its docs pages) with Django's handler minus this chain (APIHandler), since
# a bearer-token API has no use for sessions, CSRF, login or these headers and each step would cost
# a thread hop on every hook; /mcp is the MCP SDK's own ASGI app. A middleware added here reaches
# the board alone. Behaviour for every API route goes in core/api.py (the NinjaAPI's auth, parser
# and exception handlers), for /mcp in mcp_server/http.py (MCPApp); relaybay/asgi.py checks the
# Host of both against ALLOWED_HOSTS first (core/hosts.py), as CommonMiddleware does here. The
# WSGI layout does run /api/ through this chain, so nothing here may change an API answer.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "relaybay.urls"
ASGI_APPLICATION = "relaybay.asgi.application"
WSGI_APPLICATION = "relaybay.wsgi.application"

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

DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0, conn_health_checks=True)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Under ASGI each request's sync code runs on a thread of its own, so per-thread
        # persistent connections pile up until PostgreSQL refuses clients: a bounded pool
        # per process instead, each connection checked on checkout. While the database is
        # down a request waits at most RELAYBAY_DB_POOL_TIMEOUT seconds for a connection, then
        # gets a 503 (the hook client spools it); reconnect attempts give up as quickly, so
        # the first request after the database is back connects at once.
        pool_timeout = float(os.environ.get("RELAYBAY_DB_POOL_TIMEOUT", 5))
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": envint("RELAYBAY_DB_POOL_SIZE", 10),
            "timeout": pool_timeout,
            "reconnect_timeout": pool_timeout,
        }
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": DATA_DIR / "relaybay.sqlite3"}}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The same safeguards however SQLite is chosen (the default, or DATABASE_URL=sqlite:///…):
    # WAL lets readers run beside the writer; IMMEDIATE takes the write lock at BEGIN so two
    # writers queue on the busy timeout instead of failing with "database is locked" when a
    # read transaction tries to upgrade. Temporary storage in memory: a statement that writes
    # several rows inside a transaction (a broadcast's messages) keeps a statement journal of
    # the pages it changes, and past 64 KiB SQLite would move it into a file it creates and
    # deletes in /var/tmp (every broadcast in the test process, one in 30 in the bench's server).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY;",
        }
    )
    # Persistent: the API's database thread (core/dbthreads.py) keeps its connection from
    # one request to the next instead of opening one per request (0.4 ms). Other threads'
    # connections close when their thread ends.
    DATABASES["default"]["CONN_MAX_AGE"] = None
    # A file (not :memory:) so threads in tests share it as servers do; one per test run.
    DATABASES["default"].setdefault("TEST", {})["NAME"] = Path(tempfile.gettempdir()) / f"relaybay-test-{os.getpid()}.sqlite3"
else:
    # One test database per test process (pytest-django adds the xdist worker's suffix), so
    # two runs on one shared PostgreSQL never clobber each other's "test_<name>".
    DATABASES["default"].setdefault("TEST", {}).setdefault("NAME", f"test_relaybay_{os.getpid()}")

# Under daphne the JSON API's sync code runs on this many long-lived threads per process
# (core/dbthreads.py): one on SQLite, which takes one writer at a time; a few on
# PostgreSQL, within the pool.
RELAYBAY_DB_THREADS = envint(
    "RELAYBAY_DB_THREADS", 1 if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3" else 4
)

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # redis-py 8 reads with a 5 s socket timeout by default, as long as
                # channels_redis's blocking pop waits for a message: every idle listener (a
                # board page, a wake-up waiter) would fail with "Timeout reading" after 5 s.
                # Reads may block longer than that pop; connecting may not.
                "hosts": [{"address": REDIS_URL, "socket_timeout": 15, "socket_connect_timeout": 5}],
                # Several relaybay instances may share one Redis: each with its own prefix.
                "prefix": os.environ.get("RELAYBAY_REDIS_PREFIX", "asgi"),
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("RELAYBAY_LOG_LEVEL", "WARNING")},
}

"""A real relaybay for tests that talk to it over HTTP: a fresh data folder, `migrate`, and one
daphne process on a free loopback port, as `make run` would start it.

    url, token, process = start_relaybay(tmp_path)
    ...
    stop_relaybay(process)

or the fixture `live_relaybay` (import it into a test module), which also gives small helpers
for posting hook events and calling the API.

The server runs on the test run's configuration: on the embedded default (SQLite in its data
folder, in-memory channel layer) unless pytest itself runs with DATABASE_URL / REDIS_URL (the
scale-out pass of `make test`); then each server gets a fresh database of its own on that
PostgreSQL and a channel prefix of its own on that Redis, written to `<data>/server-env.json`
so that `server_env` (restarts, manage.py commands) finds the same ones. `scale_out_env()`
gives such a set explicitly, for several processes that must share one database and Redis.
"""

import atexit
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
MANAGE = REPO_ROOT / "manage.py"
# Configuration a developer's shell may hold that would point the test server at shared
# services; a test that wants them passes them to start_relaybay explicitly.
NOT_INHERITED = ("DATABASE_URL", "REDIS_URL", "RELAYBAY_URL", "RELAYBAY_HOST", "RELAYBAY_PORT", "DJANGO_SECRET_KEY")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The test run's own configuration (the scale-out pass sets both); live servers never use its
# database itself, only fresh ones on the same PostgreSQL server.
RUN_DATABASE_URL = os.environ.get("DATABASE_URL", "")
RUN_REDIS_URL = os.environ.get("REDIS_URL", "")
SERVER_ENV_FILE = "server-env.json"
_created_databases = []


def _admin_url(database_url):
    """The same PostgreSQL server's maintenance database, for CREATE/DROP DATABASE."""
    parts = urllib.parse.urlsplit(database_url)
    return urllib.parse.urlunsplit(("postgresql", parts.netloc, "/postgres", "", ""))


SERVICES_NEEDED = "PostgreSQL and Redis on 127.0.0.1 are needed for the scale-out configuration"


def fresh_database(database_url=None):
    """CREATE a new, empty database on the PostgreSQL server of `database_url` (default: the
    test run's) and return its URL. Dropped when the test process exits."""
    import psycopg

    source = database_url or RUN_DATABASE_URL
    if not source:
        raise RuntimeError("fresh_database needs a PostgreSQL URL: run with DATABASE_URL=postgres://...")
    name = "relaybay_live_" + secrets.token_hex(5)
    admin = _admin_url(source)
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"CREATE DATABASE {name}")
    except psycopg.OperationalError as error:
        pytest.fail(f"{SERVICES_NEEDED}: cannot create a database on {admin}: {error}", pytrace=False)
    _created_databases.append((admin, name))
    parts = urllib.parse.urlsplit(source)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))


def drop_database(database_url):
    import psycopg

    name = urllib.parse.urlsplit(database_url).path.lstrip("/")
    with psycopg.connect(_admin_url(database_url), autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@atexit.register
def _drop_created_databases():
    for admin, name in _created_databases:
        try:
            import psycopg

            with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        except Exception:  # noqa: BLE001 - best effort at exit; the server may be gone
            pass


def scale_out_env(database_url=None, redis_url=None):
    """Environment for servers that share one fresh PostgreSQL database and one Redis channel
    prefix: the scale-out configuration. Defaults to the test run's services, else the ones on
    127.0.0.1 that this machine kind runs (make test checks they answer)."""
    database_url = database_url or RUN_DATABASE_URL or "postgresql://postgres@127.0.0.1:5432/test"
    redis_url = redis_url or RUN_REDIS_URL or "redis://127.0.0.1:6379/1"
    check_redis(redis_url)
    return {
        "DATABASE_URL": fresh_database(database_url),
        "REDIS_URL": redis_url,
        "RELAYBAY_REDIS_PREFIX": "relaybay-live-" + secrets.token_hex(5),
    }


def check_redis(redis_url):
    import redis

    try:
        redis.Redis.from_url(redis_url, socket_timeout=3, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        pytest.fail(f"{SERVICES_NEEDED}: Redis at {redis_url} does not answer: {error}", pytrace=False)


def _run_config_env():
    """What a live server gets from the test run's configuration (empty on the embedded default)."""
    env = {}
    if RUN_DATABASE_URL:
        env["DATABASE_URL"] = fresh_database()
    if RUN_REDIS_URL:
        env["REDIS_URL"] = RUN_REDIS_URL
        env["RELAYBAY_REDIS_PREFIX"] = "relaybay-live-" + secrets.token_hex(5)
    return env


def server_env(data_dir, token, **env):
    base = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    stored = Path(data_dir) / SERVER_ENV_FILE
    chosen = json.loads(stored.read_text()) if stored.exists() else {}
    return {
        **base,
        "DJANGO_SETTINGS_MODULE": "relaybay.settings",
        "RELAYBAY_DATA": str(data_dir),
        "RELAYBAY_TOKEN": token,
        "PYTHONUNBUFFERED": "1",
        **chosen,
        **env,
    }


def _server_command(server, port):
    if server == "gunicorn":
        # The JSON API through Django's WSGI handler: the scale-out layout of docs/scale-out.md.
        return [sys.executable, "-m", "gunicorn", "-w", "2", "-b", f"127.0.0.1:{port}", "relaybay.wsgi:application"]
    daphne = Path(sys.executable).parent / "daphne"
    launcher = [str(daphne)] if daphne.exists() else [sys.executable, "-m", "daphne"]
    return [*launcher, "-b", "127.0.0.1", "-p", str(port), "relaybay.asgi:application"]


def _answers(url, token):
    request = urllib.request.Request(f"{url}/api/sessions_list", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start_relaybay(tmp_path, *, token=None, ready_timeout=30.0, server="daphne", **env):
    """Migrate a fresh data folder under `tmp_path` and start daphne (or, with
    server="gunicorn", the WSGI layout's API server) on it.

    Returns (url, token, process); `env` adds or overrides server environment variables
    (DATABASE_URL, REDIS_URL, RELAYBAY_MAX_WAIT, ...). Daphne's output goes to
    `<tmp_path>/relaybay-data/daphne.log`, quoted in the error when it does not come up.
    """
    data_dir = Path(tmp_path) / "relaybay-data"
    data_dir.mkdir(parents=True, exist_ok=True)
    token = token or "live-" + secrets.token_urlsafe(16)
    stored = data_dir / SERVER_ENV_FILE
    if not stored.exists():
        # The services this data folder runs on, kept for restarts and manage.py commands.
        chosen = {k: v for k, v in env.items() if k in ("DATABASE_URL", "REDIS_URL", "RELAYBAY_REDIS_PREFIX")}
        if "DATABASE_URL" not in env and "REDIS_URL" not in env:
            chosen = _run_config_env()
        stored.write_text(json.dumps(chosen))
    environment = server_env(data_dir, token, **env)
    migrate = subprocess.run(
        [sys.executable, str(MANAGE), "migrate", "--noinput"], cwd=REPO_ROOT, env=environment, capture_output=True, text=True
    )
    if migrate.returncode != 0:
        raise RuntimeError(f"manage.py migrate failed:\n{migrate.stderr[-3000:]}")
    log_path = data_dir / "daphne.log"
    # A free port can be taken between our probe and daphne's bind: try a few.
    for _attempt in range(3):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                _server_command(server, port), cwd=REPO_ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + ready_timeout
        while process.poll() is None and time.monotonic() < deadline:
            if _answers(url, token):
                process.relaybay_url = url
                process.relaybay_data = data_dir
                process.relaybay_env = environment
                return url, token, process
            time.sleep(0.1)
        stop_relaybay(process)
    raise RuntimeError(f"relaybay did not come up; daphne log:\n{log_path.read_text()[-3000:]}")


def stop_relaybay(process, timeout=10.0):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class LiveRelaybay:
    """A running relaybay and the calls tests make to it, with the token."""

    def __init__(self, url, token, process):
        self.url = url
        self.token = token
        self.process = process

    def call(self, method, path, data=None, headers=None, **params):
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        body = json.dumps(data).encode() if data is not None else None
        request = urllib.request.Request(
            f"{self.url}/api{path}{query}",
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def post(self, path, data, headers=None):
        return self.call("POST", path, data, headers)

    def get(self, path, **params):
        return self.call("GET", path, **params)

    def hook(self, event, session_id, headers=None, **fields):
        """Post one hook event as Claude Code would; returns the hook answer. `headers` adds
        what the hook client sends beside the payload (X-Relaybay-Process)."""
        payload = {"hook_event_name": event, "session_id": session_id, "cwd": fields.pop("cwd", "/work/proj"), **fields}
        status, answer = self.post("/hooks", payload, headers)
        assert status == 200, answer
        return answer

    def start_session(self, hook_session, name=None, **fields):
        """A Claude Code session starting; with `name`, as if RELAYBAY_SESSION named it (exact link)."""
        if name is not None:
            fields["relaybay_session"] = name
        return self.hook("SessionStart", hook_session, source="startup", **fields)


@pytest.fixture(scope="module")
def live_relaybay(tmp_path_factory):
    """One relaybay per test module (startup and migrate cost a few seconds)."""
    url, token, process = start_relaybay(tmp_path_factory.mktemp("relaybay"))
    try:
        yield LiveRelaybay(url, token, process)
    finally:
        stop_relaybay(process)


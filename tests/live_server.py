"""A real relaybay for tests that talk to it over HTTP: tests/devserver.py's server (a fresh
data folder, `migrate`, one daphne process on loopback, as `make run` would start it), on the
test run's configuration.

    url, token, process = start_relaybay(tmp_path)
    ...
    stop_relaybay(process)

or the fixture `live_relaybay` (import it into a test module), which also gives small helpers
for posting hook events and calling the API.

On the embedded default the server keeps SQLite in its data folder and an in-memory channel
layer; when pytest itself runs with DATABASE_URL / REDIS_URL (the scale-out pass of `make
test`) each server gets a fresh database of its own on that PostgreSQL and a channel prefix of
its own on that Redis, kept with its data folder so that restarts and manage.py commands
(`server_env`) find the same ones. `scale_out_env()` gives such a set explicitly, for several
processes that must share one database and Redis.
"""

import json
import os
import secrets
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests import devserver
from tests.devserver import MANAGE, NOT_INHERITED, REPO_ROOT, drop_database, free_port, server_env  # noqa: F401

# The test run's own configuration (the scale-out pass sets both); live servers never use its
# database itself, only fresh ones on the same PostgreSQL server.
RUN_DATABASE_URL = os.environ.get("DATABASE_URL", "")
RUN_REDIS_URL = os.environ.get("REDIS_URL", "")


def _services(call, *args):
    """A missing service fails the test with the reason, never skips it."""
    try:
        return call(*args)
    except devserver.ServicesUnavailable as error:
        pytest.fail(str(error), pytrace=False)


def fresh_database(database_url=None):
    """A new, empty database on the PostgreSQL server of `database_url` (default: the test
    run's); dropped when the test process exits."""
    source = database_url or RUN_DATABASE_URL
    if not source:
        raise RuntimeError("fresh_database needs a PostgreSQL URL: run with DATABASE_URL=postgres://...")
    return _services(devserver.fresh_database, source)


def scale_out_env(database_url=None, redis_url=None):
    """One fresh PostgreSQL database and one Redis prefix for servers to share: the test run's
    services, else the ones on 127.0.0.1 that this machine kind runs."""
    return _services(devserver.scale_out_env, database_url or RUN_DATABASE_URL or None, redis_url or RUN_REDIS_URL or None)


def _run_config_env():
    """What a live server gets from the test run's configuration (empty on the embedded default)."""
    env = {}
    if RUN_DATABASE_URL:
        env["DATABASE_URL"] = fresh_database()
    if RUN_REDIS_URL:
        env["REDIS_URL"] = RUN_REDIS_URL
        env["RELAYBAY_REDIS_PREFIX"] = "relaybay-live-" + secrets.token_hex(5)
    return env


def start_relaybay(tmp_path, *, token=None, ready_timeout=30.0, server="daphne", **env):
    """Migrate a fresh data folder under `tmp_path` and start daphne (or, with
    server="gunicorn", the WSGI layout's API server with 2 workers) on it.

    Returns (url, token, process); `env` adds or overrides server environment variables
    (DATABASE_URL, REDIS_URL, RELAYBAY_MAX_WAIT, ...). The server's output goes to
    `<tmp_path>/relaybay-data/server.log`, quoted in the error when it does not come up.
    """
    data_dir = Path(tmp_path) / "relaybay-data"
    if not (data_dir / devserver.SERVER_ENV_FILE).exists() and "DATABASE_URL" not in env and "REDIS_URL" not in env:
        env = {**_run_config_env(), **env}
    running = devserver.Server(data_dir, token=token, env=env, kind=server, processes=2 if server == "gunicorn" else 1)
    running.start(ready_timeout=ready_timeout)
    return running.url, running.token, _process_of(running)


def _process_of(running):
    """The server's (first) process, carrying what tests read from it."""
    process = running.procs[0]
    process.relaybay_server = running
    process.relaybay_url = running.url
    process.relaybay_data = running.data_dir
    process.relaybay_env = running.env
    return process


def restart_relaybay(process, ready_timeout=30.0):
    """Start the server of `process` again (after a stop or a kill -9) on the same data folder,
    services, token and port; its new process."""
    running = process.relaybay_server
    running.restart(ready_timeout=ready_timeout)
    return _process_of(running)


def stop_relaybay(process, timeout=10.0):
    process.relaybay_server.stop(timeout)


class LiveRelaybay:
    """A running relaybay and the calls tests make to it, with the agents' token (`token`
    names another: `owner_token` for the owner's routes)."""

    def __init__(self, url, token, process):
        self.url = url
        self.token = token
        self.process = process

    @property
    def owner_token(self):
        return self.process.relaybay_server.owner_token

    def call(self, method, path, data=None, headers=None, token=None, **params):
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        body = json.dumps(data).encode() if data is not None else None
        request = urllib.request.Request(
            f"{self.url}/api{path}{query}",
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {token or self.token}", "Content-Type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def post(self, path, data, headers=None, token=None):
        return self.call("POST", path, data, headers, token)

    def get(self, path, token=None, **params):
        return self.call("GET", path, token=token, **params)

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


"""A real relaybay for tests that talk to it over HTTP: a fresh data folder, `migrate`, and one
daphne process on a free loopback port, as `make run` would start it.

    url, token, process = start_relaybay(tmp_path)
    ...
    stop_relaybay(process)

or the fixture `live_relaybay` (import it into a test module), which also gives small helpers
for posting hook events and calling the API.
"""

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


def server_env(data_dir, token, **env):
    base = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    return {
        **base,
        "DJANGO_SETTINGS_MODULE": "relaybay.settings",
        "RELAYBAY_DATA": str(data_dir),
        "RELAYBAY_TOKEN": token,
        "PYTHONUNBUFFERED": "1",
        **env,
    }


def _daphne_command(port):
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


def start_relaybay(tmp_path, *, token=None, ready_timeout=30.0, **env):
    """Migrate a fresh data folder under `tmp_path` and start daphne on it.

    Returns (url, token, process); `env` adds or overrides server environment variables
    (DATABASE_URL, REDIS_URL, RELAYBAY_MAX_WAIT, ...). Daphne's output goes to
    `<tmp_path>/relaybay-data/daphne.log`, quoted in the error when it does not come up.
    """
    data_dir = Path(tmp_path) / "relaybay-data"
    data_dir.mkdir(parents=True, exist_ok=True)
    token = token or "live-" + secrets.token_urlsafe(16)
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
                _daphne_command(port), cwd=REPO_ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + ready_timeout
        while process.poll() is None and time.monotonic() < deadline:
            if _answers(url, token):
                process.relaybay_url = url
                process.relaybay_data = data_dir
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

    def call(self, method, path, data=None, **params):
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        body = json.dumps(data).encode() if data is not None else None
        request = urllib.request.Request(
            f"{self.url}/api{path}{query}",
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def post(self, path, data):
        return self.call("POST", path, data)

    def get(self, path, **params):
        return self.call("GET", path, **params)

    def hook(self, event, session_id, **fields):
        """Post one hook event as Claude Code would; returns the hook answer."""
        payload = {"hook_event_name": event, "session_id": session_id, "cwd": fields.pop("cwd", "/work/proj"), **fields}
        status, answer = self.post("/hooks", payload)
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


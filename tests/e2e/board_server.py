"""A real relaybay server for browser tests and the board benchmark: daphne on a free loopback
port, with its own data folder (SQLite database, token), migrated, and an owner account.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
TOKEN = "board-test-token"
OWNER = ("owner", "owner-password-1")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class BoardServer:
    def __init__(self, data_dir, extra_env=None):
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "RELAYBAY_DATA": str(self.data_dir),
            "RELAYBAY_TOKEN": TOKEN,
            "RELAYBAY_PORT": str(self.port),
            "DJANGO_SUPERUSER_PASSWORD": OWNER[1],
            "PYTHONUNBUFFERED": "1",
            **(extra_env or {}),
        }
        for name in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"):
            if name not in (extra_env or {}):
                self.env.pop(name, None)
        self.process = None

    def manage(self, *args):
        subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=self.env, check=True, capture_output=True
        )

    def prepare(self):
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.manage("migrate", "--noinput")
        self.manage("createsuperuser", "--noinput", "--username", OWNER[0], "--email", "owner@example.com")

    def start(self):
        log = open(self.data_dir / "daphne.log", "ab")
        self.process = subprocess.Popen(
            [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(self.port), "relaybay.asgi:application"],
            cwd=REPO_ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daphne exited: {(self.data_dir / 'daphne.log').read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("daphne did not start listening within 30 s")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def api(self, path, data=None):
        """POST (with data) or GET a JSON API route with the token; returns (status, json)."""
        body = json.dumps(data).encode() if data is not None else None
        request = urllib.request.Request(
            f"{self.url}/api{path}",
            data=body,
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
            method="POST" if data is not None else "GET",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def hook(self, event, session_id, **fields):
        payload = {"hook_event_name": event, "session_id": session_id, "cwd": fields.pop("cwd", "/work/proj"), **fields}
        status, answer = self.api("/hooks", payload)
        assert status == 200, answer
        return answer

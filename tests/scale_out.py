"""Helpers for the tests that run several real relaybay processes, or put one under load and
faults: a cluster of daphne processes on one database and one channel layer, parallel hook
posts, direct reads of the database, and an owner's board websocket.
"""

import contextlib
import json
import re
import secrets
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.cookiejar import CookieJar
from pathlib import Path

from tests.live_server import MANAGE, REPO_ROOT, LiveRelaybay, restart_relaybay, server_env, start_relaybay, stop_relaybay

OWNER = ("owner", "owner-password-1")
DELIVERED_ITEM = re.compile(r"^\[relaybay\] (Message M|Comment C)-(\d+) from", re.M)


def start_cluster(tmp_path, count, env, kinds=()):
    """`count` server processes on the services in `env` (one database, one channel layer),
    each with a data folder of its own and one shared token: daphne, or the kinds given in
    order ("daphne", "gunicorn")."""
    token = "live-" + secrets.token_urlsafe(16)
    servers = []
    try:
        for i in range(count):
            kind = kinds[i] if i < len(kinds) else "daphne"
            servers.append(LiveRelaybay(*start_relaybay(tmp_path / f"process-{i + 1}", token=token, server=kind, **env)))
    except BaseException:
        stop_cluster(servers)
        raise
    return servers


def stop_cluster(servers):
    for server in servers:
        stop_relaybay(server.process)


def manage(server, *args, **env):
    """`python manage.py ARGS` on a server's data folder and services."""
    environment = server_env(server.process.relaybay_data, server.token, RELAYBAY_URL=server.url, **env)
    completed = subprocess.run(
        [sys.executable, str(MANAGE), *args], cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def write_comments(server, session_name, bodies):
    """The owner's comments, written through the comment action (one manage.py start for all)."""
    code = (
        "import json, sys\n"
        "from sessions_app.actions import do_write_comment\n"
        "from sessions_app.models import Session\n"
        f"row = Session.objects.get(title={session_name!r})\n"
        f"for body in json.loads({json.dumps(json.dumps(bodies))}):\n"
        "    do_write_comment(session=row, body=body)\n"
    )
    manage(server, "shell", "-c", code)


def query(server, sql, *params):
    """Read a server's database directly (`?` placeholders): its PostgreSQL database when it
    runs on one, else the SQLite file in its data folder."""
    database_url = server_env(server.process.relaybay_data, server.token).get("DATABASE_URL")
    if database_url:
        import psycopg

        with psycopg.connect(database_url, connect_timeout=5) as db:
            statement = sql.replace("%", "%%").replace("?", "%s") if params else sql
            return [tuple(row) for row in db.execute(statement, params or None).fetchall()]
    with contextlib.closing(sqlite3.connect(server.process.relaybay_data / "relaybay.sqlite3", timeout=30)) as db:
        return db.execute(sql, params).fetchall()


def delivered_ids(answer):
    """[("M", id) | ("C", id), ...] of the items one hook answer carries."""
    text = answer.get("reason") or answer.get("hookSpecificOutput", {}).get("additionalContext", "")
    if "[relaybay]" not in text and not answer.get("text"):
        return []
    text = answer.get("text") or text
    return [(kind[-1], int(number)) for kind, number in DELIVERED_ITEM.findall(text)]


def hook_payload(event, hook_session, **fields):
    return {"hook_event_name": event, "session_id": hook_session, "cwd": fields.pop("cwd", "/work/proj"), **fields}


def post_json(url, token, path, data, timeout=30):
    """(status, JSON answer); status None when the connection failed (server down)."""
    request = urllib.request.Request(
        f"{url}/api{path}",
        data=json.dumps(data).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        body = error.read()
        try:
            return error.code, json.loads(body or b"null")
        except ValueError:
            return error.code, {"raw": body.decode(errors="replace")}
    except OSError as error:
        return None, {"error": str(error)}


def parallel(calls):
    """Run the zero-argument `calls` at once, one thread each, released together by a barrier
    once every thread waits at it; their results in order. Fails unless at least two calls were
    in flight at the same moment: a test of what happens "at once" must not pass run one after
    another."""
    gate = threading.Barrier(len(calls), timeout=30)
    spans = [None] * len(calls)

    def run(i, call):
        gate.wait()
        started = time.monotonic()
        try:
            return call()
        finally:
            spans[i] = (started, time.monotonic())

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(run, i, call) for i, call in enumerate(calls)]
        results = [future.result() for future in futures]
    assert most_at_once(spans) >= 2, f"the calls did not overlap: {spans}"
    return results


def most_at_once(spans):
    """The most of these (start, end) spans open at one moment."""
    moments = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans], key=lambda m: (m[0], m[1]))
    open_now = most = 0
    for _, step in moments:
        open_now += step
        most = max(most, open_now)
    return most


def parallel_hooks(servers, event, hook_session, count, **fields):
    """`count` posts of one hook event of one session at once, spread over `servers` in turn."""
    calls = [
        (lambda server=servers[i % len(servers)]: post_json(server.url, server.token, "/hooks", hook_payload(event, hook_session, **fields)))
        for i in range(count)
    ]
    results = parallel(calls)
    for status, answer in results:
        assert status == 200, answer
    return [answer for _, answer in results]


def wait_until(predicate, timeout=10.0, what="the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def create_owner(server):
    manage(server, "createsuperuser", "--noinput", "--username", OWNER[0], "--email", "", DJANGO_SUPERUSER_PASSWORD=OWNER[1])


def owner_cookie(server):
    """Log the owner in through the board's login form; the session cookie."""
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{server.url}/login/", timeout=10).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": OWNER[0], "password": OWNER[1], "csrfmiddlewaretoken": csrf, "next": "/"}).encode()
    request = urllib.request.Request(f"{server.url}/login/", data=form, headers={"Referer": f"{server.url}/login/"})
    opener.open(request, timeout=10).read()
    cookies = {cookie.name: cookie.value for cookie in jar}
    assert "sessionid" in cookies, "the owner's login did not give a session cookie"
    return cookies["sessionid"]


def board_socket(server, session_cookie):
    """The owner's board websocket on `server` (a real client over TCP)."""
    from websockets.sync.client import connect

    ws_url = server.url.replace("http://", "ws://") + "/ws/board/"
    return connect(ws_url, origin=server.url, additional_headers={"Cookie": f"sessionid={session_cookie}"}, open_timeout=10)


def kill_hard(server):
    """kill -9: no shutdown, no goodbye to the database or the clients."""
    server.process.kill()
    server.process.wait(10)


def restart(server, ready_timeout=30.0):
    """Start daphne again on the same data folder, services, token and port."""
    server.process = restart_relaybay(server.process, ready_timeout)
    return server


class PrivateRedis:
    """A redis-server of the test's own on a free port, to stop and start at will (the shared
    one on 6379 stays untouched)."""

    def __init__(self, directory):
        from tests.live_server import free_port

        self.port = free_port()
        self.directory = directory
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None

    def start(self):
        import shutil

        server = shutil.which("redis-server")
        assert server, "redis-server is needed for the Redis outage test (apt-get install -y redis-server)"
        self.process = subprocess.Popen(
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        wait_until(lambda: _redis_answers(redis, self.url), timeout=10, what="the private redis-server")
        return self

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def _redis_answers(redis, url):
    try:
        return redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1).ping()
    except redis.RedisError:
        return False


class PrivatePostgres:
    """A PostgreSQL cluster of the test's own (initdb on a free port, run as the postgres user
    since PostgreSQL refuses root), to stop and start under a running relaybay. The shared
    server on 5432 stays untouched."""

    BIN = Path("/usr/lib/postgresql")

    def __init__(self):
        import glob
        import tempfile

        from tests.live_server import free_port

        found = sorted(glob.glob(str(self.BIN / "*" / "bin" / "pg_ctl")))
        assert found, "PostgreSQL's server binaries (pg_ctl, initdb) are needed for the database outage test"
        self.bin = Path(found[-1]).parent
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="relaybay-pg-"))
        self.data = self.directory / "data"
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/relaybay"

    def _as_postgres(self, *command):
        import os

        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        completed = subprocess.run([*prefix, *map(str, command)], capture_output=True, text=True, timeout=120)
        assert completed.returncode == 0, completed.stdout + completed.stderr
        return completed

    def init(self):
        import os
        import shutil

        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        self._as_postgres(self.bin / "initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        self.start()
        self._as_postgres(self.bin / "createdb", "-h", "127.0.0.1", "-p", self.port, "-U", "postgres", "relaybay")
        return self

    def start(self):
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.directory} -c fsync=off"
        self._as_postgres(self.bin / "pg_ctl", "-D", self.data, "-o", options, "-l", self.directory / "log", "-w", "start")

    def stop(self, mode="fast"):
        self._as_postgres(self.bin / "pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def destroy(self):
        import shutil

        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(self.directory, ignore_errors=True)

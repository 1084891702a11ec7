"""The delivery fault loop (docs/rules.md §2.6): relaybay servers, one session whose hooks run
through the real hook client, another session sending it messages, and faults at random points
while they run — a server killed with kill -9 and started again, Redis paused, a hook client
killed mid-answer (`MidAnswerKill`) or giving up at a short timeout. Each item is counted as
the model sees it: in the output of a hook client that exited normally (Claude Code keeps no
output of a hook it killed, or that failed). A run answers two questions: was any item sent
never shown (lost), was any shown more than once.

tests/test_delivery_faults.py runs a bounded loop on the test run's configuration,
bench/delivery_faults.py a long one and prints its counts. Servers are tests/devserver.py's;
Redis, when the loop pauses it, is a redis-server of the loop's own (`PausableRedis`), never
the shared one.
"""

import collections
import contextlib
import json
import random
import re
import secrets
import select
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests import devserver

HOOK_CLIENT = devserver.REPO_ROOT / "bin" / "relaybay-hook"
SHOWN_ITEM = re.compile(r"^\[relaybay\] Message M-(\d+) from", re.M)
# Servers of the loop: an item not confirmed a second after it was handed over is offered
# again, and one sender may send as much as the loop asks of it.
LOOP_SETTINGS = {"RELAYBAY_REOFFER_SECONDS": "1", "RELAYBAY_SENDS_PER_MINUTE": "1000000", "RELAYBAY_UNREAD_CAP": "1000000"}
SINK, SOURCE = ("hook-sink", "sink", "/work/sink"), ("hook-source", "source", "/work/source")
# The hook client as Claude Code runs it: the machine's python3 -S, the process's messaging token.
CLIENT_PYTHON = shutil.which("python3") or sys.executable
SINK_TOKEN = "fault-loop-sink-process"


class PausableRedis:
    """A redis-server of its own on a free port: pausing it (CLIENT PAUSE) troubles nobody else."""

    def __init__(self, directory):
        self.port = devserver.free_port()
        self.directory = Path(directory)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None

    def start(self):
        server = shutil.which("redis-server")
        if not server:
            raise RuntimeError("redis-server is needed to pause Redis (apt-get install -y redis-server)")
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                devserver.check_redis(self.url)
                break
            except devserver.ServicesUnavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        import redis

        # Connected now: a paused Redis holds the handshake of a new connection.
        self.client = redis.Redis.from_url(self.url, socket_timeout=5)
        self.client.ping()
        return self

    def pause(self, seconds):
        """Every client's commands wait `seconds` (Redis answers nothing meanwhile; Redis 7.0
        holds even CLIENT UNPAUSE, so a pause runs its course). Returns when it ends."""
        self.client.execute_command("CLIENT", "PAUSE", int(seconds * 1000), "ALL")
        return time.monotonic() + seconds

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


class Relaybays:
    """`count` daphne processes on one database and one channel layer, each a devserver.Server
    of its own (one data folder each, one token), so that one can be killed and started again.
    `root`: the checkout whose code they run (another one for side-by-side runs), `app` their
    ASGI entry point (bench/empty_asgi.py's for the benchmarks' experiments)."""

    def __init__(self, workdir, count, env, root=devserver.REPO_ROOT, app="relaybay.asgi:application"):
        self.token = "live-" + secrets.token_urlsafe(16)
        self.servers = [
            devserver.Server(Path(workdir) / f"process-{i + 1}", token=self.token, env=env, root=root, app=app) for i in range(count)
        ]
        self.env = env

    def start(self):
        try:
            for i, server in enumerate(self.servers):
                server.start(migrate=i == 0)
        except BaseException:
            self.stop()
            raise
        # A restart keeps its port: while one is under way its address refuses connections.
        self.urls = [server.url for server in self.servers]
        return self

    def kill(self, i):
        self.servers[i].kill()

    def restart(self, i):
        self.servers[i].restart()

    def stop(self):
        for server in self.servers:
            server.stop()

    def query(self, sql):
        """Read the servers' database (their PostgreSQL database, else the first one's SQLite)."""
        database_url = self.env.get("DATABASE_URL")
        if database_url:
            import psycopg

            with psycopg.connect(database_url, connect_timeout=5) as db:
                return [tuple(row) for row in db.execute(sql).fetchall()]
        with contextlib.closing(sqlite3.connect(self.servers[0].data_dir / "relaybay.sqlite3", timeout=30)) as db:
            return db.execute(sql).fetchall()


def post_json(url, token, path, data, timeout=10):
    """(status, answer); status None when relaybay could not be reached."""
    request = urllib.request.Request(
        f"{url}/api{path}", data=json.dumps(data).encode(), headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, None
    except OSError:
        return None, None


@dataclass
class Outcome:
    """What one run saw."""

    stored: list = field(default_factory=list)
    shown: collections.Counter = field(default_factory=collections.Counter)
    faults: collections.Counter = field(default_factory=collections.Counter)
    hook_calls: int = 0
    killed_after_printing: collections.Counter = field(default_factory=collections.Counter)
    unconfirmed: int = 0
    seconds: float = 0.0

    @property
    def lost(self):
        return sorted(set(self.stored) - set(self.shown))

    @property
    def twice(self):
        return {item: count for item, count in sorted(self.shown.items()) if count > 1}

    def report(self):
        faults = ", ".join(f"{count} {name}" for name, count in sorted(self.faults.items()))
        window = [item for item in self.lost if item in self.killed_after_printing]
        if window:
            faults += f"; lost by a client killed between recording and exiting: {window}"
        return (
            f"{len(self.stored)} messages stored, {sum(self.shown.values())} shown to the model by {self.hook_calls} hook calls "
            f"in {self.seconds:.0f} s: "
            f"{len(self.lost)} lost, {len(self.twice)} shown twice, {self.unconfirmed} left unconfirmed ({faults})"
        )


class MidAnswerKill:
    """A proxy for one hook call: it passes the client's requests to the server, and once an
    answer starts to come back it passes on part of it (`cut`, a fraction of its first chunk)
    and kills the client, kill -9: the client dies mid-answer, as a hook Claude Code kills on
    its timeout or an interrupt dies while it waits."""

    def __init__(self, upstream, cut):
        self.upstream = upstream.split("://", 1)[1]
        self.cut = cut
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.process = None

    def serve(self, process):
        self.process = process
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self._pass(client):
                return

    def _pass(self, client):
        """One connection (a replay of the spool, or the call's own post); False once the
        client is killed."""
        host, _, port = self.upstream.partition(":")
        try:
            server = socket.create_connection((host, int(port)), timeout=30)
        except OSError:
            client.close()  # the server is down: the client spools
            return True
        with client, server:
            while True:
                ready, _, _ = select.select([client, server], [], [], 30)
                if not ready:
                    return True
                try:
                    if client in ready:
                        data = client.recv(65536)
                        if not data:
                            return True
                        server.sendall(data)
                    if server in ready:
                        data = server.recv(65536)
                        if data:
                            client.sendall(data[: int(len(data) * self.cut)])
                        self.process.kill()
                        return False
                except OSError:
                    return True  # the server was killed mid-request: the client spools

    def close(self):
        self.listener.close()


def _printed_text(out, err, mode):
    """The comments and messages a hook client printed: the wake-up hook's stderr, else the
    answer JSON's (an answer cut short by a kill printed nothing whole)."""
    if mode == ("wait",):
        return err.decode("utf-8", "replace")
    try:
        answer = json.loads(out) if out.strip() else {}
    except ValueError:
        return ""
    return answer.get("reason") or answer.get("hookSpecificOutput", {}).get("additionalContext", "")


class FaultLoop:
    """One run: `items` messages sent to the sink while its hooks run, `consumers` hook clients
    at a time, with faults at random points, then hooks without faults until every item is shown
    and confirmed (or `drain_seconds` pass)."""

    def __init__(self, relaybays, *, items, seed, workdir, redis=None, consumers=2, drain_seconds=60, log=None):
        self.relaybays, self.items, self.redis = relaybays, items, redis
        self.rng = random.Random(seed)
        self.consumers, self.drain_seconds = consumers, drain_seconds
        self.spool = Path(workdir) / "claude-home" / "spool.jsonl"
        self.outcome = Outcome()
        self.lock = threading.Lock()
        self.producing = threading.Event()
        self.faulting = threading.Event()
        # Set once each kind of fault the run asks for was made: the messages may all be out
        # before the first fault's moment comes, and the run goes on until it has come.
        self.faults_made = threading.Event()
        self.errors = []
        self.log = log or (lambda text: None)

    # --- the hook client, as Claude Code runs it

    def client(self, payload, *, mode=(), url=None, timeout=None, kill_mid_answer=False, wait_bound=None):
        url = url or self.rng.choice(self.relaybays.urls)
        proxy = MidAnswerKill(url, self.rng.random()) if kill_mid_answer else None
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(self.spool.parent),
            "RELAYBAY_URL": proxy.url if proxy else url,
            "RELAYBAY_TOKEN": self.relaybays.token,
            "RELAYBAY_SPOOL": str(self.spool),
            "CLAUDE_CODE_MESSAGING_TOKEN": SINK_TOKEN,
            "CLAUDE_CODE_SESSION_ATTENDED": "1",
        }
        if timeout is not None:
            env["RELAYBAY_TIMEOUT"] = f"{timeout:.3f}"
        if wait_bound is not None:
            env["RELAYBAY_WAIT"] = str(wait_bound)
        process = subprocess.Popen(
            [CLIENT_PYTHON, "-S", str(HOOK_CLIENT), *mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        if proxy:
            proxy.serve(process)
        out, err = process.communicate(json.dumps(payload).encode(), timeout=120)
        if proxy:
            proxy.close()
        printed = _printed_text(out, err, mode)
        items = [int(number) for number in SHOWN_ITEM.findall(printed)]
        with self.lock:
            self.outcome.hook_calls += 1
            if process.returncode == (2 if mode == ("wait",) else 0):
                self.outcome.shown.update(items)
            else:
                # Killed after printing: Claude Code keeps nothing of it. Noted, to tell a loss
                # in the moment between recording and exiting from any other.
                self.outcome.killed_after_printing.update(items)
        return process.returncode

    def hook(self, event, **fields):
        hook_session, _, cwd = SINK
        return {"hook_event_name": event, "session_id": hook_session, "cwd": cwd, **fields}

    # --- the parts of a run

    def start_sessions(self):
        hook_session, name, cwd = SINK
        self.client({**self.hook("SessionStart", source="startup"), "relaybay_session": name}, url=self.relaybays.urls[0])
        self.client(self.hook("UserPromptSubmit", prompt="work"), url=self.relaybays.urls[0])
        source_hook, source_name, source_cwd = SOURCE
        payload = {"hook_event_name": "SessionStart", "session_id": source_hook, "cwd": source_cwd, "source": "startup", "relaybay_session": source_name}
        status, _ = post_json(self.relaybays.urls[0], self.relaybays.token, "/hooks", payload)
        assert status == 200, status

    def produce(self, share):
        for k in share:
            body = f"item {k} " + "x" * self.rng.randrange(50, 1500)
            send = {"to": SINK[1], "session": SOURCE[1], "hook_session": SOURCE[0], "body": body, "request_id": f"item-{k}"}
            while True:
                # A retry after a kill carries the same request_id: answered with the first send.
                status, answer = post_json(self.rng.choice(self.relaybays.urls), self.relaybays.token, "/message_send", send)
                if status == 200:
                    break
                if status is not None and status < 500:
                    raise AssertionError(f"a send was refused ({status})")
                time.sleep(0.05)
            time.sleep(self.rng.uniform(0, 0.03))

    def consume(self, faults):
        while self.producing.is_set() or (faults and self.faulting.is_set()):
            self.one_hook(faults)

    def one_hook(self, faults):
        roll = self.rng.random()
        event = self.rng.choice(["UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUse", "Stop"])
        fields = {"prompt": "go on"} if event == "UserPromptSubmit" else {"tool_name": "Bash"} if "Tool" in event else {"stop_hook_active": False}
        if faults and roll < 0.12:
            # A client whose answer never comes (its server was killed meanwhile) is not killed.
            if self.client(self.hook(event, **fields), kill_mid_answer=True) < 0:
                self.outcome.faults["hook clients killed mid-answer"] += 1
        elif faults and roll < 0.22:
            self.outcome.faults["hook clients given 20-300 ms"] += 1
            self.client(self.hook(event, **fields), timeout=self.rng.uniform(0.02, 0.3))
        elif roll < 0.3:
            # An idle session's wake-up hook: it waits a second for mail.
            self.client(self.hook("Stop", stop_hook_active=False))
            self.client(self.hook("Stop", stop_hook_active=False), mode=("wait",), wait_bound=1)
        else:
            self.client(self.hook(event, **fields))

    def make_faults(self):
        """A server killed and started again, then (with a Redis of the loop's own) Redis
        paused, in turn, every few seconds while the messages go out."""
        for turn in range(10**9):
            time.sleep(self.rng.uniform(1.5, 4.0))
            if not self.producing.is_set():
                break
            if self.redis is not None and turn % 2:
                self.outcome.faults["Redis pauses"] += 1
                self.redis.pause(self.rng.uniform(1.0, 3.0))
            else:
                i = self.rng.randrange(len(self.relaybays.servers))
                self.outcome.faults["servers killed"] += 1
                self.relaybays.kill(i)
                time.sleep(self.rng.uniform(0, 1.0))
                self.relaybays.restart(i)
            if self.every_fault_made():
                self.faults_made.set()
        self.faulting.clear()

    def every_fault_made(self):
        """A server killed, Redis paused (with a Redis of the loop's own), and the consumers'
        hook clients both killed mid-answer and given 20-300 ms."""
        made = self.outcome.faults
        return (
            made["servers killed"] and (self.redis is None or made["Redis pauses"])
            and made["hook clients killed mid-answer"] and made["hook clients given 20-300 ms"]
        )

    def drain(self):
        """Hooks without faults until every stored item was shown and confirmed."""
        deadline = time.monotonic() + self.drain_seconds
        while time.monotonic() < deadline:
            self.one_hook(faults=False)
            stored = [row[0] for row in self.relaybays.query("select id from session_message where channel = 'mcp'")]
            unconfirmed = self.relaybays.query("select count(*) from session_message where channel = 'mcp' and confirmed_at is null")[0][0]
            if set(stored) <= set(self.outcome.shown) and not unconfirmed:
                break

    def noting_errors(self, work):
        """`work` for a thread of the loop: a failure stops producing and is raised by run()."""

        def noted(*args):
            try:
                work(*args)
            except BaseException as error:
                self.errors.append(error)
                self.producing.clear()
                self.faulting.clear()
                raise

        return noted

    def run(self):
        started = time.monotonic()
        self.start_sessions()
        self.producing.set()
        self.faulting.set()
        producers = [threading.Thread(target=self.noting_errors(self.produce), args=(range(i, self.items, 2),)) for i in range(2)]
        others = [threading.Thread(target=self.noting_errors(self.make_faults))]
        others += [threading.Thread(target=self.noting_errors(self.consume), args=(True,)) for _ in range(self.consumers)]
        for thread in producers + others:
            thread.start()
        for thread in producers:
            thread.join()
        self.faults_made.wait(timeout=30)
        self.producing.clear()
        for thread in others:
            thread.join()
        if self.errors:
            raise RuntimeError(f"a thread of the loop failed: {self.errors[0]!r}") from self.errors[0]
        self.log(f"faults done after {time.monotonic() - started:.0f} s; draining")
        self.drain()
        self.outcome.stored = [row[0] for row in self.relaybays.query("select id from session_message where channel = 'mcp' order by id")]
        self.outcome.unconfirmed = self.relaybays.query(
            "select count(*) from session_message where channel = 'mcp' and confirmed_at is null"
        )[0][0]
        self.outcome.seconds = time.monotonic() - started
        return self.outcome


def run_fault_loop(workdir, *, items, seed, scale_out, database_url=None, consumers=2, drain_seconds=60, log=None):
    """Start the servers (two daphne on PostgreSQL and a Redis of the loop's own when
    `scale_out`, else one on SQLite), run the loop, stop everything; the Outcome."""
    workdir = Path(workdir)
    redis = None
    if scale_out:
        redis = PausableRedis(workdir / "redis").start()
        env = {
            "DATABASE_URL": devserver.fresh_database(database_url or devserver.DEFAULT_DATABASE_URL),
            "REDIS_URL": redis.url,
            "RELAYBAY_REDIS_PREFIX": "relaybay-loop-" + secrets.token_hex(4),
        }
    else:
        env = {}
    relaybays = Relaybays(workdir / "relaybay", 2 if scale_out else 1, {**env, **LOOP_SETTINGS})
    try:
        relaybays.start()
        loop = FaultLoop(relaybays, items=items, seed=seed, workdir=workdir, redis=redis, consumers=consumers, drain_seconds=drain_seconds, log=log)
        return loop.run()
    finally:
        relaybays.stop()
        if redis is not None:
            redis.stop()

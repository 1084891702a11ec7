"""A soak: a fleet of sessions driven through the real hook client and MCP for as long as asked,
with faults on a schedule, and a report per window of what was delivered, how fast, and what
each relaybay process holds.

    .venv/bin/python bench/soak.py [--config embedded|scale-out] [--minutes 30] [--sessions 30]
                                   [--window 300] [--fault-every 60] [--idle 20] [--drain 120]
                                   [--seed 1] [--json FILE]

For hours, give --minutes (480 is a working day); each window's line is printed as it ends, so a
long run can be watched, and --json keeps every figure.

Configurations: `embedded`, one daphne on SQLite with the in-memory channel layer (the
default relaybay); `scale-out`, two daphne processes on a fresh PostgreSQL database and a
redis-server of the soak's own (tests/fault_loop.py's, so pausing it troubles nobody else).

Each session is a thread acting as one Claude Code session: its hooks run through the real hook
client (`python3 -S bin/relaybay-hook`, its own spool, HOME, working tree and process token, as
Claude Code runs it), its MCP calls through the official MCP SDK client on /mcp with its
process proof. A turn: a prompt, one to four tool calls (a Bash or an Edit of a file in its
tree), now and then a message_send to another session, a reply (message_send in_reply_to) to
a message it was shown, a reservation of a file (files_reserve, files_release), then Stop.
Then it is idle: its wake-up waiter (`relaybay-hook wait`) waits 3 to --idle seconds, and a message or
comment wakes it into a turn; else its next prompt comes. The owner writes a comment to a
random session every few seconds through the board.

Faults, one every --fault-every seconds in turn: a relaybay process killed (kill -9) and
started again; Redis paused 3-10 s (scale-out); a session's next hook client killed
mid-answer (tests/fault_loop.MidAnswerKill). The database's disk is never filled: that needs a
filesystem of the soak's own (a loop device or a tmpfs mount), which only root can make and
which would be the machine's, not the run's.

An item (message or comment) is shown when a hook client that exited normally printed it
(Claude Code keeps no output of a hook it killed); after the run the fleet goes on without
faults until every item was shown or --drain seconds pass. Per window (by when an item was
stored): items stored, shown, lost (never shown), shown twice; the hook client's wall time
(p50, p99) for event hooks; store → shown for recipients idle at that moment and busy ones;
at the window's end each relaybay process's resident memory, open files and threads, and the
database's and its WAL's size (on PostgreSQL the WAL is the cluster's, `pg_ls_waldir()`: shared
with every other database of that server). Asserts nothing.
"""

import argparse
import asyncio
import collections
import contextlib
import http.cookiejar
import json
import logging
import os
import random
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from bench.harness import pct, write_json  # noqa: E402
from relaybay_hook.proof import PROCESS_HEADER, process_proof  # noqa: E402
from tests import devserver  # noqa: E402
from tests.fault_loop import CLIENT_PYTHON, HOOK_CLIENT, MidAnswerKill, PausableRedis, Relaybays, _printed_text  # noqa: E402

SHOWN = re.compile(r"^\[relaybay\] (Message M|Comment C)-(\d+) from", re.M)
OWNER = ("soak-owner", "soak-" + secrets.token_hex(8))


class Record:
    """Everything the run saw, with wall-clock times (the servers' clocks are the machine's)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.shown = collections.defaultdict(list)  # ("M"|"C", id) → [when shown]
        self.hooks = []  # (when, seconds)
        self.states = collections.defaultdict(list)  # session name → [(when, "busy"|"idle")]
        self.errors = collections.Counter()
        self.faults = []  # (when, what)
        self.samples = []  # (when, {process: {rss_kb, files, threads}}, database bytes, wal bytes)

    def saw(self, printed, when):
        with self.lock:
            for kind, number in SHOWN.findall(printed):
                self.shown[(kind[0], int(number))].append(when)

    def state(self, name, state):
        with self.lock:
            self.states[name].append((time.time(), state))

    def state_at(self, name, when):
        last = "busy"
        for moment, state in self.states.get(name, ()):
            if moment > when:
                break
            last = state
        return last

    def error(self, what):
        with self.lock:
            self.errors[what] += 1


class Session(threading.Thread):
    """One Claude Code session: its turns, tool calls, sends and idle waits."""

    def __init__(self, fleet, i):
        super().__init__(daemon=True, name=f"soak-{i}")
        self.fleet, self.i = fleet, i
        self.name_ = f"soak-{i}"
        self.hook_session = f"hook-soak-{i}-{secrets.token_hex(4)}"
        self.rng = random.Random(fleet.seed * 1000 + i)
        self.url = fleet.relaybays.urls[i % len(fleet.relaybays.urls)]
        self.home = fleet.workdir / "homes" / self.name_
        self.tree = fleet.workdir / "trees" / self.name_
        self.messaging_token = secrets.token_hex(16)
        self.kill_next = False
        self.seen_messages = []

    # --- the hook client

    def env(self, url, **extra):
        return {
            "PATH": "/usr/bin:/bin",
            "HOME": str(self.home),
            "RELAYBAY_URL": url,
            "RELAYBAY_TOKEN": self.fleet.relaybays.token,
            "RELAYBAY_SPOOL": str(self.home / "spool.jsonl"),
            "RELAYBAY_SESSION": self.name_,
            "CLAUDE_CODE_MESSAGING_TOKEN": self.messaging_token,
            "CLAUDE_CODE_SESSION_ATTENDED": "1",
            **extra,
        }

    def client(self, event, *, mode=(), wait_bound=None, **fields):
        payload = {"hook_event_name": event, "session_id": self.hook_session, "cwd": str(self.tree), **fields}
        proxy = None
        if self.kill_next and not mode:
            self.kill_next = False
            proxy = MidAnswerKill(self.url, self.rng.random())
        extra = {"RELAYBAY_WAIT": str(wait_bound)} if wait_bound is not None else {}
        started = time.monotonic()
        process = subprocess.Popen(
            [CLIENT_PYTHON, "-S", str(HOOK_CLIENT), *mode],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=self.env(proxy.url if proxy else self.url, **extra), cwd=self.tree,
        )  # fmt: skip
        if proxy:
            proxy.serve(process)
        try:
            out, err = process.communicate(json.dumps(payload).encode(), timeout=(wait_bound or 0) + 120)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            self.fleet.record.error("hook client hung")
        finally:
            if proxy:
                proxy.close()
        seconds = time.monotonic() - started
        printed = _printed_text(out, err, mode)
        if process.returncode == (2 if mode == ("wait",) else 0):
            self.fleet.record.saw(printed, time.time())
            self.seen_messages += [int(n) for kind, n in SHOWN.findall(printed) if kind == "Message M"]
        elif proxy is None and not (mode == ("wait",) and process.returncode == 0):
            self.fleet.record.error(f"hook client exit {process.returncode}")
        if not mode and proxy is None:
            with self.fleet.record.lock:
                self.fleet.record.hooks.append((time.time(), seconds))
        return process.returncode, printed

    # --- MCP

    def mcp(self, tool, **arguments):
        """One call through the official MCP SDK client, a new MCP session for it (a relaybay
        process may have been restarted since the last one); retried while relaybay is down."""
        arguments["hook_session"] = self.hook_session
        for _ in range(30):
            if self.fleet.stop.is_set() and tool != "message_send":
                return None
            try:
                # Bounded: a call cut short by a kill can leave the SDK's stream waiting.
                return asyncio.run(asyncio.wait_for(self._mcp(tool, arguments), 60))
            except Exception:  # noqa: BLE001 - relaybay killed, restarting, or the call refused
                self.fleet.record.error(f"MCP {tool} tried again")
                time.sleep(1)
        self.fleet.record.error(f"MCP {tool} given up")
        return None

    async def _mcp(self, tool, arguments):
        headers = {"Authorization": f"Bearer {self.fleet.relaybays.token}", PROCESS_HEADER: process_proof(self.messaging_token)}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with streamable_http_client(f"{self.url}/mcp", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    result = await session.call_tool(tool, arguments)
        text = result.content[0].text if result.content else ""
        if result.is_error:
            if "error code: rate_limited" in text or "unread_cap" in text:
                self.fleet.record.error(f"MCP {tool} refused: limit")
                return text
            raise RuntimeError(text)
        return text

    # --- a session's life

    def run(self):
        self.tree.mkdir(parents=True)
        self.home.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.tree)], check=True)
        for k in range(5):
            (self.tree / f"file{k}.py").write_text(f"x = {k}\n")
        self.fleet.record.state(self.name_, "busy")
        self.client("SessionStart", source="startup")
        self.fleet.started.wait()
        while not self.fleet.stop.is_set():
            self.turn()
            self.idle()
        self.client("SessionEnd", reason="other")

    def turn(self, prompt="work on it"):
        self.fleet.record.state(self.name_, "busy")
        self.client("UserPromptSubmit", prompt=prompt)
        for _ in range(self.rng.randint(1, 4)):
            if self.rng.random() < 0.5:
                edit = {"file_path": str(self.tree / f"file{self.rng.randrange(5)}.py"), "old_string": "x", "new_string": "x"}
                self.client("PreToolUse", tool_name="Edit", tool_input=edit)
                self.client("PostToolUse", tool_name="Edit", tool_input=edit, tool_response={"success": True})
            else:
                command = {"command": "ls"}
                self.client("PreToolUse", tool_name="Bash", tool_input=command)
                self.client("PostToolUse", tool_name="Bash", tool_input=command, tool_response={"stdout": "file0.py"})
            self.maybe_talk()
            time.sleep(self.rng.uniform(0.2, 1.5))
        for _ in range(4):  # a Stop that blocks carries mail: the turn goes on, then stops again
            code, printed = self.client("Stop", stop_hook_active=False)
            if not printed:
                break

    def maybe_talk(self):
        roll = self.rng.random()
        if roll < 0.25:
            other = self.rng.choice([s for s in self.fleet.sessions if s is not self])
            body = f"{self.name_} to {other.name_}: " + "words " * self.rng.randrange(5, 200)
            self.send(to=other.name_, body=body)
        elif roll < 0.4 and self.seen_messages:
            self.send(in_reply_to=self.seen_messages.pop(0), body=f"{self.name_} replies: noted")
        elif roll < 0.45:
            path = f"file{self.rng.randrange(5)}.py"
            self.mcp("files_reserve", paths=[path], exclusive=False, ttl_seconds=60, reason="soak")
            self.mcp("files_release", paths=[path])

    def send(self, **arguments):
        # A retry after a fault carries the same request_id: answered with the first send.
        self.mcp("message_send", request_id=f"{self.name_}-{secrets.token_hex(6)}", **arguments)

    def idle(self):
        self.fleet.record.state(self.name_, "idle")
        code, printed = self.client("Stop", mode=("wait",), wait_bound=self.rng.randint(3, max(3, self.fleet.idle_most)), stop_hook_active=False)
        if code == 2 and printed:
            # Woken: the delivery comes back as the next turn's prompt.
            self.turn(prompt=printed)


class Owner(threading.Thread):
    """The owner at the board of the first process: a comment to a random session every few
    seconds, posted as the board's composer posts it (htmx, answered with the composer alone).

    Logged in once, as a browser is: the session lives in the database, so it outlasts a
    restart, and the owner logs in again only when the board sends the login page. A login
    checks the password (PBKDF2, about 0.8 s of a core), which an overloaded machine can stretch
    past ten seconds; a login given up and tried again would leave the first check running in
    relaybay and add another, so the login and the comment each wait as long as a person
    would, not ten seconds."""

    LOGIN_BOUND, COMMENT_BOUND = 120, 60

    def __init__(self, fleet):
        super().__init__(daemon=True, name="soak-owner")
        self.fleet = fleet
        self.rng = random.Random(fleet.seed)
        self.opener = None

    def log_in(self, url):
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        form = self.opener.open(f"{url}/login/", timeout=self.LOGIN_BOUND).read().decode()
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
        data = urllib.parse.urlencode({"username": OWNER[0], "password": OWNER[1], "csrfmiddlewaretoken": csrf}).encode()
        request = urllib.request.Request(f"{url}/login/", data=data, headers={"Referer": f"{url}/login/"})
        self.opener.open(request, timeout=self.LOGIN_BOUND).read()
        if not any(cookie.name == "sessionid" for cookie in self.jar):
            self.opener = None
            raise RuntimeError("login refused")

    def comment(self, url, row, body):
        """True once the board said the comment was saved; False when it sent the login page."""
        csrf = next(cookie.value for cookie in self.jar if cookie.name == "csrftoken")
        data = urllib.parse.urlencode({"body": body}).encode()
        headers = {"Referer": f"{url}/sessions/{row}/", "X-CSRFToken": csrf, "HX-Request": "true"}
        request = urllib.request.Request(f"{url}/sessions/{row}/comment/", data=data, headers=headers)
        with self.opener.open(request, timeout=self.COMMENT_BOUND) as answer:
            if "/login/" in answer.geturl():
                return False
            text = answer.read().decode()
        if "Comment saved" not in text:
            raise RuntimeError("refused: " + " ".join(re.sub("<[^>]+>", " ", text).split())[:120])
        return True

    def run(self):
        url = self.fleet.relaybays.urls[0]
        self.fleet.started.wait()
        while self.fleet.producing.is_set():
            session = self.rng.choice(self.fleet.sessions)
            rows = self.fleet.relaybays.query(f"select id from sessions_app_session where title = '{session.name_}'")
            if rows:
                for _ in range(30):
                    try:
                        if self.opener is None:
                            self.log_in(url)
                        if self.comment(url, rows[0][0], f"owner to {session.name_}: carry on " + secrets.token_hex(4)):
                            break
                        self.fleet.record.error("board sent the login page: logged in again")
                        self.opener = None
                    except Exception as error:  # noqa: BLE001 - the process was killed or restarts
                        self.fleet.record.error(f"board comment tried again: {refusal(error)}")
                        time.sleep(1)
            time.sleep(self.rng.uniform(3, 8))


def refusal(error):
    """What a failed board request was told: its status and the start of its answer."""
    if isinstance(error, urllib.error.HTTPError):
        body = error.read().decode(errors="replace")
        return f"{error.code} {' '.join(re.sub('<[^>]+>', ' ', body).split())[:120]}"
    return type(error).__name__


class Fleet:
    def __init__(self, relaybays, redis, workdir, sessions, seed, fault_every, idle=20, drain=120):
        self.relaybays, self.redis, self.workdir, self.seed = relaybays, redis, Path(workdir), seed
        self.fault_every, self.idle_most, self.drain = fault_every, idle, drain
        self.record = Record()
        self.started, self.producing, self.stop = threading.Event(), threading.Event(), threading.Event()
        self.sessions = [Session(self, i) for i in range(sessions)]
        self.rng = random.Random(seed)

    def make_faults(self):
        kinds = ["kill", "client"] + (["pause"] if self.redis else [])
        turn = 0
        while not self.stop.wait(self.fault_every) and self.producing.is_set():
            kind = kinds[turn % len(kinds)]
            turn += 1
            if kind == "kill":
                i = self.rng.randrange(len(self.relaybays.servers))
                self.record.faults.append((time.time(), f"process {i + 1} killed"))
                self.relaybays.kill(i)
                time.sleep(self.rng.uniform(0, 1))
                self.restart(i)
            elif kind == "pause":
                seconds = self.rng.uniform(3, 10)
                self.record.faults.append((time.time(), f"Redis paused {seconds:.1f} s"))
                self.redis.pause(seconds)
            else:
                session = self.rng.choice(self.sessions)
                self.record.faults.append((time.time(), f"{session.name_}'s hook client killed mid-answer"))
                session.kill_next = True

    def restart(self, i):
        """Start a killed process again, however long a loaded machine makes it take."""
        server = self.relaybays.servers[i]
        while True:
            server.stop()
            server.urls = []
            try:
                server.start(migrate=False, ready_timeout=120, ports=[int(self.relaybays.urls[i].rsplit(":", 1)[1])])
                return
            except RuntimeError:
                self.record.error("a restart did not come up in 120 s: tried again")
                server.kill()

    def sample(self):
        processes = {}
        for k, server in enumerate(self.relaybays.servers):
            for pid in server.pids:
                # (A process just killed may be a zombie, with no memory to report.)
                with contextlib.suppress(OSError, KeyError):
                    status = Path(f"/proc/{pid}/status").read_text()
                    field = {line.split(":")[0]: line.split(":")[1].split()[0] for line in status.splitlines() if ":" in line and line.split(":")[1].split()}
                    processes[f"process {k + 1}"] = {
                        "rss_mb": int(field["VmRSS"]) / 1024,
                        "files": len(os.listdir(f"/proc/{pid}/fd")),
                        "threads": int(field["Threads"]),
                    }
        database, wal = self.database_size()
        with self.record.lock:
            self.record.samples.append((time.time(), processes, database, wal))

    def database_size(self):
        try:
            if self.relaybays.env.get("DATABASE_URL"):
                database = self.relaybays.query("select pg_database_size(current_database())")[0][0]
                wal = self.relaybays.query("select coalesce(sum(size), 0) from pg_ls_waldir()")[0][0]
                return int(database), int(wal)
            data = self.relaybays.servers[0].data_dir
            size = lambda name: (data / name).stat().st_size if (data / name).exists() else 0  # noqa: E731
            return size("relaybay.sqlite3"), size("relaybay.sqlite3-wal")
        except Exception:  # noqa: BLE001 - the database is briefly unreachable
            return None, None

    def sampling(self, every=15):
        while not self.stop.wait(every):
            self.sample()

    def run(self, seconds, on_window=None, window=300):
        for session in self.sessions:
            session.start()
        time.sleep(5)
        self.t0 = time.time()
        self.producing.set()
        self.started.set()
        helpers = [Owner(self), threading.Thread(target=self.make_faults, daemon=True), threading.Thread(target=self.sampling, daemon=True)]
        for helper in helpers:
            helper.start()
        self.sample()
        ends = time.monotonic() + seconds
        next_window = self.t0 + window
        while time.monotonic() < ends:
            time.sleep(min(1.0, max(0.0, ends - time.monotonic())))
            if on_window and time.time() >= next_window:
                self.sample()
                on_window(self, next_window - window, next_window)
                next_window += window
        self.producing.clear()
        self.t_end = time.time()
        # Drain: the sessions go on without faults until every stored item was shown.
        deadline = time.monotonic() + self.drain
        while time.monotonic() < deadline:
            stored, _ = self.stored()
            if stored and all(key in self.record.shown for key in stored):
                break
            time.sleep(2)
        self.stop.set()
        deadline = time.monotonic() + 180
        for session in self.sessions:
            session.join(max(0.0, deadline - time.monotonic()))
        self.sample()

    def stored(self):
        """(kind, id) → (stored at, recipient's name) for every message and comment."""
        rows = self.relaybays.query(
            "select 'M', m.id, m.created_at, s.title from session_message m join sessions_app_session s on s.id = m.recipient_id "
            "where m.channel = 'mcp' union all "
            "select 'C', c.id, c.created_at, s.title from sessions_app_comment c join sessions_app_session s on s.id = c.session_id"
        )
        items = {(kind, number): (as_epoch(at), title) for kind, number, at, title in rows}
        return items, rows


def as_epoch(value):
    from datetime import UTC, datetime

    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def window_figures(fleet, start, end, final=False):
    record = fleet.record
    items, _ = fleet.stored()
    mine = {key: value for key, value in items.items() if start <= value[0] < end}
    shown = {key: record.shown.get(key, []) for key in mine}
    latency = {"idle": [], "busy": []}
    for key, (at, recipient) in mine.items():
        if shown[key]:
            latency[record.state_at(recipient, at)].append(min(shown[key]) - at)
    hooks = [seconds * 1000 for when, seconds in record.hooks if start <= when < end]
    samples = [s for s in record.samples if s[0] <= end + 20]
    last = samples[-1] if samples else (None, {}, None, None)
    return {
        "from_minute": (start - fleet.t0) / 60,
        "to_minute": (end - fleet.t0) / 60,
        "stored": len(mine),
        "shown": sum(1 for v in shown.values() if v),
        "lost": sum(1 for v in shown.values() if not v) if final else None,
        "twice": sum(1 for v in shown.values() if len(v) > 1),
        "hook_p50_ms": pct(hooks, 50),
        "hook_p99_ms": pct(hooks, 99),
        "hooks": len(hooks),
        "idle_s": (pct(latency["idle"], 50), pct(latency["idle"], 99), len(latency["idle"])),
        "busy_s": (pct(latency["busy"], 50), pct(latency["busy"], 99), len(latency["busy"])),
        "processes": last[1],
        "database_mb": last[2] / 2**20 if last[2] is not None else None,
        "wal_mb": last[3] / 2**20 if last[3] is not None else None,
        "faults": [what for when, what in record.faults if start <= when < end],
    }


HEADER = (
    "| minutes | stored | shown | lost | twice | hook p50 / p99 ms | idle → shown p50 / p99 s (n) | busy → shown p50 / p99 s (n) "
    "| RSS MB, files, threads per process | DB / WAL MB | faults |"
)


def row(figures):
    lost = "…" if figures["lost"] is None else figures["lost"]
    procs = "; ".join(f"{p['rss_mb']:.0f}, {p['files']}, {p['threads']}" for _, p in sorted(figures["processes"].items()))
    db = "?" if figures["database_mb"] is None else f"{figures['database_mb']:.1f} / {figures['wal_mb']:.1f}"
    idle, busy = figures["idle_s"], figures["busy_s"]
    return (
        f"| {figures['from_minute']:.1f}–{figures['to_minute']:.1f} | {figures['stored']} | {figures['shown']} | {lost} | {figures['twice']} "
        f"| {figures['hook_p50_ms']:.0f} / {figures['hook_p99_ms']:.0f} | {idle[0]:.2f} / {idle[1]:.2f} ({idle[2]}) "
        f"| {busy[0]:.2f} / {busy[1]:.2f} ({busy[2]}) | {procs} | {db} | {len(figures['faults'])} |"
    )


def start_relaybays(config, workdir):
    redis = None
    env = {}
    if config == "scale-out":
        redis = PausableRedis(workdir / "redis").start()
        env = {
            "DATABASE_URL": devserver.fresh_database(devserver.DEFAULT_DATABASE_URL),
            "REDIS_URL": redis.url,
            "RELAYBAY_REDIS_PREFIX": "relaybay-soak-" + secrets.token_hex(4),
        }
    relaybays = Relaybays(workdir / "relaybay", 2 if config == "scale-out" else 1, env)
    for i, server in enumerate(relaybays.servers):
        server.start(migrate=i == 0, ready_timeout=300)
    relaybays.urls = [server.url for server in relaybays.servers]
    relaybays.servers[0].create_owner(*OWNER)
    return relaybays, redis


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=["embedded", "scale-out"], default="embedded")
    parser.add_argument("--minutes", type=float, default=30, help="how long the fleet runs with faults (then the drain)")
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--window", type=float, default=300, help="seconds of each window of the report")
    parser.add_argument("--fault-every", type=float, default=60, help="seconds between faults")
    parser.add_argument("--idle", type=int, default=20, help="the longest idle wait, seconds (each is 3 s to this)")
    parser.add_argument("--drain", type=float, default=120, help="the longest drain, seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write every window's figures here")
    args = parser.parse_args()
    # The MCP SDK logs each call a killed relaybay cut short; the soak counts them instead.
    logging.getLogger("mcp").setLevel(logging.CRITICAL)
    workdir = Path(tempfile.mkdtemp(prefix="relaybay-soak-"))
    relaybays, redis = start_relaybays(args.config, workdir)
    label = "embedded: 1 daphne, SQLite, in-memory layer" if args.config == "embedded" else "scale-out: 2 daphne, PostgreSQL, Redis"
    print(f"soak, {label}; {args.sessions} sessions, {args.minutes:g} min, a fault every {args.fault_every:g} s\n", flush=True)
    print(HEADER, flush=True)
    print("|" + "---|" * (HEADER.count("|") - 1), flush=True)
    fleet = Fleet(relaybays, redis, workdir, args.sessions, args.seed, args.fault_every, args.idle, args.drain)
    try:
        fleet.run(args.minutes * 60, on_window=lambda f, start, end: print(row(window_figures(f, start, end)), flush=True), window=args.window)
        windows = []
        start = fleet.t0
        while start < fleet.t_end:
            end = min(start + args.window, fleet.t_end + 1e-3)
            if fleet.t_end - end < args.window / 10:  # a sliver at the end joins the last window
                end = fleet.t_end + 1e-3
            windows.append(window_figures(fleet, start, end, final=True))
            start = end
        items, _ = fleet.stored()
        late = {key for key, (at, _) in items.items() if at >= fleet.t_end}
        shown = fleet.record.shown
        lost = sorted(key for key in items if not shown.get(key) and key not in late)
        twice = sorted(key for key in items if len(shown.get(key, [])) > 1)
    finally:
        relaybays.stop()
        if redis:
            redis.stop()
    print(f"\nafter the drain, by window ({label}):\n")
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1))
    for figures in windows:
        print(row(figures))
    print(f"\nin all: {len(items)} items stored, {len(lost)} lost {lost[:20]}, {len(twice)} shown twice {twice[:20]}; "
          f"{len(fleet.record.faults)} faults: {dict(collections.Counter(re.sub(r'[0-9.]+ s|soak-[0-9]+|process [0-9]', '…', w) for _, w in fleet.record.faults))}")
    print(f"tried again or refused: {dict(fleet.record.errors)}")
    write_json(args.json, {"config": args.config, "args": vars(args), "windows": windows, "lost": lost, "twice": twice,
                           "errors": dict(fleet.record.errors), "faults": fleet.record.faults,
                           "samples": fleet.record.samples})
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

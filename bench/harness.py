"""What the benchmark scripts share: throwaway relaybay servers (daphne or gunicorn, one or more
processes, embedded SQLite or PostgreSQL + Redis), a keep-alive HTTP client, wrk with a Lua
request rotation, direct SQL for seeding, and small statistics.

Servers are tests/devserver.py's, as the tests start them (a fresh data folder, `manage.py
migrate`), but on the benchmark-only entry points bench/empty_asgi.py and bench/empty_wsgi.py,
which add an empty bearer-auth django-ninja view beside relaybay's routes. Several daphne
processes listen on one port, each on its own SO_REUSEPORT socket (daphne --fd), so the kernel
spreads connections evenly between them.
"""

import contextlib
import http.client
import json
import os
import platform
import re
import secrets
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests import devserver  # noqa: E402

PG_ADMIN_URL = os.environ.get("BENCH_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
PG_URL_TEMPLATE = os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/{name}")
# Redis database 9 is the browser tests'; the benchmarks keep to their own.
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
ASGI_APP = "bench.empty_asgi:application"
WSGI_APP = "bench.empty_wsgi:application"
HOOK_CLIENT = REPO_ROOT / "bin" / "relaybay-hook"


# --- statistics ------------------------------------------------------------------------------


def pct(samples, p):
    s = sorted(samples)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, round(p / 100 * (len(s) - 1))))
    return s[k]


def summary(samples):
    """median / p90 / p99 / n of a list of milliseconds."""
    return {
        "median": statistics.median(samples),
        "p90": pct(samples, 90),
        "p99": pct(samples, 99),
        "n": len(samples),
    }


def ratio(a, b):
    return a / b if b else float("nan")


def fmt_ms(value):
    return f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms"


def write_json(path, data):
    if path:
        Path(path).write_text(json.dumps(data, indent=1, default=str))


# --- machine ---------------------------------------------------------------------------------


def real_python3():
    """The interpreter `python3` on PATH resolves to (through a pyenv shim, if any)."""
    found = shutil.which("python3")
    if not found:
        return sys.executable
    out = subprocess.run([found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True)
    return out.stdout.strip() or found


def code_state():
    """The commit measured, and which product files differed from it (shared working tree)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True).stdout.strip()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT, capture_output=True, text=True).stdout
    changed = [line[3:] for line in status.splitlines() if not line[3:].startswith(("bench/", "docs/", "tests/"))]
    return f"commit {head or '?'}" + (f" with uncommitted changes to {', '.join(changed)}" if changed else "")


def machine_notes():
    notes = {
        "cores": os.cpu_count(),
        "cpu": "",
        "python_server": platform.python_version() + f" ({sys.executable})",
        "sqlite": sqlite3.sqlite_version,
        "load_average_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "kernel": platform.release(),
    }
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                notes["cpu"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError):
        mem = Path("/proc/meminfo").read_text().split("\n")[0]
        notes["memory"] = f"{int(mem.split()[1]) // 1024} MiB"
    py3 = real_python3()
    out = subprocess.run([py3, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True)
    notes["python3_for_hooks"] = f"{out.stdout.strip()} ({py3})"
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL, connect_timeout=3) as conn:
            notes["postgresql"] = conn.execute("show server_version").fetchone()[0]
    except Exception as error:  # noqa: BLE001 - a note, not a failure
        notes["postgresql"] = f"unavailable ({error.__class__.__name__})"
    try:
        import redis

        notes["redis"] = redis.Redis.from_url(REDIS_URL).info("server")["redis_version"]
    except Exception as error:  # noqa: BLE001
        notes["redis"] = f"unavailable ({error.__class__.__name__})"
    from importlib import metadata

    versions = []
    for package in ("django", "django-ninja", "daphne", "twisted", "channels", "channels-redis", "psycopg", "psycopg-pool", "gunicorn"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions.append(f"{package} {metadata.version(package)}")
    notes["packages"] = ", ".join(versions)
    notes["code"] = code_state()
    if shutil.which("wrk"):
        out = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
        notes["wrk"] = (out.stdout + out.stderr).split("\n")[0].split(" [")[0]
    else:
        notes["wrk"] = "not installed (the load benchmarks need it: apt-get install wrk)"
    return notes


# --- databases -------------------------------------------------------------------------------


def reset_pg_database(name):
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_pg_database(name):
    import psycopg

    with contextlib.suppress(Exception), psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Backend:
    """Where a server keeps its data: the embedded default or PostgreSQL + Redis."""

    def __init__(self, kind, pg_name=None):
        assert kind in ("sqlite", "pg")
        self.kind = kind
        self.pg_name = pg_name or f"relaybay_bench_{os.getpid()}"

    @property
    def label(self):
        return "SQLite, in-memory layer" if self.kind == "sqlite" else "PostgreSQL + Redis"

    def env(self):
        if self.kind == "sqlite":
            return {}
        return {
            "DATABASE_URL": PG_URL_TEMPLATE.format(name=self.pg_name),
            "REDIS_URL": REDIS_URL,
            "RELAYBAY_REDIS_PREFIX": f"relaybay-bench-{self.pg_name}",
        }

    def prepare(self):
        if self.kind == "pg":
            reset_pg_database(self.pg_name)

    def cleanup(self):
        if self.kind == "pg":
            drop_pg_database(self.pg_name)


class DB:
    """Direct SQL on a server's database, for seeding outside the timed requests."""

    def __init__(self, backend, data_dir):
        self.kind = backend.kind
        if self.kind == "sqlite":
            self.conn = sqlite3.connect(Path(data_dir) / "relaybay.sqlite3", timeout=60, isolation_level=None)
            self.conn.execute("PRAGMA busy_timeout=60000")
        else:
            import psycopg

            self.conn = psycopg.connect(PG_URL_TEMPLATE.format(name=backend.pg_name), autocommit=True)

    def _sql(self, sql):
        return sql if self.kind == "sqlite" else sql.replace("%", "%%").replace("?", "%s")

    def execute(self, sql, params=()):
        return self.conn.execute(self._sql(sql), params)

    def rows(self, sql, params=()):
        return self.execute(sql, params).fetchall()

    def value(self, sql, params=()):
        row = self.execute(sql, params).fetchone()
        return row[0] if row else None

    def timestamp(self, when=None):
        when = when or datetime.now(UTC)
        return when.strftime("%Y-%m-%d %H:%M:%S.%f") if self.kind == "sqlite" else when

    def close(self):
        self.conn.close()


# --- servers ---------------------------------------------------------------------------------


class Server(devserver.Server):
    """relaybay with the bench routes (bench/empty_asgi.py, bench/empty_wsgi.py) on a throwaway
    data folder under `workdir`, on `backend`'s database and channel layer: tests/devserver.py's
    server, as the tests start it."""

    def __init__(self, workdir, backend, *, processes=1, kind="daphne", separate_ports=False, token=None, extra_env=None, root=REPO_ROOT):
        self.backend = backend
        super().__init__(
            Path(workdir) / "relaybay-data",
            token=token or "bench-" + secrets.token_urlsafe(12),
            env={**backend.env(), **(extra_env or {})},
            kind=kind,
            processes=processes,
            separate_ports=separate_ports,
            app=ASGI_APP,
            wsgi_app=WSGI_APP,
            root=root,
        )


def django_in_process(backend_kind, data_dir, pg_name):
    """Django set up in this process on a throwaway data folder (or PostgreSQL database),
    migrated: for the benchmarks that call relaybay's code directly, without HTTP."""
    backend = Backend(backend_kind, pg_name=pg_name)
    os.environ.update({"RELAYBAY_DATA": str(data_dir), "RELAYBAY_TOKEN": "bench", "DJANGO_SETTINGS_MODULE": "relaybay.settings", **backend.env()})
    for key in ("DATABASE_URL", "REDIS_URL"):
        if key not in backend.env():
            os.environ.pop(key, None)
    backend.prepare()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return backend


@contextlib.contextmanager
def throwaway_dir(prefix):
    with tempfile.TemporaryDirectory(prefix=f"relaybay-bench-{prefix}-") as tmp:
        yield Path(tmp)


# --- HTTP ------------------------------------------------------------------------------------


class Client:
    """One keep-alive connection with the token; request() returns (status, body, ms)."""

    def __init__(self, url, token, timeout=30):
        host, port = url.split("://", 1)[1].split(":")
        self.host, self.port, self.timeout = host, int(port), timeout
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.conn = None

    def _connection(self):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.conn.connect()
            self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.conn

    def request(self, method, path, body=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        reused = self.conn is not None
        conn = self._connection()
        started = time.perf_counter()
        try:
            conn.request(method, path, body=body, headers=self.headers)
            response = conn.getresponse()
            data = response.read()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self.close()
            if not reused:
                raise
            # The server closed the kept-alive connection while it sat idle (relaybay/serve.py's
            # header timeout) before this request reached it: once more on a new connection.
            return self.request(method, path, body)
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        elapsed = (time.perf_counter() - started) * 1000
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        return response.status, data, elapsed

    def json(self, method, path, body=None):
        status, data, _ = self.request(method, path, body)
        return status, json.loads(data or b"null")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def fresh_connection_request(url, token, method, path, body):
    """One request on a new TCP connection (as an http hook makes it); returns (status, ms)."""
    client = Client(url, token)
    started = time.perf_counter()
    conn = http.client.HTTPConnection(client.host, client.port, timeout=30)
    conn.request(method, path, body=body, headers={**client.headers, "Connection": "close"})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, (time.perf_counter() - started) * 1000


# --- hook payloads and sessions --------------------------------------------------------------


def hook_payload(event, hook_session, cwd="/work/project", **extra):
    payload = {
        "session_id": hook_session,
        "transcript_path": f"/root/.claude/projects/-work-project/{hook_session}.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": event,
    }
    if event == "UserPromptSubmit":
        payload["prompt"] = "Run the tests and fix what fails, then summarise the change."
    elif event in ("PreToolUse", "PostToolUse"):
        payload["tool_name"] = "Bash"
        payload["tool_input"] = {"command": "python -m pytest -q tests/test_models.py", "description": "Run the model tests"}
        payload["tool_use_id"] = "toolu_01" + hook_session[-8:].rjust(8, "0") + "abcdefghijkl"
        if event == "PostToolUse":
            payload["tool_response"] = {
                "stdout": "........................................ [100%]\n40 passed in 1.92s\n" + "x" * 300,
                "stderr": "",
                "interrupted": False,
                "isImage": False,
            }
    elif event == "Stop":
        payload["stop_hook_active"] = False
    payload.update(extra)
    return payload


def start_sessions(client, names, *, busy=True, cwd_for=None):
    """SessionStart with a RELAYBAY_SESSION name for each (exact links); `busy` adds a
    UserPromptSubmit so later tool events change no state. Returns {name: hook_session}."""
    ids = {}
    for name in names:
        hook_session = f"bench-{name}-{secrets.token_hex(6)}"
        cwd = cwd_for(name) if cwd_for else "/work/project"
        status, answer = client.json("POST", "/api/hooks", hook_payload("SessionStart", hook_session, cwd=cwd, source="startup", relaybay_session=name))
        if status != 200:
            raise RuntimeError(f"SessionStart for {name} answered {status}: {answer}")
        if busy:
            client.request("POST", "/api/hooks", hook_payload("UserPromptSubmit", hook_session, cwd=cwd))
        ids[name] = hook_session
    return ids


# --- wrk -------------------------------------------------------------------------------------


LUA_TEMPLATE = r"""
-- Generated by bench/harness.py: rotates through a fixed list of requests.
local requests = {}
local bodies = {
%(bodies)s
}
local paths = {
%(paths)s
}
local headers = {["Authorization"] = "Bearer %(token)s", ["Content-Type"] = "application/json"}
local i = 0
local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  for k = 1, #bodies do
    requests[k] = wrk.format("POST", paths[k], headers, bodies[k])
  end
  i = (tonumber(tid) or 0) * 37
end

function request()
  i = i + 1
  return requests[(i - 1) %% #requests + 1]
end

function response(status, headers, body)
  if status ~= 200 then
    io.stderr:write("status " .. status .. ": " .. string.sub(body, 1, 200) .. "\n")
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests": %%d, "duration_us": %%d, "connect": %%d, "read": %%d, "write": %%d, "status": %%d, "timeout": %%d, ' ..
    '"p50": %%d, "p90": %%d, "p99": %%d, "max": %%d, "mean": %%f}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
"""


def write_lua(path, token, requests):
    """requests: list of (path, body bytes/str)."""

    def long_string(text):
        level = "=" * 3
        assert f"]{level}]" not in text
        return f"[{level}[{text}]{level}]"

    bodies = ",\n".join(long_string(body if isinstance(body, str) else body.decode()) for _, body in requests)
    paths = ",\n".join(json.dumps(p) for p, _ in requests)
    Path(path).write_text(LUA_TEMPLATE % {"bodies": bodies, "paths": paths, "token": token})
    return path


def cpu_seconds(pids):
    """User + system CPU seconds used so far by these processes (all their threads)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def machine_busy():
    """(busy, total) jiffies over all cores since boot, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def cpu_by_name(names):
    """CPU seconds used so far by every process whose command name is in `names`."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            raw = (entry / "stat").read_text()
            comm = raw[raw.index("(") + 1 : raw.rindex(")")]
            if comm in names or comm.split(":")[0] in names:
                fields = raw.rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick
    return total


SERVICES = ("postgres", "redis-server")


def run_wrk(url, lua_path, *, duration=8, connections=50, threads=1, timeout="5s", pids=()):
    cpu_before = cpu_seconds(pids)
    busy_before = machine_busy()
    services_before = cpu_by_name(SERVICES) if pids else 0.0
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", f"--timeout={timeout}", "-s", str(lua_path), url]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    match = re.search(r"^WRKJSON (.*)$", run.stdout, re.M)
    if not match:
        raise RuntimeError(f"wrk gave no figures:\n{run.stdout}\n{run.stderr}")
    raw = json.loads(match.group(1))
    seconds = raw["duration_us"] / 1e6
    cpu = (cpu_seconds(pids) - cpu_before) / seconds if pids else None
    busy_after = machine_busy()
    machine = (busy_after[0] - busy_before[0]) / max(1, busy_after[1] - busy_before[1]) * (os.cpu_count() or 1)
    services = (cpu_by_name(SERVICES) - services_before) / seconds if pids else None
    errors = raw["connect"] + raw["read"] + raw["write"] + raw["status"] + raw["timeout"]
    status_lines = [line for line in run.stderr.splitlines() if line.startswith("status ")]
    return {
        "rps": raw["requests"] / seconds,
        "requests": raw["requests"],
        "errors": errors,
        "error_detail": {k: raw[k] for k in ("connect", "read", "write", "status", "timeout") if raw[k]},
        "error_sample": status_lines[:3],
        "p50": raw["p50"] / 1000,
        "p90": raw["p90"] / 1000,
        "p99": raw["p99"] / 1000,
        "max": raw["max"] / 1000,
        "mean": raw["mean"] / 1000,
        "command": " ".join(cmd[:-3] + ["-s", Path(lua_path).name, "URL"]),
        "server_cpu": cpu,
        "machine_cpu": machine,
        "services_cpu": services,
    }


def median_run(runs):
    """The run with the median events/s of several wrk runs, with every run's rate and errors."""
    ordered = sorted(runs, key=lambda r: r["rps"])
    chosen = dict(ordered[len(ordered) // 2])
    chosen["all_rps"] = [round(r["rps"], 1) for r in runs]
    chosen["errors"] = sum(r["errors"] for r in runs)
    chosen["requests_all_runs"] = sum(r["requests"] for r in runs)
    for key in ("server_cpu", "machine_cpu", "services_cpu"):
        if all(r.get(key) is not None for r in runs):
            chosen[key] = statistics.median(r[key] for r in runs)
    return chosen


# --- seeding with SQL ------------------------------------------------------------------------

MESSAGE_COLUMNS = (
    "sender_id, sender_name, sender_verified, recipient_id, recipient_name, task_id, body, parent_id, depth, "
    "created_at, delivered_at, delivered_by, read_at, read_verified, not_delivered_reason, needs_owner, owner_seen_at, "
    "channel, state, native_id, native_digest"
)


def session_ids(db, names):
    """{title: row id} for sessions made by start_sessions."""
    found = {}
    for name in names:
        found[name] = db.value("SELECT id FROM sessions_app_session WHERE title = ?", (name,))
    return found


def insert_comment(db, session_id, session_name, body):
    db.execute(
        "INSERT INTO sessions_app_comment (session_name, body, created_at, delivered_at, delivered_by, author_id, session_id) "
        "VALUES (?, ?, ?, NULL, '', NULL, ?)",
        (session_name, body, db.timestamp(), session_id),
    )


def insert_message(db, sender, recipient, body):
    """sender, recipient: (row id, name). A pending message, as message_send stores one."""
    db.execute(
        f"INSERT INTO session_message ({MESSAGE_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, NULL, ?, NULL, 0, ?, NULL, '', NULL, NULL, '', ?, NULL, 'mcp', 'sent', '', '')",
        (sender[0], sender[1], True, recipient[0], recipient[1], body, db.timestamp(), False),
    )


# --- open-loop load (requests at fixed times, whatever the answers' speed) ----------------------


async def _read_http_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    return status, headers.get("connection", "").lower() == "close"


def open_loop(url, token, requests_by_session, rate, duration):
    """Each session (its own keep-alive connection) sends its requests in turn at fixed times so
    that all together offer `rate` requests/s. Latency counts from the scheduled send time, so a
    slow answer also delays (and is charged to) the next request. Returns figures in ms."""
    import asyncio

    host, port = url.split("://", 1)[1].split(":")
    port = int(port)
    sessions = len(requests_by_session)
    interval = sessions / rate

    async def one(i, bodies, start, results):
        reader, writer = await asyncio.open_connection(host, port)
        loop = asyncio.get_running_loop()
        scheduled = start + interval * i / sessions
        k = 0
        while scheduled < start + duration:
            delay = scheduled - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            path, body = bodies[k % len(bodies)]
            body = body if isinstance(body, bytes) else body.encode()
            writer.write(
                f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
            )
            try:
                status, close = await asyncio.wait_for(_read_http_response(reader), 10)
            except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                status, close = 0, True
            results.append(((loop.time() - scheduled) * 1000, status))
            if close:
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
            k += 1
            scheduled += interval
        writer.close()

    async def main():
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.2
        results = []
        await asyncio.gather(*(one(i, b, start, results) for i, b in enumerate(requests_by_session)))
        return results

    results = asyncio.run(main())
    latencies = [ms for ms, _ in results]
    errors = sum(1 for _, status in results if status != 200)
    return {**summary(latencies), "errors": errors, "offered_rps": rate, "done": len(results), "max": max(latencies, default=0)}

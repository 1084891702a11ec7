"""Throwaway relaybay servers, for the tests and the benchmarks alike: a data folder, `manage.py
migrate`, and daphne processes (or gunicorn with sync workers, the JSON API's scale-out layout
of docs/scale-out.md) on loopback, started as `make run` starts them.

    server = Server(data_dir, token="…", env={"DATABASE_URL": …}).start()
    … server.url, server.token …
    server.stop()

It lives in the package it launches, as Django's own live server lives in `django.test`: tests
and `bench/` import it the same way, and nothing in the serving path imports it. Every process
gets its listening socket from here (`daphne --fd`, `gunicorn --bind fd://`), so there is no
race for a free port, several daphne processes can share one port (each its own SO_REUSEPORT
socket: the kernel spreads connections evenly), and a restart gets the same port back.

A server runs on the embedded default (SQLite in its data folder, in-memory channel layer)
unless `env` names services; `scale_out_env()` gives a fresh PostgreSQL database and a Redis
prefix of its own, for one or several servers that share them.

With `use_migrated_templates()` (the tests call it; the benchmarks do not) a process migrates
once per database kind and copies the result: a fresh SQLite data folder gets a copy of a
migrated database file, a fresh PostgreSQL database is created from a migrated template
(CREATE DATABASE … TEMPLATE), and their servers start without a `migrate` of their own. What
each server runs on is the same schema and rows `migrate` writes; only the repeated Django
starts and migrations are left out.
"""

import atexit
import contextlib
import json
import os
import secrets
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
MANAGE = REPO_ROOT / "manage.py"
VENV_BIN = Path(sys.executable).parent
# Configuration a developer's shell may hold that would point a throwaway server at shared
# services; a caller that wants them passes them explicitly.
NOT_INHERITED = ("DATABASE_URL", "REDIS_URL", "RELAYBAY_URL", "RELAYBAY_HOST", "RELAYBAY_PORT", "DJANGO_SECRET_KEY")
SERVICES_NEEDED = "PostgreSQL and Redis on 127.0.0.1 are needed for the scale-out configuration"
DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/1"
# The services a data folder runs on, kept beside it for restarts and manage.py commands.
SERVER_ENV_FILE = "server-env.json"
SERVICE_KEYS = ("DATABASE_URL", "REDIS_URL", "RELAYBAY_REDIS_PREFIX")


class ServicesUnavailable(RuntimeError):
    """PostgreSQL or Redis does not answer."""


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening_socket(port=0, reuseport=False):
    """A loopback socket, listening and inheritable, to hand to a server process."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuseport:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


# --- migrated once, copied ------------------------------------------------------------------

_templates = {"on": False}
_templates_lock = threading.Lock()
# PostgreSQL databases created from a migrated template: their servers skip `migrate`.
_migrated_databases = set()


def use_migrated_templates():
    """Fresh databases of this process are copies of one migrated database (module docstring)."""
    _templates["on"] = True


def _migrate(root, env):
    run = subprocess.run([sys.executable, str(Path(root) / "manage.py"), "migrate", "--noinput"], cwd=root, env=env, capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"manage.py migrate failed:\n{run.stderr[-3000:]}")


def _scratch_folder():
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="relaybay-migrated-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _migrated_sqlite(root):
    """A migrated SQLite database file for the checkout at `root`, made once per process."""
    key = ("sqlite", str(root))
    with _templates_lock:
        if key not in _templates:
            data_dir = _scratch_folder() / "data"
            _migrate(root, server_env(data_dir, "template-" + secrets.token_hex(8)))
            database = data_dir / "relaybay.sqlite3"
            # Everything in the one file: nothing of it left in a -wal beside it.
            with contextlib.closing(sqlite3.connect(database)) as connection:
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            _templates[key] = database
        return _templates[key]


def _migrated_postgres_template(database_url):
    """The name of a migrated template database on the PostgreSQL server of `database_url`,
    made once per process (dropped at exit with the others it created)."""
    import psycopg

    admin = _admin_url(database_url)
    key = ("postgres", admin)
    with _templates_lock:
        if key not in _templates:
            name = "relaybay_template_" + secrets.token_hex(5)
            with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f"CREATE DATABASE {name}")
            _created_databases.append((admin, name))
            parts = urllib.parse.urlsplit(database_url)
            url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))
            _migrate(REPO_ROOT, server_env(_scratch_folder() / "data", "template-" + secrets.token_hex(8), DATABASE_URL=url))
            _templates[key] = name
        return _templates[key]


def _create_database(admin, name, template=None):
    """CREATE DATABASE, from `template` when given. A template's last connection (its migrate
    just exited) may take a moment to leave the server: PostgreSQL refuses the copy meanwhile."""
    import psycopg

    deadline = time.monotonic() + 10
    while True:
        try:
            with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
            return
        except psycopg.errors.ObjectInUse:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


# --- services --------------------------------------------------------------------------------

_created_databases = []


def _admin_url(database_url):
    """The same PostgreSQL server's maintenance database, for CREATE/DROP DATABASE."""
    parts = urllib.parse.urlsplit(database_url)
    return urllib.parse.urlunsplit(("postgresql", parts.netloc, "/postgres", "", ""))


def fresh_database(database_url):
    """CREATE a new, empty database on the PostgreSQL server of `database_url` and return its
    URL. Dropped when this process exits."""
    import psycopg

    name = "relaybay_live_" + secrets.token_hex(5)
    admin = _admin_url(database_url)
    try:
        template = _migrated_postgres_template(database_url) if _templates["on"] else None
        _create_database(admin, name, template)
    except psycopg.OperationalError as error:
        raise ServicesUnavailable(f"{SERVICES_NEEDED}: cannot create a database on {admin}: {error}") from None
    _created_databases.append((admin, name))
    parts = urllib.parse.urlsplit(database_url)
    url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))
    if template:
        _migrated_databases.add(url)
    return url


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


def check_redis(redis_url):
    import redis

    try:
        redis.Redis.from_url(redis_url, socket_timeout=3, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        raise ServicesUnavailable(f"{SERVICES_NEEDED}: Redis at {redis_url} does not answer: {error}") from None


def scale_out_env(database_url=None, redis_url=None):
    """Environment for servers that share one fresh PostgreSQL database and one Redis channel
    prefix: the scale-out configuration (default: the services this machine kind runs)."""
    redis_url = redis_url or DEFAULT_REDIS_URL
    check_redis(redis_url)
    return {
        "DATABASE_URL": fresh_database(database_url or DEFAULT_DATABASE_URL),
        "REDIS_URL": redis_url,
        "RELAYBAY_REDIS_PREFIX": "relaybay-live-" + secrets.token_hex(5),
    }


# --- servers ---------------------------------------------------------------------------------


def server_env(data_dir, token, **env):
    """The environment of a server (or a manage.py command) on `data_dir`: the caller's, less
    NOT_INHERITED, plus the services kept with the data folder, plus `env`."""
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


def answers(url, token):
    request = urllib.request.Request(f"{url}/api/sessions_list", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


class Server:
    """relaybay on a data folder: `processes` daphne processes (kind "daphne"; sharing one port,
    or each on its own with separate_ports) or one gunicorn master with `processes` sync workers
    (kind "gunicorn"). `app` / `wsgi_app` name the entry points (the benchmarks add reference
    routes); `root` is the checkout whose code runs (another one for side-by-side runs)."""

    def __init__(
        self,
        data_dir,
        *,
        token=None,
        env=None,
        kind="daphne",
        processes=1,
        separate_ports=False,
        app="relaybay.asgi:application",
        wsgi_app="relaybay.wsgi:application",
        root=REPO_ROOT,
        log_path=None,
    ):
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.token = token or "live-" + secrets.token_urlsafe(16)
        env = dict(env or {})
        stored = self.data_dir / SERVER_ENV_FILE
        if not stored.exists():
            stored.write_text(json.dumps({k: v for k, v in env.items() if k in SERVICE_KEYS}))
        self.env = server_env(self.data_dir, self.token, **env)
        self.kind, self.processes, self.separate_ports = kind, processes, separate_ports
        self.app, self.wsgi_app = app, wsgi_app
        self.root = Path(root)
        self.log_path = Path(log_path) if log_path else self.data_dir / "server.log"
        self.procs, self.urls = [], []

    @property
    def url(self):
        return self.urls[0]

    @property
    def owner_token(self):
        """The owner token (docs/rules.md §6): the server's RELAYBAY_OWNER_TOKEN, else the one its
        settings made in the data folder."""
        return self.env.get("RELAYBAY_OWNER_TOKEN") or (self.data_dir / "owner-token").read_text().strip()

    @property
    def label(self):
        if self.kind == "gunicorn":
            return f"gunicorn, {self.processes} sync worker{'s' if self.processes > 1 else ''} (WSGI)"
        return f"daphne, {self.processes} process{'es' if self.processes > 1 else ''}"

    def command(self, fd):
        # Access logs on, as daphne has it by default (`make run`).
        if self.kind == "gunicorn":
            return [str(VENV_BIN / "gunicorn"), "-w", str(self.processes), "--bind", f"fd://{fd}", "--access-logfile", "-",
                    "--timeout", "60", "--backlog", "1024", self.wsgi_app]
        # daphne with relaybay's header timeout, as `make run` starts it (relaybay/serve.py); a
        # checkout from before that launcher (bench's --old REV) runs plain daphne.
        launcher = "relaybay.serve" if (self.root / "relaybay" / "serve.py").exists() else "daphne"
        return [sys.executable, "-m", launcher, "--fd", str(fd), self.app]

    def command_lines(self):
        """How the processes were started, for reports."""
        line = " ".join(Path(part).name if i == 0 else part for i, part in enumerate(self.command("FD")))
        if self.kind == "daphne" and self.processes > 1:
            sharing = "each on its own port" if self.separate_ports else "each on its own SO_REUSEPORT socket of one port"
            return [f"{line}  (×{self.processes}, {sharing})"]
        return [line]

    def migrate(self):
        """`manage.py migrate` on the server's database; with migrated templates in use, a copy
        of the migrated database instead when the data folder or the database is fresh."""
        database_url = self.env.get("DATABASE_URL", "")
        if _templates["on"] and database_url in _migrated_databases:
            return
        database = self.data_dir / "relaybay.sqlite3"
        if _templates["on"] and not database_url and not database.exists():
            shutil.copyfile(_migrated_sqlite(self.root), database)
            database.chmod(0o600)
            return
        _migrate(self.root, self.env)

    def start(self, migrate=True, ready_timeout=60.0, ports=None):
        """Start the processes (on `ports`, one per url, when given: a restart) and wait until
        each url answers."""
        if migrate:
            self.migrate()
        per_process = self.kind == "daphne" and (self.separate_ports or self.processes == 1)
        count = self.processes if self.kind == "daphne" else 1
        ports = list(ports or [])
        with open(self.log_path, "ab") as log:
            port = ports[0] if ports else 0
            for i in range(count):
                if self.separate_ports:
                    port = ports[i] if i < len(ports) else 0
                with listening_socket(port, reuseport=self.kind == "daphne" and count > 1 and not self.separate_ports) as sock:
                    port = sock.getsockname()[1]
                    self.procs.append(subprocess.Popen(
                        self.command(sock.fileno()), cwd=self.root, env=self.env, stdout=log, stderr=subprocess.STDOUT, pass_fds=[sock.fileno()]
                    ))
                # Only the server holds its socket now: when it dies, connections are refused.
                if per_process or i == 0:
                    self.urls.append(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + ready_timeout
        for url in self.urls:
            while not answers(url, self.token):
                if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                    self.stop()
                    raise RuntimeError(f"relaybay did not come up; server log:\n{self.log_path.read_text(errors='replace')[-3000:]}")
                time.sleep(0.1)
        if count > 1 and not self.separate_ports:
            # One answer came from one process; give the others time to reach their accept loop.
            time.sleep(1.5)
        return self

    @property
    def pids(self):
        """The pids doing the work (gunicorn: its workers)."""
        if self.kind != "gunicorn":
            return [p.pid for p in self.procs]
        out = subprocess.run(["pgrep", "-P", str(self.procs[0].pid)], capture_output=True, text=True)
        return [int(x) for x in out.stdout.split()]

    def stop(self, timeout=15.0):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    def kill(self):
        """kill -9: no shutdown, no goodbye to the database or the clients."""
        for p in self.procs:
            p.kill()
            p.wait(10)
        self.procs = []

    def restart(self, ready_timeout=30.0):
        """Start again on the same data folder, services, token and ports."""
        ports = [int(url.rsplit(":", 1)[1]) for url in self.urls]
        self.stop()
        self.urls = []
        return self.start(migrate=False, ready_timeout=ready_timeout, ports=ports)

    def manage(self, *args, check=True, **env):
        """`python manage.py ARGS` on this server's data folder and services (RELAYBAY_URL set)."""
        completed = subprocess.run(
            [sys.executable, str(self.root / "manage.py"), *args],
            cwd=self.root, env={**self.env, "RELAYBAY_URL": self.url, **env}, capture_output=True, text=True, timeout=120,
        )
        if check and completed.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{completed.stderr[-3000:]}")
        return completed

    def create_owner(self, username, password):
        """The board's owner account (createsuperuser)."""
        self.manage("createsuperuser", "--noinput", "--username", username, "--email", "", DJANGO_SUPERUSER_PASSWORD=password)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# The browser these machines drive the board with (Debian's Chromium; never `playwright install`).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]


def log_in(page, url, username, password):
    """Log the owner in through the board's login form in a Playwright page."""
    page.goto(f"{url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/")


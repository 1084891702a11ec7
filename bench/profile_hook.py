"""Where a daphne process spends its time under hook load: py-spy on the server during wrk.

    .venv/bin/python bench/profile_hook.py [--backend sqlite|pg] [--duration 12] [--target hook|empty] [--json FILE]

The same load as bench/throughput.py (50 sessions, wrk -c50) on one daphne process; py-spy
samples the process (`--gil`: only the thread holding the GIL, i.e. where the CPU goes, since
one process is bound by one core's worth of Python). Prints the share of samples under chosen
frames (inclusive) and the top frames by self time. The raw collapsed stacks are kept with
--keep FILE (feed them to flamegraph.pl or speedscope).
"""

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    Backend,
    Client,
    Server,
    hook_payload,
    run_wrk,
    start_sessions,
    throwaway_dir,
    write_json,
    write_lua,
)
from bench.throughput import SESSIONS, TURN  # noqa: E402
from tests.devserver import VENV_BIN  # noqa: E402

# py-spy frames look like "qualname (path/relative/to/site-packages.py:line)".
def _in(*paths):
    return lambda f: any(f"({p}" in f for p in paths)


def _fn(*names):
    return lambda f: f.startswith(tuple(f"{n} (" for n in names))


# (label, predicate on one frame) — inclusive shares worth naming.
BUCKETS = [
    ("hook view: ingest_hook (all of it)", _fn("ingest_hook")),
    ("  link lookup (_find_link)", _fn("_find_link")),
    ("  _apply_event (link + session UPDATEs)", _fn("_apply_event")),
    ("  record_event (Event INSERT, full-text trigger)", _fn("record_event")),
    ("  pending (2 EXISTS in one statement)", _fn("pending")),
    ("  stored_fields / _clip", _fn("stored_fields", "_clip")),
    ("  transaction.atomic enter/exit (BEGIN IMMEDIATE, COMMIT)", _fn("Atomic.__enter__", "Atomic.__exit__")),
    ("  on-commit pings (channel layer)", _fn("run_and_clear_commit_hooks", "send_to_group")),
    ("database thread hop (core/dbthreads.py)", _in("core/dbthreads.py")),
    ("SQL in the driver (SQLite / psycopg execute)", _fn("SQLiteCursorWrapper.execute", "Cursor.execute", "Cursor._execute")),
    ("ORM query building and compiling", lambda f: "(django/db/models/sql/" in f or "(django/db/models/query.py" in f),
    ("database connection open / close / pool", lambda f: _fn("DatabaseWrapper.get_new_connection", "BaseDatabaseWrapper.connect",
                                                            "BaseDatabaseWrapper.close", "BaseDatabaseWrapper._close",
                                                            "close_old_connections")(f) or "(psycopg_pool/" in f),
    ("request body → json.loads (_read_payload)", _fn("_read_payload")),
    ("Django ASGI handler", _in("django/core/handlers/asgi.py")),
    ("middleware chain", _in("django/utils/deprecation.py", "django/middleware/", "django/contrib/sessions/middleware",
                             "django/contrib/auth/middleware", "django/contrib/messages/middleware", "django_htmx/")),
    ("django-ninja operation (auth, params, response)", _in("ninja/operation.py")),
    ("asgiref sync_to_async (thread hop)", _in("asgiref/sync.py")),
    ("a new thread per request (ThreadPoolExecutor submit / Thread.start / shutdown)",
     _fn("ThreadPoolExecutor.submit", "ThreadPoolExecutor.shutdown", "Thread.start", "ThreadPoolExecutor._adjust_thread_count")),
    ("daphne / twisted", _in("daphne/", "twisted/")),
    ("asyncio event loop", _in("asyncio/")),
]


def collapse(raw_text):
    stacks = Counter()
    for line in raw_text.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[stack] += int(count)
    return stacks


def analyse(stacks, within=None):
    """Shares of samples; `within`: only stacks with a frame matching it (wall mode: the hook
    requests' own threads, not the idle ones)."""
    if within:
        stacks = Counter({k: v for k, v in stacks.items() if any(within(f) for f in k.split(";"))})
    total = sum(stacks.values()) or 1
    inclusive = Counter()
    self_time = Counter()
    for stack, count in stacks.items():
        frames = stack.split(";")
        for label, predicate in BUCKETS:
            if any(predicate(f) for f in frames):
                inclusive[label] += count
        leaf = frames[-1]
        self_time[leaf] += count
    return (
        total,
        [(label, inclusive[label] / total) for label, _ in BUCKETS],
        [(frame, count / total) for frame, count in self_time.most_common(20)],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "pg"], default="sqlite")
    parser.add_argument("--target", choices=["hook", "empty"], default="hook")
    parser.add_argument("--duration", type=int, default=12)
    parser.add_argument("--rate", type=int, default=250)
    parser.add_argument("--wall", action="store_true", help="sample every thread, idle ones too (where requests wait), instead of --gil")
    parser.add_argument("--keep")
    parser.add_argument("--json")
    args = parser.parse_args()

    backend = Backend(args.backend, pg_name="relaybay_bench_profile")
    backend.prepare()
    try:
        with throwaway_dir("profile") as workdir, Server(workdir, backend) as server:
            client = Client(server.url, server.token)
            ids = start_sessions(client, [f"worker {i:02}" for i in range(SESSIONS)])
            client.close()
            bodies = [json.dumps(hook_payload(event, ids[name])) for event in TURN for name in ids]
            path = "/api/hooks" if args.target == "hook" else "/bench/empty"
            lua = write_lua(workdir / "load.lua", server.token, [(path, b) for b in bodies])
            run_wrk(server.url, lua, duration=3)
            raw_path = workdir / "profile.txt"
            spy = subprocess.Popen(
                [str(VENV_BIN / "py-spy"), "record", "--pid", str(server.pids[0]), "--duration", str(args.duration),
                 "--rate", str(args.rate), *(["--idle"] if args.wall else ["--gil"]), "--nonblocking",
                 "--format", "raw", "--output", str(raw_path)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )
            time.sleep(0.5)
            load = run_wrk(server.url, lua, duration=args.duration - 1)
            _, err = spy.communicate(timeout=args.duration + 60)
            if not raw_path.exists():
                sys.exit(f"py-spy wrote no profile: {err.decode()[-2000:]}")
            raw = raw_path.read_text()
            if args.keep:
                Path(args.keep).write_text(raw)
    finally:
        backend.cleanup()

    within = None
    if args.wall:
        within = _fn("ingest_hook") if args.target == "hook" else _fn("empty")
    total, buckets, top = analyse(collapse(raw), within)
    what = "samples of threads inside the view (wall clock)" if args.wall else "samples with the GIL held"
    print(f"py-spy {'--idle' if args.wall else '--gil'} on one daphne process ({backend.label}) under {args.target} load: "
          f"{load['rps']:.0f} requests/s, {total} {what}")
    print(f"\nshare of {what} under (inclusive):")
    for label, share in buckets:
        print(f"  {share:6.1%}  {label}")
    print("\ntop frames by self time:")
    for frame, share in top:
        print(f"  {share:6.1%}  {frame}")
    write_json(args.json, {"backend": backend.label, "target": args.target, "rps": load["rps"], "samples": total,
                           "mode": "wall" if args.wall else "gil", "what": what,
                           "buckets": buckets, "top_self": top})


if __name__ == "__main__":
    main()

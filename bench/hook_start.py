"""The command-hook client's start, end to end: this checkout's, and with --old another commit's.

    .venv/bin/python bench/hook_start.py [--old REV] [--runs 200] [--block 10] [--python PATH]

Every hook event starts the client as a new process, so its start is what a session pays per
event. A stub HTTP server in this process answers every POST with `{}`; each case is a process
start fed a PostToolUse payload on stdin:
  python3 -S -c pass     the interpreter's floor
  new  (this checkout)   `python3 -S bin/relaybay-hook` (an entry script over the imported
                         package relaybay_hook/, read from cached bytecode)
  old  (REV)             with --old REV, a commit whose client is one file
                         (sessions_app/hooks/relaybay_hook.py): `python3 -S <that file>`, one
                         script compiled from source on every start
and the same clients with relaybay down (the event goes to the spool: the rare path).
Cases run in interleaved blocks of --block starts, so load from other work on the machine hits
every case alike. Prints medians and ratios; asserts nothing.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO_ROOT, HOOK_CLIENT, ratio, real_python3, summary  # noqa: E402

OLD_PATH = "sessions_app/hooks/relaybay_hook.py"


class Answer(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def old_client(commit, folder):
    """The hook client file as it was at `commit`, written where nothing else imports it."""
    source = subprocess.run(["git", "show", f"{commit}:{OLD_PATH}"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    path = Path(folder) / "relaybay_hook.py"
    path.write_bytes(source)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", metavar="REV", help=f"also time the single-file client ({OLD_PATH}) of this git revision")
    parser.add_argument("--runs", type=int, default=200, help="starts per case")
    parser.add_argument("--block", type=int, default=10, help="starts of one case in a row")
    parser.add_argument("--python", default=None, help="interpreter (default: the machine's python3, as claude_config picks)")
    args = parser.parse_args()

    python3 = args.python or real_python3()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    payload = json.dumps({"session_id": "bench", "hook_event_name": "PostToolUse", "cwd": "/tmp", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "tool_response": {"stdout": "a\nb\n"}}).encode()
    with tempfile.TemporaryDirectory(prefix="relaybay-hook-start-") as folder:
        old = old_client(args.old, folder) if args.old else None
        spool = Path(folder) / "spool.jsonl"
        up = {"PATH": "/usr/bin:/bin", "HOME": folder, "RELAYBAY_URL": url, "RELAYBAY_TOKEN": "t", "RELAYBAY_SPOOL": str(spool)}
        down = {**up, "RELAYBAY_URL": "http://127.0.0.1:1", "RELAYBAY_SPOOL": str(Path(folder) / "down.jsonl")}
        cases = {
            "python3 -S -c pass": ([python3, "-S", "-c", "pass"], up),
            "new, answered": ([python3, "-S", str(HOOK_CLIENT)], up),
            "new, spooled": ([python3, "-S", str(HOOK_CLIENT)], down),
        }
        if old:
            cases[f"old ({args.old}), answered"] = ([python3, "-S", str(old)], up)
            cases[f"old ({args.old}), spooled"] = ([python3, "-S", str(old)], down)
        samples = {name: [] for name in cases}
        outputs = {name: set() for name in cases}
        for name, (cmd, env) in cases.items():  # warm-up: page cache, and the new client's .pyc
            for _ in range(3):
                subprocess.run(cmd, input=payload, env=env, capture_output=True)
        print(f"{python3}: {args.runs} starts per case in blocks of {args.block} …", flush=True)
        done = 0
        while done < args.runs:
            n = min(args.block, args.runs - done)
            for name, (cmd, env) in cases.items():
                for _ in range(n):
                    started = time.perf_counter()
                    run = subprocess.run(cmd, input=payload, env=env, capture_output=True)
                    samples[name].append((time.perf_counter() - started) * 1000)
                    outputs[name].add((run.returncode, run.stdout))
            done += n
            (Path(folder) / "down.jsonl").unlink(missing_ok=True)  # keep the spooled case's file small
        server.shutdown()

    stats = {name: summary(values) for name, values in samples.items()}
    floor = stats["python3 -S -c pass"]["median"]
    print(f"\n{'case':34} {'median':>9} {'p90':>9}  × floor   outputs")
    for name, s in stats.items():
        print(f"{name:34} {s['median']:7.2f}ms {s['p90']:7.2f}ms  {ratio(s['median'], floor):5.2f}×   {sorted(outputs[name])}")
    for state in ("answered", "spooled") if old else ():
        new = stats[f"new, {state}"]["median"]
        before = stats[f"old ({args.old}), {state}"]["median"]
        print(f"new / old, {state}: {ratio(new, before):.3f}×  "
              f"(above the floor: new {new - floor:.2f} ms, old {before - floor:.2f} ms)")


if __name__ == "__main__":
    main()

"""What checking the listener costs a hook: the client of this checkout beside the client of
another revision (--before, default main), each started per event against a stub server, and
the check alone, in process (relaybay_hook/peer.py: netlink's exact lookup, and the
/proc/net/tcp read it falls back to).

    .venv/bin/python bench/listener_check.py [--before REV] [--runs 200] [--block 10]

Cases run in interleaved blocks, so load from other work hits every case alike. Prints medians
and ratios; asserts nothing.
"""

import argparse
import io
import json
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import HOOK_CLIENT, REPO_ROOT, ratio, real_python3, summary  # noqa: E402
from bench.hook_start import Answer  # noqa: E402
from relaybay_hook import peer  # noqa: E402


def client_at(rev, folder):
    """The entry script and package of `rev`, unpacked in `folder`."""
    archive = subprocess.run(["git", "archive", rev, "bin/relaybay-hook", "relaybay_hook"], cwd=REPO_ROOT,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return Path(folder) / "bin" / "relaybay-hook"


def per_call(function, rounds):
    started = time.perf_counter()
    for _ in range(rounds):
        function()
    return (time.perf_counter() - started) / rounds * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="the revision to compare with (default main)")
    parser.add_argument("--runs", type=int, default=200, help="starts per case")
    parser.add_argument("--block", type=int, default=10, help="starts of one case in a row")
    args = parser.parse_args()

    python3 = real_python3()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    payload = json.dumps({"session_id": "bench", "hook_event_name": "PostToolUse", "cwd": "/tmp", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "tool_response": {"stdout": "a\nb\n"}}).encode()

    with socket.create_connection(("127.0.0.1", server.server_address[1])) as sock:
        family, there, here = sock.family, sock.getpeername(), sock.getsockname()
        netlink = per_call(lambda: peer.check(sock), 2000)
        proc = per_call(lambda: peer._owner_by_proc(family, there, here), 50)
    with open("/proc/net/tcp") as f:
        sockets = len(f.read().splitlines()) - 1

    with tempfile.TemporaryDirectory(prefix="relaybay-listener-check-") as folder:
        before = client_at(args.before, Path(folder) / "before")
        env = {"PATH": "/usr/bin:/bin", "HOME": folder, "RELAYBAY_URL": url, "RELAYBAY_TOKEN": "t",
               "RELAYBAY_SPOOL": str(Path(folder) / "spool.jsonl")}
        cases = {
            "python3 -S -c pass": [python3, "-S", "-c", "pass"],
            f"client of {args.before}": [python3, "-S", str(before)],
            "client of this checkout": [python3, "-S", str(HOOK_CLIENT)],
        }
        samples = {name: [] for name in cases}
        for cmd in cases.values():  # warm-up: page cache and .pyc
            for _ in range(3):
                subprocess.run(cmd, input=payload, env=env, capture_output=True)
        done = 0
        while done < args.runs:
            n = min(args.block, args.runs - done)
            for name, cmd in cases.items():
                for _ in range(n):
                    started = time.perf_counter()
                    subprocess.run(cmd, input=payload, env=env, capture_output=True)
                    samples[name].append((time.perf_counter() - started) * 1000)
            done += n
    server.shutdown()

    print(f"the check alone: netlink {netlink:.1f} µs, /proc/net/tcp {proc:.0f} µs "
          f"({sockets} sockets listed), {ratio(proc, netlink):.0f}× netlink")
    stats = {name: summary(values) for name, values in samples.items()}
    floor = stats["python3 -S -c pass"]["median"]
    print(f"\n{'case':34} {'median':>9} {'p90':>9}  × floor")
    for name, s in stats.items():
        print(f"{name:34} {s['median']:7.2f}ms {s['p90']:7.2f}ms  {ratio(s['median'], floor):5.2f}×")
    after, then = stats["client of this checkout"]["median"], stats[f"client of {args.before}"]["median"]
    print(f"this checkout / {args.before}: {ratio(after, then):.3f}× ({after - then:+.2f} ms a hook)")


if __name__ == "__main__":
    main()

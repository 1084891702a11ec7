"""Needs you latency (docs/rules.md §8): the real hook client holding a PermissionRequest open.

    .venv/bin/python bench/approvals.py [--configs sqlite,pg] [--rounds 30] [--json FILE]

Each round starts `python3 -S bin/relaybay-hook` with a PermissionRequest payload, as Claude Code
does when a tool needs permission, and times
- hook start → on the board: from starting the client to the request's row committed, which
  is when the board's refresh ping goes out (read from the database every 2 ms beside the server,
  so as not to load it: up to 2 ms of it is the poll's);
- owner's POST → tool runs: from sending `POST /api/approvals/{id}` (allow) to the client
  printing its answer and exiting, which is when Claude Code runs the tool;
beside one ordinary hook event (a PreToolUse through the same client, start to exit) and the
bare interpreter (`python3 -S -c pass`), as ratios. Prints medians; asserts nothing.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import DB, Backend, Client, Server, hook_payload, real_python3, start_sessions, summary, throwaway_dir, write_json  # noqa: E402

HOOK = Path(__file__).resolve().parents[1] / "bin" / "relaybay-hook"
POLL = 0.002


def client_env(server, spool):
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(spool.parent), "RELAYBAY_URL": server.urls[0],
            "RELAYBAY_TOKEN": server.token, "RELAYBAY_SPOOL": str(spool), "CLAUDE_CODE_SESSION_ATTENDED": "1"}  # fmt: skip


def one_event(python, env, payload):
    started = time.perf_counter()
    subprocess.run([python, "-S", str(HOOK)], input=json.dumps(payload).encode(), env=env, capture_output=True, check=True)
    return (time.perf_counter() - started) * 1000


def bare(python):
    started = time.perf_counter()
    subprocess.run([python, "-S", "-c", "pass"], check=True)
    return (time.perf_counter() - started) * 1000


def run_config(kind, rounds):
    backend = Backend(kind, pg_name=f"relaybay_bench_approvals_{kind}")
    backend.prepare()
    python = real_python3()
    samples = {"hook start → on the board": [], "owner's POST → tool runs": [], "one PreToolUse event": [], "python3 -S -c pass": []}
    try:
        with throwaway_dir("approvals") as workdir, Server(workdir, backend) as server:
            agent = Client(server.urls[0], server.token)
            owner = Client(server.urls[0], server.owner_token)
            db = DB(backend, server.data_dir)
            hook_session = start_sessions(agent, ["worker"])["worker"]
            env = client_env(server, Path(workdir) / "spool" / "spool.jsonl")
            print(f"  {backend.label}, {server.label} …", flush=True)
            for i in range(rounds + 2):
                payload = hook_payload("PermissionRequest", hook_session, tool_name="Bash", tool_input={"command": f"touch /tmp/bench-{i}"})
                started = time.perf_counter()
                hook = subprocess.Popen([python, "-S", str(HOOK)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
                hook.stdin.write(json.dumps(payload).encode())
                hook.stdin.close()
                while True:
                    pk = db.value("SELECT id FROM approvals_request WHERE state = 'pending' ORDER BY id DESC LIMIT 1")
                    if pk:
                        break
                    time.sleep(POLL)
                shown = (time.perf_counter() - started) * 1000
                asked = time.perf_counter()
                status, _ = owner.json("POST", f"/api/approvals/{pk}", {"decision": "allow"})
                answer = hook.stdout.read()
                hook.wait()
                answered = (time.perf_counter() - asked) * 1000
                assert status == 200 and b'"allow"' in answer, (status, answer)
                event = one_event(python, env, hook_payload("PreToolUse", hook_session))
                if i >= 2:  # the first rounds warm the server up
                    samples["hook start → on the board"].append(shown)
                    samples["owner's POST → tool runs"].append(answered)
                    samples["one PreToolUse event"].append(event)
                    samples["python3 -S -c pass"].append(bare(python))
            agent.close()
            owner.close()
            db.close()
    finally:
        backend.cleanup()
    return {"config": backend.label, "results": {name: summary(values) for name, values in samples.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", default="sqlite", help="comma-separated: sqlite, pg")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json")
    args = parser.parse_args()
    results = []
    for kind in args.configs.split(","):
        result = run_config(kind, args.rounds)
        results.append(result)
        stats = result["results"]
        event = stats["one PreToolUse event"]["median"]
        python = stats["python3 -S -c pass"]["median"]
        print(f"  {result['config']}: medians (p90)")
        for name, values in stats.items():
            print(f"    {name:28} {values["median"]:8.1f} ms ({values['p90']:.1f})  × one event {values["median"] / event:5.2f}  × python3 {values["median"] / python:5.2f}")
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()

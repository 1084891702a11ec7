"""Hook server time beside an empty bearer-auth django-ninja view, and the hook clients end to end.

    .venv/bin/python bench/hook_latency.py [--backend sqlite|pg] [--rounds 300] [--spawns 40] [--json FILE]

One daphne process on a throwaway data folder (bench/empty_asgi.py: relaybay plus the reference
routes). Prints figures and ratios; asserts nothing.

Server time: sequential requests, each variant on its own keep-alive connection, interleaved
round by round so drift hits all alike; each request is a Claude Code-sized hook payload:
  bare ASGI      POST /bench/bare        the server's floor (no Django)
  empty view     POST /bench/empty       empty django-ninja view, bearer auth (sync def)
  empty async    POST /bench/empty_async the same as async def
  empty, full chain  POST /bench/chain/empty  the empty view through the board's whole
                 middleware chain: what relaybay.asgi.APIHandler leaves out
  hook, idle     POST /api/hooks         PreToolUse/PostToolUse, exact link, nothing pending
  hook +comment  POST /api/hooks         PreToolUse claiming 1 pending owner comment
  hook +message  POST /api/hooks         PostToolUse claiming 1 pending session message
The comment or message is inserted with SQL between requests (not timed).

End to end: the command hook (`python3 -S bin/relaybay-hook`, payload on stdin) beside a bare
`python3 -c pass`, interleaved; and the http hook path: one POST on a fresh TCP connection.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    DB,
    HOOK_CLIENT,
    Backend,
    Client,
    Server,
    fresh_connection_request,
    hook_payload,
    insert_comment,
    insert_message,
    ratio,
    real_python3,
    session_ids,
    start_sessions,
    summary,
    throwaway_dir,
    write_json,
)
from tests.devserver import NOT_INHERITED  # noqa: E402

HOOK_TARGET = 1.3
CLIENT_TARGET = 1.5


def server_time(server, db, rounds):
    clients = {}
    make = lambda: Client(server.url, server.token)  # noqa: E731
    setup = make()
    ids = start_sessions(setup, ["quiet", "mailbox", "inbox", "writer"])
    rows = session_ids(db, ids)
    writer = (rows["writer"], "writer")
    payloads = {
        "pre": json.dumps(hook_payload("PreToolUse", ids["quiet"])).encode(),
        "post": json.dumps(hook_payload("PostToolUse", ids["quiet"])).encode(),
        "mailbox": json.dumps(hook_payload("PreToolUse", ids["mailbox"])).encode(),
        "inbox": json.dumps(hook_payload("PostToolUse", ids["inbox"])).encode(),
    }
    delivered = {"hook +comment": 0, "hook +message": 0}

    def bare(i):
        return clients["bare ASGI"].request("POST", "/bench/bare", payloads["pre"])

    def empty(i):
        return clients["empty view"].request("POST", "/bench/empty", payloads["pre"])

    def empty_async(i):
        return clients["empty async"].request("POST", "/bench/empty_async", payloads["pre"])

    def empty_chain(i):
        return clients["empty, full chain"].request("POST", "/bench/chain/empty", payloads["pre"])

    def hook_idle(i):
        return clients["hook, idle"].request("POST", "/api/hooks", payloads["pre" if i % 2 else "post"])

    def hook_comment(i):
        insert_comment(db, rows["mailbox"], "mailbox", f"Owner comment {i}: please also update the changelog.")
        status, body, ms = clients["hook +comment"].request("POST", "/api/hooks", payloads["mailbox"])
        delivered["hook +comment"] += b"additionalContext" in body
        return status, body, ms

    def hook_message(i):
        insert_message(db, writer, (rows["inbox"], "inbox"), f"Message {i}: the migration is merged, rebase when you can.")
        status, body, ms = clients["hook +message"].request("POST", "/api/hooks", payloads["inbox"])
        delivered["hook +message"] += b"additionalContext" in body
        return status, body, ms

    variants = {
        "bare ASGI": bare,
        "empty view": empty,
        "empty async": empty_async,
        "empty, full chain": empty_chain,
        "hook, idle": hook_idle,
        "hook +comment": hook_comment,
        "hook +message": hook_message,
    }
    for name in variants:
        clients[name] = make()
    samples = {name: [] for name in variants}
    errors = {name: 0 for name in variants}
    warmup = 30
    for i in range(warmup + rounds):
        for name, call in variants.items():
            status, _, ms = call(i)
            if status != 200:
                errors[name] += 1
            if i >= warmup:
                samples[name].append(ms)
    for name in delivered:
        delivered[name] -= warmup  # warm-up requests delivered too
    return {name: summary(values) for name, values in samples.items()}, errors, delivered, ids


def fresh_connections(server, ids, runs):
    body = json.dumps(hook_payload("PreToolUse", ids["quiet"])).encode()
    samples = {"http hook, fresh connection": [], "empty view, fresh connection": []}
    errors = 0
    for i in range(runs + 5):
        for name, path in (("http hook, fresh connection", "/api/hooks"), ("empty view, fresh connection", "/bench/empty")):
            status, ms = fresh_connection_request(server.url, server.token, "POST", path, body)
            errors += status != 200
            if i >= 5:
                samples[name].append(ms)
    return {name: summary(values) for name, values in samples.items()}, errors


def command_client(server, ids, workdir, spawns):
    python3 = real_python3()
    spool = Path(workdir) / "spool.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED and not k.startswith("RELAYBAY_")}
    hook_env = {**env, "RELAYBAY_URL": server.url, "RELAYBAY_TOKEN": server.token, "RELAYBAY_SPOOL": str(spool)}
    payload = json.dumps(hook_payload("PostToolUse", ids["quiet"])).encode()
    commands = {
        "python3 -c pass": ([python3, "-c", "pass"], None, env),
        "python3 -S -c pass": ([python3, "-S", "-c", "pass"], None, env),
        "command hook (python3 -S bin/relaybay-hook)": ([python3, "-S", str(HOOK_CLIENT)], payload, hook_env),
    }
    samples = {name: [] for name in commands}
    failures = 0
    for i in range(spawns + 3):
        for name, (cmd, stdin, environment) in commands.items():
            started = time.perf_counter()
            run = subprocess.run(cmd, input=stdin, env=environment, capture_output=True)
            ms = (time.perf_counter() - started) * 1000
            failures += run.returncode != 0
            if i >= 3:
                samples[name].append(ms)
    spooled = spool.exists() and spool.stat().st_size > 0
    return {name: summary(values) for name, values in samples.items()}, failures, spooled, python3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "pg"], default="sqlite")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--fresh", type=int, default=100)
    parser.add_argument("--spawns", type=int, default=40)
    parser.add_argument("--json")
    args = parser.parse_args()

    backend = Backend(args.backend, pg_name="relaybay_bench_latency")
    backend.prepare()
    with throwaway_dir("latency") as workdir:
        server = Server(workdir, backend)
        try:
            server.start()
            db = DB(backend, server.data_dir)
            print(f"Hook server time, {backend.label}, {server.label}, {args.rounds} interleaved rounds …", flush=True)
            times, errors, delivered, ids = server_time(server, db, args.rounds)
            fresh, fresh_errors = fresh_connections(server, ids, args.fresh)
            print(f"Command hook client vs python3 start, {args.spawns} interleaved spawns …", flush=True)
            spawn, failures, spooled, python3 = command_client(server, ids, workdir, args.spawns)
            db.close()
        finally:
            server.stop()
            backend.cleanup()

    empty = times["empty view"]["median"]
    print(f"\n{'keep-alive, sequential':30} {'median':>9} {'p90':>9} {'p99':>9}  × empty view")
    for name, s in times.items():
        print(f"{name:30} {s['median']:7.2f}ms {s['p90']:7.2f}ms {s['p99']:7.2f}ms  {ratio(s['median'], empty):5.2f}×")
    hook_ratio = ratio(times["hook, idle"]["median"], empty)
    print(f"hook with nothing pending / empty view = {hook_ratio:.2f}×   (target ≤ {HOOK_TARGET}×)")
    print(f"deliveries made: {delivered}; non-200 answers: {sum(errors.values())}")
    for name, s in fresh.items():
        print(f"{name:30} {s['median']:7.2f}ms {s['p90']:7.2f}ms {s['p99']:7.2f}ms")
    bare = spawn["python3 -c pass"]["median"]
    print(f"\n{'spawned, end to end':42} {'median':>9} {'p90':>9}  × python3 -c pass   ({python3})")
    for name, s in spawn.items():
        print(f"{name:42} {s['median']:7.2f}ms {s['p90']:7.2f}ms  {ratio(s['median'], bare):5.2f}×")
    client_ratio = ratio(spawn["command hook (python3 -S bin/relaybay-hook)"]["median"], bare)
    print(f"command hook / python3 -c pass = {client_ratio:.2f}×   (target ≤ {CLIENT_TARGET}×); "
          f"failed runs: {failures}; spooled (server not reached): {spooled}")

    write_json(args.json, {
        "backend": backend.label,
        "server": server.label,
        "server_commands": server.command_lines(),
        "rounds": args.rounds,
        "server_time": times,
        "errors": errors,
        "delivered": delivered,
        "hook_ratio": hook_ratio,
        "fresh": fresh,
        "fresh_errors": fresh_errors,
        "spawn": spawn,
        "spawns": args.spawns,
        "spawn_failures": failures,
        "spooled": spooled,
        "client_ratio": client_ratio,
        "python3": python3,
    })


if __name__ == "__main__":
    main()

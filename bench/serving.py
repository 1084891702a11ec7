"""What relaybay's serving choices buy: each beside its plain alternative, and before/after a
change, in one run.

    .venv/bin/python bench/serving.py [--backend sqlite|pg] [--old /tmp/old-checkout]
                                      [--rounds 200] [--duration 3] [--repeats 3] [--json FILE]

Variants, each one daphne process (or gunicorn, 2 sync workers) on a data folder of its own:
  relaybay                this checkout as shipped (bench/empty_asgi.py: relaybay + reference routes)
  no db threads           /api/ sync code on a thread per request, Django's default (experiment)
  full chain              /api/ through the board's middleware chain, no APIHandler (experiment)
  waited sends            pings handed to the loop by the database thread, which waits (experiment)
  old                     another checkout (--old), e.g. `git worktree add /tmp/old <commit>`
  gunicorn, gunicorn old  the JSON API through Django's WSGI handler (docs/scale-out.md)
Experiments: bench/experiments.py.

Server time: sequential keep-alive requests, interleaved round by round over all variants:
the hook with nothing pending (PreToolUse/PostToolUse alternately), the hook claiming one owner
comment inserted with SQL beforehand (its answer, events and board ping), and the empty
bearer-auth view. Throughput: wrk, 50 connections rotating through 50 sessions' turns with
nothing pending (as bench/throughput.py), every repeat runs each variant's empty view then its
hooks, so load from elsewhere on the machine hits all alike; ratios are medians of per-repeat
ratios. Beside requests/s, the server processes' CPU time per request: on a shared machine a
closed loop gets only the CPU the other work leaves it, which moves requests/s far more than
the server's own cost. Prints figures and ratios; asserts nothing.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    DB,
    Backend,
    Client,
    Server,
    hook_payload,
    insert_comment,
    median_run,
    run_wrk,
    session_ids,
    start_sessions,
    summary,
    throwaway_dir,
    write_json,
    write_lua,
)

SESSIONS = 50
TURN = ["UserPromptSubmit", "PreToolUse", "PostToolUse", "PreToolUse", "PostToolUse", "Stop"]


def variants(old, gunicorn):
    found = {
        "relaybay": {},
        "no db threads": {"experiment": "no-db-threads"},
        "full chain": {"experiment": "full-chain"},
        "waited sends": {"experiment": "waited-sends"},
    }
    if old:
        found["old"] = {"root": old}
    if gunicorn:
        found["gunicorn"] = {"kind": "gunicorn", "processes": 2}
        if old:
            found["gunicorn old"] = {"kind": "gunicorn", "processes": 2, "root": old}
    return found


def start(workdir, backend, name, spec, token):
    env = {"BENCH_EXPERIMENT": spec["experiment"]} if "experiment" in spec else {}
    kwargs = {"root": spec["root"]} if "root" in spec else {}
    server = Server(workdir / name.replace(" ", "-"), backend, kind=spec.get("kind", "daphne"),
                    processes=spec.get("processes", 1), token=token, extra_env=env, **kwargs)
    return server.start()


def sequential(servers, rounds):
    setups = {}
    for name, server in servers.items():
        client = Client(server.url, server.token)
        ids = start_sessions(client, ["quiet", "mailbox"])
        db = DB(server.backend, server.data_dir)
        setups[name] = (ids, session_ids(db, ids), db, {k: Client(server.url, server.token) for k in ("idle", "comment", "empty")})
    samples = {name: {"hook, idle": [], "hook +comment": [], "empty view": []} for name in servers}
    errors = {name: 0 for name in servers}
    delivered = {name: 0 for name in servers}
    warmup = 20
    for i in range(warmup + rounds):
        for name in servers:
            ids, rows, db, clients = setups[name]
            event = "PreToolUse" if i % 2 else "PostToolUse"
            calls = [
                ("hook, idle", clients["idle"], "/api/hooks", hook_payload(event, ids["quiet"])),
                ("hook +comment", clients["comment"], "/api/hooks", hook_payload("PreToolUse", ids["mailbox"])),
                ("empty view", clients["empty"], "/bench/empty", hook_payload(event, ids["quiet"])),
            ]
            for label, client, path, payload in calls:
                if label == "hook +comment":
                    insert_comment(db, rows["mailbox"], "mailbox", f"Owner comment {i}: please also update the changelog.")
                status, body, ms = client.request("POST", path, json.dumps(payload).encode())
                errors[name] += status != 200
                if label == "hook +comment":
                    delivered[name] += b"additionalContext" in body
                if i >= warmup:
                    samples[name][label].append(ms)
    for _, _, db, clients in setups.values():
        db.close()
        for client in clients.values():
            client.close()
    return {name: {k: summary(v) for k, v in s.items()} for name, s in samples.items()}, errors, delivered


def throughput(servers, workdir, duration, repeats):
    lua = {}
    for name, server in servers.items():
        client = Client(server.url, server.token)
        ids = start_sessions(client, [f"worker {i:02}" for i in range(SESSIONS)])
        client.close()
        bodies = [json.dumps(hook_payload(event, ids[n])) for event in TURN for n in ids]
        folder = workdir / f"lua-{name.replace(' ', '-')}"
        folder.mkdir()
        lua[name] = (write_lua(folder / "hooks.lua", server.token, [("/api/hooks", b) for b in bodies]),
                     write_lua(folder / "empty.lua", server.token, [("/bench/empty", b) for b in bodies]))
        run_wrk(server.url, lua[name][1], duration=1)
        run_wrk(server.url, lua[name][0], duration=1)
    runs = {name: {"empty view": [], "hook": []} for name in servers}
    for _ in range(repeats):
        for name, server in servers.items():
            runs[name]["empty view"].append(run_wrk(server.url, lua[name][1], duration=duration, pids=server.pids))
            runs[name]["hook"].append(run_wrk(server.url, lua[name][0], duration=duration, pids=server.pids))
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "pg"], default="sqlite")
    parser.add_argument("--old", help="another checkout to measure beside this one")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--duration", type=float, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-gunicorn", action="store_true")
    parser.add_argument("--only", help="comma-separated variant names")
    parser.add_argument("--json")
    args = parser.parse_args()

    chosen = variants(args.old, not args.no_gunicorn)
    if args.only:
        chosen = {k: v for k, v in chosen.items() if k in args.only.split(",")}
    token = "bench-serving-token"
    servers = {}
    with throwaway_dir("serving") as workdir:
        backends = []
        try:
            for i, (name, spec) in enumerate(chosen.items()):
                backend = Backend(args.backend, pg_name=f"relaybay_bench_serving_{i}")
                backend.prepare()
                backends.append(backend)
                servers[name] = start(workdir, backend, name, spec, token)
            print(f"{backends[0].label}: {', '.join(f'{n} ({s.label})' for n, s in servers.items())}", flush=True)
            daphne = {n: s for n, s in servers.items() if s.kind == "daphne"}
            times, errors, delivered = sequential(daphne, args.rounds)
            runs = throughput(servers, workdir, int(args.duration), args.repeats)
        finally:
            for server in servers.values():
                server.stop()
            for backend in backends:
                backend.cleanup()

    print(f"\nServer time, {args.rounds} interleaved rounds (median ms; ratio to relaybay):")
    base = times["relaybay"]
    print(f"{'variant':16}" + "".join(f"{label:>24}" for label in base))
    for name, s in times.items():
        cells = "".join(f"{s[k]['median']:9.2f} ({ratio(s[k]['median'], base[k]['median']):4.2f}×) p90 {s[k]['p90']:5.2f}" for k in s)
        print(f"{name:16}{cells}")
    print(f"comments delivered: {delivered}; non-200 answers: {errors}")

    print(f"\nThroughput, wrk 50 connections, {args.repeats} × {args.duration:g} s (median; ratio to relaybay within each repeat):")
    summary_rows = {}
    for name, r in runs.items():
        hook, empty = median_run(r["hook"]), median_run(r["empty view"])
        ratios = {
            k: statistics.median(a["rps"] / b["rps"] for a, b in zip(r[k], runs["relaybay"][k], strict=True)) for k in ("hook", "empty view")
        }
        # CPU per request: the server's own cost, which the machine's other load moves far less
        # than requests/s (a closed loop gets only the CPU share the machine leaves it).
        cpu = {k: statistics.median(cpu_ms(x) for x in r[k]) for k in ("hook", "empty view")}
        cpu_ratios = {
            k: statistics.median(cpu_ms(a) / cpu_ms(b) for a, b in zip(r[k], runs["relaybay"][k], strict=True)) for k in ("hook", "empty view")
        }
        summary_rows[name] = {"hook": hook, "empty view": empty, "ratio": ratios, "label": servers[name].label,
                              "cpu_ms": cpu, "cpu_ratio": cpu_ratios}
        print(f"{name:16} {servers[name].label:34} hooks {hook['rps']:6.0f}/s ({ratios['hook']:4.2f}×, p99 {hook['p99']:6.1f} ms, "
              f"errors {hook['errors']}, CPU {cpu['hook']:.2f} ms/request {cpu_ratios['hook']:4.2f}×)   "
              f"empty view {empty['rps']:6.0f}/s ({ratios['empty view']:4.2f}×, CPU {cpu['empty view']:.2f} ms {cpu_ratios['empty view']:4.2f}×)")
    write_json(args.json, {"backend": args.backend, "server_time": times, "errors": errors, "delivered": delivered,
                           "throughput": summary_rows, "commands": {n: s.command_lines() for n, s in servers.items()}})


def cpu_ms(run):
    return run["server_cpu"] / run["rps"] * 1000


def ratio(a, b):
    return a / b if b else float("nan")


if __name__ == "__main__":
    main()

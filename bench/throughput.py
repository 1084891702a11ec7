"""Hook throughput with 50 concurrent simulated sessions, beside the empty view on the same server.

    .venv/bin/python bench/throughput.py [--groups "sqlite:1@ 2 wsgi2;pg:1 2@ wsgi2"]
                                         [--duration 4] [--repeats 3] [--open-rate 50] [--json FILE]

A group is one database and the servers measured side by side on it: `sqlite:` (a throwaway data
folder) or `pg:` (a fresh PostgreSQL database, Redis db 13 as the channel layer), then one
server per word: `N` = N daphne processes on one shared socket, `wsgiN` = gunicorn with N sync
workers on Django's WSGI handler (the JSON API only), `+name` = a benchmark-only experiment
(bench/experiments.py), `+KEY=VALUE` = a server environment setting, a trailing `@` = also measure latency at a paced load (below).

50 sessions start with exact links; wrk (50 connections, one thread) then rotates through them
with a Lua script, each session running turns of UserPromptSubmit, PreToolUse, PostToolUse,
PreToolUse, PostToolUse, Stop with nothing pending; the empty view (POST /bench/empty) gets the
same 300 bodies. After a warm-up, every repeat runs, for each server of the group in turn, the
empty view then the hook, so the servers and both routes share the machine's ups and downs; a
figure is the median over repeats, and a ratio is the median of the ratios within each repeat.

Paced load (`@`): --open-rate requests/s offered in all, at fixed times, across the 50 sessions
(open loop: latency counts from the scheduled send, so queueing is not hidden).
Prints figures and ratios; asserts nothing.
"""

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    Backend,
    Client,
    Server,
    hook_payload,
    median_run,
    open_loop,
    run_wrk,
    start_sessions,
    throwaway_dir,
    write_json,
    write_lua,
)

SESSIONS = 50
TURN = ["UserPromptSubmit", "PreToolUse", "PostToolUse", "PreToolUse", "PostToolUse", "Stop"]
DEFAULT_GROUPS = "sqlite:1@ 2 wsgi2;pg:1 2@ wsgi2"
SHARE_TARGET = 0.70
P99_TARGET = 100
SCALE_TARGET = 1.6


def parse_server(word):
    """"2" → daphne ×2; "wsgi2" → gunicorn; "1+NAME@" → experiment NAME, paced;
    "2+RELAYBAY_DB_POOL_SIZE=40" → an environment setting for that server."""
    paced = word.endswith("@")
    word = word.removesuffix("@")
    spec, *extras = word.split("+")
    kind = "gunicorn" if spec.startswith("wsgi") else "daphne"
    env = dict(x.split("=", 1) for x in extras if "=" in x)
    experiments = [x for x in extras if "=" not in x]
    if experiments:
        env["BENCH_EXPERIMENT"] = ",".join(experiments)
    return kind, int(spec.removeprefix("wsgi") or 1), env, paced


def server_errors(log_path):
    """Distinct exception lines from the server log (the last line of each traceback)."""
    lines = log_path.read_text(errors="replace").splitlines()
    found = {}
    for i, line in enumerate(lines):
        if line.startswith("Traceback"):
            for follow in lines[i + 1 :]:
                if follow and not follow.startswith((" ", "Traceback", "During handling", "The above exception")):
                    found[follow[:300]] = found.get(follow[:300], 0) + 1
                    break
    return [f"{count}× {text}" for text, count in found.items()]


def run_group(group, duration, repeats, warmup, open_rate):
    backend_kind, _, words = group.partition(":")
    backend = Backend(backend_kind, pg_name=f"relaybay_bench_tp_{backend_kind}")
    backend.prepare()
    servers = {}
    try:
        with throwaway_dir("throughput") as workdir:
            token = "bench-throughput-token"
            try:
                for i, word in enumerate(words.split()):
                    kind, processes, env, paced = parse_server(word)
                    key = f"{backend_kind}:{word.removesuffix('@')}"
                    experiment = " ".join(f"{k}={v}" if k != "BENCH_EXPERIMENT" else v for k, v in env.items())
                    # Every server of the group on the same database (one data folder).
                    server = Server(workdir, backend, processes=processes, kind=kind, token=token, extra_env=env)
                    server.log_path = server.data_dir / f"server-{i}.log"
                    server.start(migrate=i == 0)
                    servers[key] = (server, experiment, paced)
                first = next(iter(servers.values()))[0]
                client = Client(first.url, token)
                ids = start_sessions(client, [f"worker {i:02}" for i in range(SESSIONS)])
                client.close()
                bodies = [json.dumps(hook_payload(event, ids[name])) for event in TURN for name in ids]
                hook_lua = write_lua(workdir / "hooks.lua", token, [("/api/hooks", b) for b in bodies])
                empty_lua = write_lua(workdir / "empty.lua", token, [("/bench/empty", b) for b in bodies])
                print(f"  {backend.label}: " + ", ".join(
                    s.label + (f" [+{e}]" if e else "") for s, e, _ in servers.values()) + " — warm-up …", flush=True)
                for server, _, _ in servers.values():
                    run_wrk(server.url, empty_lua, duration=warmup)
                    run_wrk(server.url, hook_lua, duration=warmup)
                runs = {key: {"empty view": [], "hook": []} for key in servers}
                for _ in range(repeats):
                    for key, (server, _, _) in servers.items():
                        pids = server.pids
                        runs[key]["empty view"].append(run_wrk(server.url, empty_lua, duration=duration, pids=pids))
                        runs[key]["hook"].append(run_wrk(server.url, hook_lua, duration=duration, pids=pids))
                results = {}
                for key, (server, experiment, paced) in servers.items():
                    r = {name: median_run(v) for name, v in runs[key].items()}
                    r["share"] = statistics.median(
                        h["rps"] / e["rps"] for h, e in zip(runs[key]["hook"], runs[key]["empty view"], strict=True)
                    )
                    r["hook_rps_runs"] = [x["rps"] for x in runs[key]["hook"]]
                    r["empty_rps_runs"] = [x["rps"] for x in runs[key]["empty view"]]
                    r["backend"] = backend.label
                    r["server"] = server.label + (f" [experiment: {experiment}]" if experiment else "")
                    r["experiment"] = experiment
                    r["server_commands"] = server.command_lines()
                    if paced:
                        for name, path in (("empty view", "/bench/empty"), ("hook", "/api/hooks")):
                            # session i's turn is bodies[i::50]
                            turns = [[(path, b) for b in bodies[i::SESSIONS]] for i in range(SESSIONS)]
                            r[f"open {name}"] = open_loop(server.url, token, turns, open_rate, duration)
                    results[key] = r
                    print(f"    {r['server']}", flush=True)
                    for name in ("empty view", "hook"):
                        x = r[name]
                        print(f"      {name:11} {x['rps']:7.1f}/s  p50 {x['p50']:6.1f} ms  p99 {x['p99']:6.1f} ms  "
                              f"errors {x['errors']}  CPU: server {x['server_cpu']:.0%}, postgres+redis {x['services_cpu']:.0%}, "
                              f"whole machine {x['machine_cpu']:.0%} of {os.cpu_count()}00%  (runs: {x['all_rps']})", flush=True)
                        if x["error_sample"]:
                            print(f"        e.g. {x['error_sample'][0]}")
                    print(f"      hook ÷ empty view: {r['share']:.0%} (median of the per-repeat ratios)")
                    for name in ("empty view", "hook"):
                        o = r.get(f"open {name}")
                        if o:
                            print(f"      {name:11} paced at {open_rate}/s: p50 {o['median']:6.1f} ms  p99 {o['p99']:6.1f} ms  "
                                  f"errors {o['errors']}", flush=True)
            finally:
                for server, _, _ in servers.values():
                    server.stop()
            for key, (server, _, _) in servers.items():
                results[key]["server_errors"] = server_errors(server.log_path)
                for line in results[key]["server_errors"][:5]:
                    print(f"      {key} server log: {line}")
            return results, runs
    finally:
        backend.cleanup()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default=DEFAULT_GROUPS, help="groups separated by ';' (see above)")
    parser.add_argument("--duration", type=int, default=4, help="seconds per measured wrk run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--open-rate", type=int, default=50, help="requests/s offered in all for the paced measurement")
    parser.add_argument("--json")
    args = parser.parse_args()

    print(f"Hook throughput, {SESSIONS} concurrent sessions (wrk -t1 -c50), {args.repeats}×{args.duration} s per figure …")
    results, scale = {}, {}
    for group in args.groups.split(";"):
        found, runs = run_group(group.strip(), args.duration, args.repeats, args.warmup, args.open_rate)
        results.update(found)
        backend = group.strip().split(":")[0]
        one, two = runs.get(f"{backend}:1"), runs.get(f"{backend}:2")
        if one and two:
            scale[backend] = {
                "hook": statistics.median(b["rps"] / a["rps"] for a, b in zip(one["hook"], two["hook"], strict=True)),
                "empty view": statistics.median(b["rps"] / a["rps"] for a, b in zip(one["empty view"], two["empty view"], strict=True)),
            }

    print(f"\n{'server':62} {'empty/s':>8} {'hook/s':>8} {'hook/empty':>10} {'p50':>8} {'p99':>8} {'errors':>6}")
    for key, r in results.items():
        h, e = r["hook"], r["empty view"]
        print(f"{key:14} {r['server'][:47]:47} {e['rps']:8.1f} {h['rps']:8.1f} {r['share']:9.0%} "
              f"{h['p50']:6.1f}ms {h['p99']:6.1f}ms {h['errors']:6d}")
    if "sqlite:1" in results:
        r = results["sqlite:1"]
        print(f"SQLite, 1 daphne: hook/empty = {r['share']:.0%} (target ≥ {SHARE_TARGET:.0%}), "
              f"p99 {r['hook']['p99']:.1f} ms (target < {P99_TARGET} ms), errors {r['hook']['errors']} (target 0)")
    for backend, s in scale.items():
        print(f"{backend}: 2 daphne processes ÷ 1 = {s['hook']:.2f}× hook events/s, {s['empty view']:.2f}× empty-view requests/s"
              + (f" (target ≥ {SCALE_TARGET}× for hooks)" if backend == "pg" else ""))
    write_json(args.json, {"configs": results, "scale": scale, "sessions": SESSIONS, "duration": args.duration,
                           "repeats": args.repeats, "open_rate": args.open_rate, "groups": args.groups})


if __name__ == "__main__":
    main()

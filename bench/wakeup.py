"""Wake-up latency: POST /api/message_send → the waiting GET /api/hooks/wait answers.

    .venv/bin/python bench/wakeup.py [--configs sqlite:1,pg:2] [--wakes 30] [--json FILE]

An idle session with an exact link has its wake-up waiter (the asyncRewake Stop hook's long
poll) waiting; another session sends it a message. Timed from just before the send request to
the waiter's answer arriving, on the client side. The waiter is only timed once it is waiting
(its waiter id is in the database and 100 ms have passed, so it has joined its channel group).
`pg:2`: PostgreSQL + Redis with two daphne processes on separate ports: the waiter waits on
process 2, the send goes through process 1 (the wake crosses processes through Redis).
Prints medians; asserts nothing.
"""

import argparse
import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import DB, Backend, Client, Server, hook_payload, start_sessions, summary, throwaway_dir, write_json  # noqa: E402

TARGET_MS = 100
SENDERS = 30
# One sleeper is woken by messages many times with no owner action between: lift the wake-up
# cap (RELAYBAY_WAKE_CAP, 3 by default), which would hold every wake after the third.
NO_WAKE_CAP = {"RELAYBAY_WAKE_CAP": "1000000"}


def run_config(text, wakes):
    backend_kind, _, procs = text.partition(":")
    processes = int(procs or 1)
    backend = Backend(backend_kind, pg_name=f"relaybay_bench_wake_{backend_kind}")
    backend.prepare()
    try:
        with throwaway_dir("wakeup") as workdir, Server(workdir, backend, processes=processes, separate_ports=processes > 1, extra_env=NO_WAKE_CAP) as server:
            db = DB(backend, server.data_dir)
            send_url, wait_url = server.urls[0], server.urls[-1]
            sender_client = Client(send_url, server.token)
            wait_client = Client(wait_url, server.token, timeout=60)
            ids = start_sessions(sender_client, ["sleeper"], busy=False)
            wakers = start_sessions(sender_client, [f"waker {i:02}" for i in range(SENDERS)], busy=False)
            sleeper = ids["sleeper"]
            samples = {"send → waiter answered": [], "send request alone": [], "send answered → waiter answered": []}
            outcomes = {}
            print(f"  {backend.label}, {server.label}"
                  + (" (waiter on process 2, send through process 1)" if processes > 1 else "") + " …", flush=True)
            for i in range(wakes + 2):
                # The session ends its turn: Stop (nothing pending) leaves it idle.
                sender_client.request("POST", "/api/hooks", hook_payload("Stop", sleeper))
                answer = {}

                def wait():
                    status, body, _ = wait_client.request("GET", f"/api/hooks/wait?session_id={sleeper}&timeout=20")
                    answer["at"] = time.perf_counter()
                    answer["status"] = json.loads(body).get("status") if status == 200 else f"HTTP {status}"

                before = db.value("SELECT waiter FROM sessions_app_hooklink WHERE hook_session = ?", (sleeper,))
                waiter = threading.Thread(target=wait)
                waiter.start()
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    current = db.value("SELECT waiter FROM sessions_app_hooklink WHERE hook_session = ?", (sleeper,))
                    if current and current != before:
                        break
                    time.sleep(0.005)
                time.sleep(0.1)
                name = f"waker {i % SENDERS:02}"
                started = time.perf_counter()
                status, body, send_ms = sender_client.request(
                    "POST", "/api/message_send",
                    {"to": "sleeper", "body": f"wake-up probe {i}: the build is green", "session": name, "hook_session": wakers[name]},
                )
                sent = time.perf_counter()
                waiter.join(30)
                outcome = answer.get("status", "no answer") if status == 200 else f"send HTTP {status}: {body[:120]!r}"
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                if i >= 2 and "at" in answer:
                    samples["send → waiter answered"].append((answer["at"] - started) * 1000)
                    samples["send request alone"].append(send_ms)
                    samples["send answered → waiter answered"].append((answer["at"] - sent) * 1000)
            sender_client.close()
            wait_client.close()
            db.close()
            result = {name: summary(v) for name, v in samples.items() if v}
            for name, s in result.items():
                print(f"    {name:34} median {s['median']:6.1f} ms   p90 {s['p90']:6.1f} ms")
            print(f"    outcomes: {outcomes}")
            return {"figures": result, "outcomes": outcomes, "backend": backend.label,
                    "server": server.label + (" (wait on process 2, send via process 1)" if processes > 1 else ""),
                    "server_commands": server.command_lines()}
    finally:
        backend.cleanup()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="sqlite:1,pg:2")
    parser.add_argument("--wakes", type=int, default=30)
    parser.add_argument("--json")
    args = parser.parse_args()
    print(f"Wake-up latency, {args.wakes} wakes per configuration (target ≤ {TARGET_MS} ms median) …")
    results = {text: run_config(text, args.wakes) for text in args.configs.split(",")}
    write_json(args.json, {"configs": results, "wakes": args.wakes})


if __name__ == "__main__":
    main()

"""message_send server time with and without the fleet checks (docs/rules.md §4.8), side by
side, and message_broadcast to 50 recipients.

Usage: python bench/fleet_sends.py OLD_CHECKOUT [--blocks 6] [--sends 100]

Two worker processes, one in OLD_CHECKOUT (a worktree of a commit without the fleet rules,
with .venv linked) and one in this checkout, each on its own fresh SQLite database with 50
named senders and 50 named recipients. The main process asks them for blocks of sends in turn
(old, new, old, new, ...) so load from the rest of the machine falls on both alike. Server time
is the JSON route's time in the process: Django's test client posting POST /api/message_send,
from the request to the answer. Distinct bodies (no duplicates), every sender and recipient used
in rotation (under OLD_CHECKOUT's 10 sends a minute; this checkout's limits are raised for the run).
The new worker also times message_broadcast to a task of 50 others, and 50 message_sends to the
same 50 for context. Prints figures and ratios; asserts nothing.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
PEERS = 50
TOKEN = "bench-token"


def worker(checkout):
    """Runs inside a checkout: set up, then answer commands read from stdin, one JSON line each."""
    sys.path.insert(0, str(checkout))
    os.chdir(checkout)
    data = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    os.environ.update(
        DJANGO_SETTINGS_MODULE="relaybay.settings",
        RELAYBAY_DATA=str(data),
        RELAYBAY_TOKEN=TOKEN,
        RELAYBAY_SENDS_PER_MINUTE="100000",
        RELAYBAY_UNREAD_CAP="1000000",
    )
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    from sessions_app.hooks.ingest import ingest_hook

    def start(name):
        ingest_hook({"hook_event_name": "SessionStart", "session_id": f"hook-{name}", "cwd": "/w", "relaybay_session": name})

    for i in range(PEERS):
        start(f"s{i}")
        start(f"r{i}")
    client = Client(HTTP_HOST="127.0.0.1")  # a host relaybay answers to (the test client says "testserver")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    counter = iter(range(10**9))

    def post(path, body):
        began = time.perf_counter()
        response = client.post(f"/api{path}", data=json.dumps(body), content_type="application/json", **auth)
        took = (time.perf_counter() - began) * 1000
        assert response.status_code == 200, response.content
        return took

    def sends(count):
        times = []
        for _ in range(count):
            n = next(counter)
            sender, recipient = f"s{n % PEERS}", f"r{(n // PEERS + n) % PEERS}"
            times.append(post("/message_send", {"body": f"block work {n}", "to": recipient, "session": sender, "hook_session": f"hook-{sender}"}))
        return times

    def broadcasts(count):
        from sessions_app.actions import do_save_task, do_update_session
        from sessions_app.models import Session

        task = do_save_task(title=f"fleet {next(counter)}")
        start("lead")
        for row in Session.objects.filter(title__in=["lead", *[f"r{i}" for i in range(PEERS)]]):
            do_update_session(session=row, task=task)
        fan_out, one_by_one = [], []
        for _ in range(count):
            n = next(counter)
            fan_out.append(post("/message_broadcast", {"body": f"all hands {n}", "session": "lead", "hook_session": "hook-lead"}))
            began = time.perf_counter()
            for i in range(PEERS):
                post("/message_send", {"body": f"one by one {n}", "to": f"r{i}", "session": "lead", "hook_session": "hook-lead"})
            one_by_one.append((time.perf_counter() - began) * 1000)
        return {"broadcast": fan_out, "fifty_sends": one_by_one}

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command["do"] == "sends":
            print(json.dumps({"times": sends(command["count"])}), flush=True)
        elif command["do"] == "broadcasts":
            print(json.dumps(broadcasts(command["count"])), flush=True)


class Worker:
    def __init__(self, checkout):
        python = Path(checkout) / ".venv" / "bin" / "python"
        self.process = subprocess.Popen(
            [str(python), str(Path(__file__).resolve()), "--worker", str(checkout)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert json.loads(self.process.stdout.readline())["ready"]

    def ask(self, **command):
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self):
        self.process.stdin.close()
        self.process.wait(30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("old")
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--sends", type=int, default=100)
    parser.add_argument("--broadcasts", type=int, default=10)
    args = parser.parse_args()
    old, new = Worker(args.old), Worker(HERE)
    try:
        times = {"old": [], "new": []}
        for _ in range(args.blocks):
            for name, worker_ in (("old", old), ("new", new)):
                times[name] += worker_.ask(do="sends", count=args.sends)["times"]
        fan = new.ask(do="broadcasts", count=args.broadcasts)
    finally:
        old.close()
        new.close()
    before, after = statistics.median(times["old"]), statistics.median(times["new"])
    print(f"message_send server time, SQLite, median of {len(times['old'])} each, interleaved blocks:")
    print(f"  without the fleet checks {before:.2f} ms, with them {after:.2f} ms: {after / before:.2f}x")
    b, one = statistics.median(fan["broadcast"]), statistics.median(fan["fifty_sends"])
    print(f"message_broadcast to {PEERS} recipients, server time, median of {len(fan['broadcast'])}: {b:.1f} ms")
    print(f"  50 message_sends to the same {PEERS}, one by one: {one:.1f} ms; broadcast / 50 sends = {b / one:.2f}x")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(Path(sys.argv[2]))
    else:
        main()

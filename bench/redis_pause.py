"""Answers with Redis paused, beside answers without: a send, a hook answer, a wake-up poll;
how soon a send made during a pause wakes an idle session; what idle waiters cost.

    .venv/bin/python bench/redis_pause.py [--rounds 8] [--pause 15] [--stall 10] [--stall-rounds 3]
                                          [--waiters 900] [--old REV] [--no-retry] [--waiters-only]
                                          [--repeat 1] [--json FILE]

Two daphne processes on one fresh PostgreSQL database and a redis-server of the script's own
(tests/fault_loop.py's PausableRedis: pausing it troubles nobody else's Redis). Session beta
is in a turn; alpha sends it mail. Each round goes through the second process:

  send   POST /api/message_send alpha → beta, timed to its answer;
  hook   beta's UserPromptSubmit through the real hook client (`python3 -S bin/relaybay-hook`,
         its own 10 s timeout), timed from its start to its exit, and whether its output
         carried the message;
  wait   beta idle (a Stop), a second message to it, then GET /api/hooks/wait, timed to its
         answer (the mail waits already: it should come back at once).

Rounds alternate: one with Redis answering, one where each timed operation starts right after
`CLIENT PAUSE <pause> ALL` (the round goes on once that pause is over).

Then the stall wake-up, `--stall-rounds` times: beta idle, its wake-up poll (40 s) waiting on
the first process; Redis paused `--stall` seconds; alpha's send through the second process
during the pause; timed from the pause's end to the poll's answer (at 40 s the poll's own last
check would find the message).

Then idle waiters: `--waiters` idle sessions, each with its wake-up poll (50 s, polled again
as it ends) waiting, split over both processes, Redis answering and nothing else happening;
the two processes' CPU over 30 s.

With --old REV everything runs on that commit's code as well (its files from `git archive`, its
own database), side by side. With --no-retry it runs on this checkout with the outbox's retry
taken out as well (bench/experiments.py `no-outbox-retry`: a send the layer does not take is
dropped), both cases then served by bench/empty_asgi.py, so that they differ in that alone;
--waiters-only weighs the idle waiters alone, --repeat N runs the cases N times in turn (the
machine's load moves under a run) and prints each run and the ratio of their sums. Prints medians and p90; asserts nothing. docs/rules.md §2.7 says
what the figures mean.
"""

import argparse
import asyncio
import concurrent.futures
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO_ROOT, cpu_seconds, summary, write_json  # noqa: E402
from tests import devserver  # noqa: E402
from tests.fault_loop import CLIENT_PYTHON, PausableRedis, Relaybays, post_json  # noqa: E402

OPERATIONS = ("send", "hook", "wait")


def checkout_of(rev, folder):
    """The files of commit `rev` in `folder` (git archive: no worktree is registered)."""
    archive = subprocess.run(["git", "archive", rev], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return Path(folder)


class Round:
    def __init__(self, relaybays, redis, root, home):
        self.relaybays, self.redis, self.root, self.home = relaybays, redis, root, home
        self.first, self.second = relaybays.urls
        self.count = 0

    def post(self, url, path, data):
        return post_json(url, self.relaybays.token, path, data, timeout=60)

    def hook(self, event, **fields):
        payload = {"hook_event_name": event, "session_id": "hook-beta", "cwd": "/work/beta", **fields}
        return self.post(self.second, "/hooks", payload)

    def send(self, url):
        self.count += 1
        body = f"mail {self.count}"
        status, _ = self.post(url, "/message_send", {"to": "beta", "session": "alpha", "hook_session": "hook-alpha", "body": body})
        return status, body

    def client(self, event, **fields):
        payload = json.dumps({"hook_event_name": event, "session_id": "hook-beta", "cwd": "/work/beta", **fields}).encode()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "RELAYBAY_URL": self.second, "RELAYBAY_TOKEN": self.relaybays.token,
               "RELAYBAY_SPOOL": str(self.home / "spool.jsonl")}
        completed = subprocess.run([CLIENT_PYTHON, "-S", str(self.root / "bin" / "relaybay-hook")], input=payload, env=env, capture_output=True, timeout=120)
        return completed.stdout.decode("utf-8", "replace")

    def run(self, pause=None):
        """One round: {operation: ms}, whether the hook's output carried its mail, and the
        wake-up poll's answer. With `pause`, each timed operation starts with Redis paused
        for `pause` seconds, and the round goes on once the pause is over."""
        figures = {}

        def timed(op, call):
            ends = self.redis.pause(pause) if pause else 0
            started = time.perf_counter()
            result = call()
            figures[op] = (time.perf_counter() - started) * 1000
            time.sleep(max(0.0, ends - time.monotonic()))
            return result

        status, body = timed("send", lambda: self.send(self.second))
        assert status == 200, status
        printed = timed("hook", lambda: self.client("UserPromptSubmit", prompt="go on"))
        self.hook("Stop", stop_hook_active=False)
        self.send(self.first)
        _, answer = timed("wait", lambda: get_json(self.second, self.relaybays.token, "/hooks/wait?session_id=hook-beta&timeout=5"))
        self.hook("UserPromptSubmit", prompt="next round")
        return figures, body in printed, answer


def get_json(url, token, path, timeout=60):
    request = urllib.request.Request(f"{url}/api{path}", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, None
    except OSError:
        return None, None


STALL_POLL = 40


def stall_wake(one, stall):
    """Seconds from the end of a `stall`-second pause to the idle recipient's wake-up, for a
    send made through the second process during the pause; None when the poll said nothing."""
    one.hook("Stop", stop_hook_active=False)
    answered = {}

    def poll():
        status, answer = get_json(one.first, one.relaybays.token, f"/hooks/wait?session_id=hook-beta&timeout={STALL_POLL}", timeout=STALL_POLL + 30)
        answered.update(status=status, answer=answer, at=time.monotonic())

    waiter = threading.Thread(target=poll)
    waiter.start()
    waiter_id = "select waiter from sessions_app_hooklink where hook_session = 'hook-beta'"
    while not one.relaybays.query(waiter_id)[0][0]:
        time.sleep(0.05)
    time.sleep(0.5)  # registered, then joined its group
    ends = one.redis.pause(stall)
    status, body = one.send(one.second)
    assert status == 200, status
    waiter.join(STALL_POLL + 60)
    one.hook("UserPromptSubmit", prompt="next round")
    answer = answered.get("answer") or {}
    if answer.get("status") != "delivered" or body not in answer.get("text", ""):
        return None
    return answered["at"] - ends


async def idle_waiters(url, token, hook_sessions, stop):
    """Each session's wake-up poll, polled again as it ends, until `stop` is set."""

    async def one_waiter(hook_session):
        request = (f"GET /api/hooks/wait?session_id={hook_session}&timeout=50 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   f"Authorization: Bearer {token}\r\n\r\n").encode()
        host, _, port = url.split("://", 1)[1].partition(":")
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection(host, int(port))
                while not stop.is_set():
                    writer.write(request)
                    await writer.drain()
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
                    await reader.readexactly(length)
            except (OSError, asyncio.IncompleteReadError, StopIteration, ValueError):
                await asyncio.sleep(1)

    async def until_stopped():
        tasks = [asyncio.create_task(one_waiter(h)) for h in hook_sessions]
        while not stop.is_set():
            await asyncio.sleep(0.2)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    await until_stopped()


def waiters_load(relaybays, count, seconds=30):
    """CPU seconds of each server process over `seconds` with `count` idle waiters waiting."""
    names = [f"idle-{i}" for i in range(count)]
    token = relaybays.token

    def idle_session(i):
        name = names[i]
        for event, fields in (("SessionStart", {"source": "startup", "relaybay_session": name}), ("UserPromptSubmit", {"prompt": "work"}), ("Stop", {"stop_hook_active": False})):
            payload = {"hook_event_name": event, "session_id": f"hook-{name}", "cwd": f"/work/{name}", **fields}
            assert post_json(relaybays.urls[i % 2], token, "/hooks", payload, timeout=60)[0] == 200

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(idle_session, range(count)))
    stop = threading.Event()
    loops = []
    for k, url in enumerate(relaybays.urls):
        hooks = [f"hook-{name}" for i, name in enumerate(names) if i % 2 == k]
        loops.append(threading.Thread(target=lambda url=url, hooks=hooks: asyncio.run(idle_waiters(url, token, hooks, stop))))
    for loop in loops:
        loop.start()
    try:
        waiting = "select count(*) from sessions_app_hooklink where waiter <> '' and hook_session like 'hook-idle-%'"
        deadline = time.monotonic() + 120
        while relaybays.query(waiting)[0][0] < count and time.monotonic() < deadline:
            time.sleep(0.5)
        registered = relaybays.query(waiting)[0][0]
        time.sleep(3)
        pids = [server.pids for server in relaybays.servers]
        before = [cpu_seconds(p) for p in pids]
        time.sleep(seconds)
        used = [cpu_seconds(p) - b for p, b in zip(pids, before, strict=True)]
    finally:
        stop.set()
        for loop in loops:
            loop.join(30)
    return {"registered": registered, "cpu_seconds": used, "seconds": seconds}


def run_code(label, root, rounds, pause, workdir, stall=10, stall_rounds=3, waiters=900, app="relaybay.asgi:application", experiment=None):
    print(f"  {label} …", flush=True)
    redis = PausableRedis(workdir / "redis").start()
    env = {
        "DATABASE_URL": devserver.fresh_database(devserver.DEFAULT_DATABASE_URL),
        "REDIS_URL": redis.url,
        "RELAYBAY_REDIS_PREFIX": "relaybay-pause",
        # alpha sends two messages a round: more than the default ten a minute.
        "RELAYBAY_SENDS_PER_MINUTE": "1000000",
        # beta is woken by messages many times with no prompt of the owner's between.
        "RELAYBAY_WAKE_CAP": "1000000",
        **({"BENCH_EXPERIMENT": experiment} if experiment else {}),
    }
    relaybays = Relaybays(workdir / "relaybay", 2, env, root=root, app=app)
    samples = {paused: {op: [] for op in OPERATIONS} for paused in (False, True)}
    carried = {False: 0, True: 0}
    woken = {False: 0, True: 0}
    stalls, load = [], None
    try:
        for i, server in enumerate(relaybays.servers):
            server.start(migrate=i == 0, ready_timeout=300)  # however long a loaded machine takes
        relaybays.urls = [server.url for server in relaybays.servers]
        first = relaybays.urls[0]
        for hook_session, name in (("hook-alpha", "alpha"), ("hook-beta", "beta")):
            payload = {"hook_event_name": "SessionStart", "session_id": hook_session, "cwd": f"/work/{name}", "source": "startup", "relaybay_session": name}
            assert post_json(first, relaybays.token, "/hooks", payload)[0] == 200
        home = workdir / "home"
        home.mkdir()
        one = Round(relaybays, redis, root, home)
        one.hook("UserPromptSubmit", prompt="work")
        if rounds:
            one.run()  # warm both processes
        for i in range(2 * rounds):
            paused = bool(i % 2)
            figures, got_mail, waited = one.run(pause if paused else None)
            for op, ms in figures.items():
                samples[paused][op].append(ms)
            carried[paused] += got_mail
            woken[paused] += bool(waited and waited.get("status") == "delivered")
            time.sleep(0.5)
        for _ in range(stall_rounds):
            stalls.append(stall_wake(one, stall))
        if waiters:
            load = waiters_load(relaybays, waiters)
    finally:
        relaybays.stop()
        redis.stop()
    return {"samples": samples, "carried": carried, "woken": woken, "rounds": rounds, "stalls": stalls, "stall": stall, "load": load}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8, help="rounds with Redis paused, and as many without")
    parser.add_argument("--pause", type=float, default=15, help="seconds of each CLIENT PAUSE")
    parser.add_argument("--stall", type=float, default=10, help="seconds of the pause a send is made in, for the stall wake-up")
    parser.add_argument("--stall-rounds", type=int, default=3, help="stall wake-ups to time")
    parser.add_argument("--waiters", type=int, default=900, help="idle waiters whose load is measured (0: none)")
    parser.add_argument("--old", metavar="REV", help="also run the code of this git revision")
    parser.add_argument("--no-retry", action="store_true", help="also run this checkout with the outbox's retry taken out")
    parser.add_argument("--waiters-only", action="store_true", help="weigh the idle waiters alone (no rounds, no stall wake-ups)")
    parser.add_argument("--repeat", type=int, default=1, help="run the cases this many times in turn")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    if args.waiters_only:
        args.rounds, args.stall_rounds = 0, 0
    workdir = Path(tempfile.mkdtemp(prefix="relaybay-redis-pause-"))
    results = {}
    try:
        app = "bench.empty_asgi:application" if args.no_retry else "relaybay.asgi:application"
        cases = [("this checkout", REPO_ROOT, app, None)]
        if args.no_retry:
            cases.append(("outbox without its retry", REPO_ROOT, app, "no-outbox-retry"))
        if args.old:
            cases.append((f"old ({args.old})", checkout_of(args.old, workdir / "old"), "relaybay.asgi:application", None))
        runs = [(f"{label}, run {k + 1}" if args.repeat > 1 else label, *case) for k in range(args.repeat) for label, *case in cases]
        for i, (label, root, app, experiment) in enumerate(runs):
            folder = workdir / f"run-{i}"
            folder.mkdir()
            results[label] = run_code(label, root, args.rounds, args.pause, folder, args.stall, args.stall_rounds, args.waiters, app, experiment)
            stalls = ", ".join("not woken" if s is None else f"{s:.1f} s" for s in results[label]["stalls"])
            load = results[label]["load"]
            print(f"    stall wake-ups after the pause: {stalls}; idle waiters' CPU: {load and load['cpu_seconds']}", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.rounds:
        print_rounds(args, results)
    if args.stall_rounds:
        print_stalls(args, results)
    if args.waiters:
        print_waiters(args, results, [label for label, *_ in cases])
    write_json(args.json, {label: {**result, "samples": {str(k): v for k, v in result["samples"].items()}} for label, result in results.items()})


def print_rounds(args, results):
    print(f"\nRedis paused {args.pause:g} s as each operation of every other round starts; two daphne on PostgreSQL; "
          f"{args.rounds} rounds each way, through the second process (median / p90, ms)\n")
    print(f"{'':28} {'operation':6} {'Redis answering':>20} {'Redis paused':>20} {'paused / answering':>19}")
    for label, result in results.items():
        for op in OPERATIONS:
            free, paused = (summary(result["samples"][p][op]) for p in (False, True))
            print(f"{label:28} {op:6} {free['median']:9.0f} / {free['p90']:6.0f}   {paused['median']:9.0f} / {paused['p90']:6.0f}   "
                  f"{paused['median'] / free['median']:17.2f}×")
        r = result["rounds"]
        print(f"{'':28} hook output carried its message: {result['carried'][False]}/{r} answering, {result['carried'][True]}/{r} paused; "
              f"wake-up poll delivered: {result['woken'][False]}/{r} answering, {result['woken'][True]}/{r} paused")


def print_stalls(args, results):
    print(f"\nA send made during a {args.stall:g} s pause: its idle recipient woken, seconds after the pause ended "
          f"(its {STALL_POLL} s poll would find it at its end)\n")
    for label, result in results.items():
        shown = ", ".join("not woken" if s is None else f"{s:.1f}" for s in result["stalls"])
        print(f"{label:28} {shown}")


def print_waiters(args, results, cases):
    print(f"\n{args.waiters} idle waiters, nothing happening: CPU of each process over 30 s\n")
    for label, result in results.items():
        load = result["load"]
        cpu = " + ".join(f"{c:.2f}" for c in load["cpu_seconds"])
        print(f"{label:36} {cpu} s = {sum(load['cpu_seconds']) / load['seconds'] * 100:.1f} % of a core "
              f"({load['registered']} waiting)")
    if len(cases) > 1:
        total = {case: sum(sum(r["load"]["cpu_seconds"]) for label, r in results.items() if label.startswith(case)) for case in cases}
        for case in cases[1:]:
            print(f"{cases[0]} ÷ {case}: {total[cases[0]] / total[case]:.2f}× (CPU seconds summed over its runs)")


if __name__ == "__main__":
    main()

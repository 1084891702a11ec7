"""Answers with Redis paused, beside answers without: a send, a hook answer, a wake-up poll.

    .venv/bin/python bench/redis_pause.py [--rounds 8] [--pause 15] [--old REV] [--json FILE]

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
`CLIENT PAUSE <pause> ALL` (the round goes on once that pause is over). With --old REV the same rounds run on that commit's code (its
files from `git archive`, its own database), side by side. Prints medians and p90; asserts
nothing. docs/rules.md §2.7 says what the figures mean.
"""

import argparse
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO_ROOT, summary, write_json  # noqa: E402
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


def get_json(url, token, path):
    request = urllib.request.Request(f"{url}/api{path}", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, None
    except OSError:
        return None, None


def run_code(label, root, rounds, pause, workdir):
    print(f"  {label} …", flush=True)
    redis = PausableRedis(workdir / "redis").start()
    env = {
        "DATABASE_URL": devserver.fresh_database(devserver.DEFAULT_DATABASE_URL),
        "REDIS_URL": redis.url,
        "RELAYBAY_REDIS_PREFIX": "relaybay-pause",
        # alpha sends two messages a round: more than the default ten a minute.
        "RELAYBAY_SENDS_PER_MINUTE": "1000000",
    }
    relaybays = Relaybays(workdir / "relaybay", 2, env, root=root)
    samples = {paused: {op: [] for op in OPERATIONS} for paused in (False, True)}
    carried = {False: 0, True: 0}
    woken = {False: 0, True: 0}
    try:
        relaybays.start()
        first = relaybays.urls[0]
        for hook_session, name in (("hook-alpha", "alpha"), ("hook-beta", "beta")):
            payload = {"hook_event_name": "SessionStart", "session_id": hook_session, "cwd": f"/work/{name}", "source": "startup", "relaybay_session": name}
            assert post_json(first, relaybays.token, "/hooks", payload)[0] == 200
        home = workdir / "home"
        home.mkdir()
        one = Round(relaybays, redis, root, home)
        one.hook("UserPromptSubmit", prompt="work")
        one.run()  # warm both processes
        for i in range(2 * rounds):
            paused = bool(i % 2)
            figures, got_mail, waited = one.run(pause if paused else None)
            for op, ms in figures.items():
                samples[paused][op].append(ms)
            carried[paused] += got_mail
            woken[paused] += bool(waited and waited.get("status") == "delivered")
            time.sleep(0.5)
    finally:
        relaybays.stop()
        redis.stop()
    return {"samples": samples, "carried": carried, "woken": woken, "rounds": rounds}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8, help="rounds with Redis paused, and as many without")
    parser.add_argument("--pause", type=float, default=15, help="seconds of each CLIENT PAUSE")
    parser.add_argument("--old", metavar="REV", help="also run the code of this git revision")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="relaybay-redis-pause-"))
    results = {}
    try:
        cases = [("this checkout", REPO_ROOT)]
        if args.old:
            cases.append((f"old ({args.old})", checkout_of(args.old, workdir / "old")))
        for i, (label, root) in enumerate(cases):
            folder = workdir / f"run-{i}"
            folder.mkdir()
            results[label] = run_code(label, root, args.rounds, args.pause, folder)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
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
    write_json(args.json, {label: {**result, "samples": {str(k): v for k, v in result["samples"].items()}} for label, result in results.items()})


if __name__ == "__main__":
    main()

"""The delivery fault loop, long: every message shown to the model exactly once, counted.

    .venv/bin/python bench/delivery_faults.py [--configs sqlite,pg] [--items 2000] [--runs 1] [--seed N] [--json FILE]

tests/fault_loop.py's loop (tests/test_delivery_faults.py runs a bounded one): one session's
hooks through the real hook client (`python3 -S bin/relaybay-hook`, two at a time, now and then
its wake-up hook), another session sending it `--items` messages, and faults at random points
meanwhile — a server killed with kill -9 and started again, Redis paused for 1-3 s (pg: two
daphne processes on a fresh PostgreSQL database and a redis-server of the loop's own), hook
clients killed mid-answer (a proxy passes on part of the answer, then kill -9) or given 20-300 ms
to answer. A message counts
as shown when it is in the output of a hook client that exited normally, as Claude Code keeps
it. Prints, per configuration and run: messages stored, shown, lost, shown twice, left
unconfirmed, and the faults; asserts nothing (docs/rules.md §2.6).
"""

import argparse
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import write_json  # noqa: E402
from tests.fault_loop import run_fault_loop  # noqa: E402

LABELS = {"sqlite": "one daphne, SQLite", "pg": "two daphne, PostgreSQL + Redis"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="sqlite,pg", help="sqlite, pg or both")
    parser.add_argument("--items", type=int, default=2000, help="messages sent in one run")
    parser.add_argument("--runs", type=int, default=1, help="runs per configuration")
    parser.add_argument("--seed", type=int, help="the first run's seed (random by default)")
    parser.add_argument("--json", help="write the counts here")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(10**6)
    results = []
    for config in [c.strip() for c in args.configs.split(",") if c.strip()]:
        for run in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="relaybay-delivery-faults-") as workdir:
                print(f"  {LABELS[config]}, run {run + 1}, seed {seed} …", flush=True)
                outcome = run_fault_loop(
                    workdir, items=args.items, seed=seed, scale_out=config == "pg", drain_seconds=300, log=lambda text: print(f"    {text}", flush=True)
                )
            print(f"    {outcome.report()}", flush=True)
            if outcome.lost or outcome.twice:
                print(f"    lost: {outcome.lost}  shown twice: {outcome.twice}", flush=True)
            results.append({
                "config": config, "seed": seed, "stored": len(outcome.stored), "shown": sum(outcome.shown.values()),
                "lost": outcome.lost, "twice": outcome.twice, "unconfirmed": outcome.unconfirmed,
                "faults": dict(outcome.faults), "hook_calls": outcome.hook_calls, "seconds": round(outcome.seconds, 1),
            })
            seed += 1
    print("\nconfiguration                       messages   shown   lost  twice  unconfirmed  hook calls  faults")
    for r in results:
        faults = ", ".join(f"{n} {name}" for name, n in sorted(r["faults"].items()))
        print(f"{LABELS[r['config']]:34} {r['stored']:9} {r['shown']:7} {len(r['lost']):6} {len(r['twice']):6} {r['unconfirmed']:12} "
              f"{r['hook_calls']:11}  {faults}")
    write_json(args.json, results)


if __name__ == "__main__":
    main()

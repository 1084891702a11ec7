"""Benchmark-only experiments: what a change to the product would buy, measured without making it.

Chosen with BENCH_EXPERIMENT (comma-separated) in the server's environment; bench/settings.py
and bench/empty_asgi.py apply them. Nothing here is used by relaybay itself.

None is defined at the moment. The two measured before were shipped or dropped:
`hook-thread` (each hook's ingestion on one long-lived thread per process) became
relaybay/dbthreads.py; `hook-lock` (one lock around ingestion) only cut the tail and
is subsumed by it. Add one as a function of `apply_settings` or `apply_app`, run it with a
throughput group such as `sqlite:1+NAME@`, and compare it with the group without it.
"""

import os

ACTIVE = {x.strip() for x in os.environ.get("BENCH_EXPERIMENT", "").split(",") if x.strip()}


def apply_settings(settings_globals):
    """Settings-level experiments (none at the moment)."""


def apply_app():
    """Experiments on the running app (none at the moment)."""
    unknown = ACTIVE
    if unknown:
        raise SystemExit(f"unknown BENCH_EXPERIMENT: {', '.join(sorted(unknown))} (see bench/experiments.py)")

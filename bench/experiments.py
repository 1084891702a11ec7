"""Benchmark-only experiments: what a change to the product would buy, measured without making it.

Chosen with BENCH_EXPERIMENT (comma-separated) in the server's environment; bench/settings.py
and bench/empty_asgi.py apply them. Nothing here is used by relaybay itself. Each undoes one of
relaybay's serving choices, so bench/serving.py can measure the plain alternative beside it:

- `no-db-threads`: /api/ requests run their sync code as Django's ASGI handler does by default,
  on a thread made for each request (no relaybay/dbthreads.py).
- `full-chain`: /api/ goes through the board's whole middleware chain (no
  relaybay.asgi.APIHandler); still on the database threads.
- `detached-sends`: board pings and wake-ups sent from a database thread are handed to the
  server's event loop without waiting for them (as relaybay did before; today the thread waits
  for asgiref's async_to_sync).
"""

import asyncio
import contextlib
import os

ACTIVE = {x.strip() for x in os.environ.get("BENCH_EXPERIMENT", "").split(",") if x.strip()}
KNOWN = {"no-db-threads", "full-chain", "detached-sends"}


def apply_settings(settings_globals):
    """Settings-level experiments (none at the moment)."""


class _NoDatabaseThreads:
    @contextlib.asynccontextmanager
    async def serving(self):
        yield


def _detached_async_to_sync(coroutine_function):
    from asgiref.sync import SyncToAsync, async_to_sync

    loop = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
    if loop is None:
        return async_to_sync(coroutine_function)
    return lambda *args: loop.call_soon_threadsafe(lambda: asyncio.ensure_future(coroutine_function(*args)))


def apply_app():
    """Experiments on the running app."""
    unknown = ACTIVE - KNOWN
    if unknown:
        raise SystemExit(f"unknown BENCH_EXPERIMENT: {', '.join(sorted(unknown))} (see bench/experiments.py)")
    from relaybay import asgi, events

    if "no-db-threads" in ACTIVE:
        asgi.db_threads = _NoDatabaseThreads()
    if "full-chain" in ACTIVE:
        asgi.api_asgi_app = asgi.django_asgi_app
    if "detached-sends" in ACTIVE:
        events.async_to_sync = _detached_async_to_sync

"""Benchmark-only experiments: what a change to the product would buy, measured without making it.

Chosen with BENCH_EXPERIMENT (comma-separated) in the server's environment; bench/settings.py
and bench/empty_asgi.py apply them. Nothing here is used by relaybay itself. Each undoes one of
relaybay's serving choices, so bench/serving.py can measure the plain alternative beside it:

- `no-db-threads`: /api/ requests run their sync code as Django's ASGI handler does by default,
  on a thread made for each request (no core/dbthreads.py).
- `full-chain`: /api/ goes through the board's whole middleware chain (no
  relaybay.asgi.APIHandler); still on the database threads.
- `waited-sends`: board pings and wake-ups asked for on a database thread are handed to the
  server's event loop by that thread, which waits for each (asgiref's async_to_sync), instead
  of being held and handed to the loop's outbox once the thread's step is back (core/pings.py
  `holding_sends`).
- `asgiref-hop`: the MCP tools' and the long poll's steps (core/dbthreads.py `threads.run`)
  go to their database thread through asgiref's sync_to_async instead of the loop's own
  executor hand-off.
- `all-columns`: sessions_list reads every column of its rows and their links instead of only
  those a summary shows (sessions_app/directory.py `listed_sessions(shown_only=True)`).
- `feed-trigger`: on SQLite, every feed row's search entry is written by a trigger with the
  row, instead of in batches by sessions_app/search_index.py (the trigger that migration
  0011_feed_search_in_batches drops, put back when the server starts).
- `no-outbox-retry`: a board ping or wake-up the channel layer does not take within its bound
  is dropped with a log line, as each process's outbox did before it kept such sends and tried
  them again (core/pings.py `Outbox`).
"""

import contextlib
import os

ACTIVE = {x.strip() for x in os.environ.get("BENCH_EXPERIMENT", "").split(",") if x.strip()}
KNOWN = {"no-db-threads", "full-chain", "waited-sends", "asgiref-hop", "feed-trigger", "all-columns", "no-outbox-retry"}


def apply_settings(settings_globals):
    """Settings-level experiments (none at the moment)."""


class _NoDatabaseThreads:
    @contextlib.asynccontextmanager
    async def serving(self):
        yield []  # nothing held: Django's own threads hand each send to the loop


@contextlib.contextmanager
def _not_holding():
    yield []


async def _asgiref_run(self, step, *args):
    from asgiref.sync import sync_to_async

    from core.dbthreads import _step
    from core.pings import holding_sends, post_held

    with holding_sends() as held, self._least_busy() as executor:
        try:
            return await sync_to_async(_step, thread_sensitive=False, executor=executor)(step, *args)
        finally:
            post_held(held)


def apply_app():
    """Experiments on the running app."""
    unknown = ACTIVE - KNOWN
    if unknown:
        raise SystemExit(f"unknown BENCH_EXPERIMENT: {', '.join(sorted(unknown))} (see bench/experiments.py)")
    from core import dbthreads
    from relaybay import asgi

    if "no-db-threads" in ACTIVE:
        asgi.db_threads = _NoDatabaseThreads()
    if "full-chain" in ACTIVE:
        asgi.api_asgi_app = asgi.django_asgi_app
    if "waited-sends" in ACTIVE:
        dbthreads.holding_sends = _not_holding
    if "asgiref-hop" in ACTIVE:
        dbthreads.DatabaseThreads.run = _asgiref_run
    if "feed-trigger" in ACTIVE:
        _feed_trigger_back()
    if "all-columns" in ACTIVE:
        _all_columns()
    if "no-outbox-retry" in ACTIVE:
        _no_outbox_retry()


def _no_outbox_retry():
    from core import pings

    pings.Outbox._put_back = lambda self, key, kept: None  # the send not taken is gone
    pings.RETRY_AFTER = 0


def _all_columns():
    from sessions_app import directory

    shipped = directory.listed_sessions
    directory.listed_sessions = lambda **kwargs: shipped(**{**kwargs, "shown_only": False})


def _feed_trigger_back():
    import importlib

    from django.db import connection

    from core import capabilities

    batches = importlib.import_module("sessions_app.migrations.0011_feed_search_in_batches")
    if not capabilities.of(connection).feed_indexed_in_batches:
        raise SystemExit("the feed-trigger experiment is SQLite's: PostgreSQL has the trigger as shipped")
    with connection.cursor() as cursor:
        cursor.execute(batches.FEED_TRIGGER.replace("CREATE TRIGGER ", "CREATE TRIGGER IF NOT EXISTS ", 1))
    connection.close()

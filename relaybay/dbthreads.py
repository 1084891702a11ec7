"""Where the JSON API's database work runs under the ASGI server: a few long-lived threads.

Django's ASGI handler runs a sync view on a thread made for the request, so a sync view opens
a database connection per request, and on SQLite fifty such threads would queue for the one
write lock inside sqlite3's busy handler, which sleeps 1-100 ms between tries (seconds of tail
latency under load). The hot routes (hooks and the MCP operations) are `async def` and run
their database step here instead, on RELAYBAY_DB_THREADS threads per process (default: 1 on
SQLite, which has one writer anyway; 4 on PostgreSQL): they queue in process, in arrival
order, and on SQLite each keeps its connection from one request to the next. On PostgreSQL
the connection goes back to the pool after each step, so the pool's checks still run on
checkout. Board pings and wake-ups that a step sends after its commit are handed to the
server's event loop without waiting (relaybay.events.sends_detached).

These threads are for a server whose event loop lives as long as the process: relaybay.asgi
turns them on. Elsewhere (Django's WSGI handler, which gives every async view a loop of its
own that ends with the request; management commands; the test client) and with
RELAYBAY_DB_THREADS=0, the step runs on the request's own thread, as a sync view's would, and
gives its connection back when it ends (unless a transaction is open, as in a test). Either
way a wake-up long poll holds no connection between its checks. The in-process tests set 0:
their data lives in the test's open transaction.
"""

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django import db
from django.conf import settings

from relaybay.events import sends_detached

_executor = None
_enabled = False


def use_db_threads():
    """Called by the ASGI entry point: this process serves from one long-lived event loop."""
    global _enabled
    _enabled = True


def _pool():
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(settings.RELAYBAY_DB_THREADS, thread_name_prefix="relaybay-db")
    return _executor


def _on_db_thread(loop, fn, *args, **kwargs):
    keep = db.connection.vendor == "sqlite"
    try:
        with sends_detached(loop):
            return fn(*args, **kwargs)
    except db.Error:
        keep = False  # the database went away or broke the connection: open a new one next time
        raise
    finally:
        if not keep and not db.connection.in_atomic_block:
            db.connection.close()


def _on_request_thread(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    finally:
        if not db.connection.in_atomic_block:
            db.connection.close()


async def run(fn, *args, **kwargs):
    """Run `fn` (a route's database step) on a database thread and return its result."""
    if not _enabled or settings.RELAYBAY_DB_THREADS <= 0:
        return await sync_to_async(_on_request_thread)(fn, *args, **kwargs)
    # A plain executor call, not asgiref's sync_to_async: nothing on these threads calls back
    # into the loop but the detached sends, so none of asgiref's bookkeeping is needed.
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_pool(), functools.partial(_on_db_thread, loop, fn, *args, **kwargs))


def on_db_thread(view):
    """A sync django-ninja view served as an `async def` whose body runs on a database thread.
    Give the route `auth=AsyncTokenAuth()`: a sync check would cost a thread hop of its own."""

    @functools.wraps(view)
    async def serve(request, *args, **kwargs):
        return await run(view, request, *args, **kwargs)

    return serve

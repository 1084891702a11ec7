"""Where hook ingestion runs: on a few long-lived threads of each server process.

Django's ASGI handler runs a sync view on a thread made for the request, so a sync hook view
would open a database connection per request, and on SQLite fifty such threads would queue
for the one write lock inside sqlite3's busy handler, which sleeps 1-100 ms between tries
(seconds of tail latency under load). Hooks run instead on RELAYBAY_HOOK_THREADS threads per
process (default: 1 on SQLite, which has one writer anyway; 4 on PostgreSQL): they queue in
process, in arrival order, and on SQLite each keeps its connection from one hook to the next.
On PostgreSQL the connection goes back to the pool after each hook, so the pool's checks
still run on checkout. Board pings and wake-ups that a hook sends after its commit are handed
to the server's event loop without waiting (relaybay.events.sends_detached).

Hook threads are for a server whose event loop lives as long as the process: relaybay.asgi
turns them on. Elsewhere (Django's WSGI handler, which gives every async view a loop of its
own that ends with the request; management commands; the test client) and with
RELAYBAY_HOOK_THREADS=0, ingestion runs on the request's own thread, as a sync view's would.
The in-process tests set 0: their data lives in the test's open transaction.
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


def use_hook_threads():
    """Called by the ASGI entry point: this process serves from one long-lived event loop."""
    global _enabled
    _enabled = True


def _pool():
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(settings.RELAYBAY_HOOK_THREADS, thread_name_prefix="relaybay-hook")
    return _executor


def _on_hook_thread(loop, fn, *args, **kwargs):
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


async def run(fn, *args, **kwargs):
    """Run `fn` (a database step of a hook) on a hook thread and return its result."""
    if not _enabled or settings.RELAYBAY_HOOK_THREADS <= 0:
        return await sync_to_async(fn)(*args, **kwargs)
    # A plain executor call, not asgiref's sync_to_async: nothing on a hook thread calls back
    # into the loop but the detached sends, so none of asgiref's bookkeeping is needed.
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_pool(), functools.partial(_on_hook_thread, loop, fn, *args, **kwargs))

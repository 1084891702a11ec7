"""The threads that do the JSON API's database work under daphne: a few long-lived ones.

Django's ASGI handler runs a request's sync code (its views, and the `close_old_connections`
receivers of `request_started`/`request_finished`) on a thread made for that request, so every
request would open a database connection, and on SQLite fifty such threads would queue for the
one write lock inside sqlite3's busy handler, which sleeps 1-100 ms between tries (seconds of
tail latency under load). relaybay.asgi serves each `/api/` request inside asgiref's
`ThreadSensitiveContext` with one of these threads as its executor instead: the routes stay
plain sync views, every sync step of a request runs on the same long-lived thread, requests
queue in process in arrival order, and on SQLite (persistent connections, settings.py) the
thread keeps its connection from one request to the next. On PostgreSQL the connection goes
back to the pool at each request's end (Django's own `close_old_connections`).

Async code that is not a Django view (the MCP tools at /mcp, the wake-up long poll) runs its
database steps here with `threads.run`. Either way the channel-layer sends a step makes after
its commits (board pings, wake-ups) are held and handed to the event loop's outbox once the
step is back, and the outbox makes them in the background (core/pings.py): the thread handing
each send to the loop and waiting for it would cost a send over /mcp about a third of a
millisecond (docs/mcp.md), and an answer would wait for a channel layer that does not answer.

RELAYBAY_DB_THREADS threads per daphne process (default: 1 on SQLite, which has one writer
anyway; 4 on PostgreSQL); a request goes to the thread with the fewest in hand.
Elsewhere (gunicorn, management commands, the test client) nothing here is used: Django runs
the same views on the request's own thread.
"""

import asyncio
import contextlib
import contextvars
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext
from django.conf import settings
from django.db import close_old_connections, connections

from core.pings import holding_sends, post_held


class DatabaseThreads:
    def __init__(self, count):
        if count < 1:
            raise ValueError("RELAYBAY_DB_THREADS must be at least 1")
        # One thread per executor: a request's sync steps must all run on one thread (its
        # database connection is that thread's), which ThreadSensitiveContext requires.
        self.executors = [ThreadPoolExecutor(1, thread_name_prefix=f"relaybay-db-{i}") for i in range(count)]
        self.in_hand = [0] * count

    @contextlib.contextmanager
    def _least_busy(self):
        i = min(range(len(self.in_hand)), key=self.in_hand.__getitem__)
        self.in_hand[i] += 1
        try:
            yield self.executors[i]
        finally:
            self.in_hand[i] -= 1

    @contextlib.asynccontextmanager
    async def serving(self):
        """The block's thread-sensitive sync code (Django's sync views and signals) runs on one
        of the database threads. Gives the list its channel-layer sends are held in: hand them
        to the loop's outbox with `post_held` as the answer goes out (relaybay.asgi.serve_api)."""
        with holding_sends() as held, self._least_busy() as executor:
            try:
                async with ThreadSensitiveContext(executor=executor):
                    yield held
            finally:
                post_held(held)

    async def run(self, step, *args):
        """`step(*args)` on one of the threads, giving its connection back after as a request's
        end would (to the pool on PostgreSQL; a persistent SQLite connection stays), then hand
        the channel-layer sends it made to the event loop's outbox."""
        with holding_sends() as held, self._least_busy() as executor:
            # The loop's own executor hand-off, in a copy of this context (the thread sees the
            # held list): asgiref's sync_to_async adds a shielded future and context copying
            # back that a step needs neither of, at a cost to each call (docs/mcp.md, "Why the
            # hot paths look like this").
            work = asyncio.get_running_loop().run_in_executor(executor, contextvars.copy_context().run, _step, step, *args)
            try:
                return await work
            finally:
                post_held(held)


@contextlib.asynccontextmanager
async def thread_of_its_own():
    """The block's thread-sensitive sync code (a board request's middleware and view) runs on
    a thread made for it, as Django's ASGI handler would run it, and that thread's database
    connections are closed once the block is over, however it ended.

    Django closes them at `request_finished`, which it sends on that same thread; but a request
    whose client left is cancelled by daphne when it has not finished within its close timeout
    (10 s), the send of `request_finished` with it, while the thread still works. The
    connection then never went back to the pool (PostgreSQL): once RELAYBAY_DB_POOL_SIZE such
    requests had been cut short (the owner's logins on a loaded machine), every board page
    waited for a connection and failed. The close is queued behind whatever the thread still
    runs, so it comes after the step that holds the connection, on its thread."""
    executor = ThreadPoolExecutor(1, thread_name_prefix="relaybay-request")
    try:
        async with ThreadSensitiveContext(executor=executor):
            yield
    finally:
        executor.submit(connections.close_all)
        executor.shutdown(wait=False)


def _step(step, *args):
    try:
        return step(*args)
    finally:
        close_old_connections()


threads = DatabaseThreads(settings.RELAYBAY_DB_THREADS)

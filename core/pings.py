"""Refresh pings and wake-ups, through the channel layer.

`ping` tells open boards what changed, and `wake_waiters` tells a session's waiting wake-up
hook that something arrived; both go through the channel layer after the transaction commits,
so nobody refetches a row that is not there yet. (The feed rows are sessions_app's:
sessions_app/feed.py.)

Nothing waits for them: the write they follow is committed, the database is the record, and a
board refetches and a waiter checks the database anyway. A channel layer that does not answer
(Redis paused, overloaded or gone) never holds up an answer: in a server each send is made in
the background by its process's `Outbox`, one at a time, each within `SEND_BOUND` seconds; one
the layer does not take is kept, with what waits behind it, and tried again every
`RETRY_AFTER` seconds until the layer takes it, so an idle session is woken moments after the
layer answers again rather than at its waiter's next check (docs/rules.md §2.7).

In the server, the database work runs on relaybay's database threads (core/dbthreads.py)
and the channel layer lives on the event loop. A send made on a database thread is held
(`holding_sends`) and handed to the loop's outbox by the coroutine that awaited that thread,
once the thread's step returns (`post_held`): the thread never waits on the loop. Under
gunicorn's sync workers a request's sends are held the same way and handed to an outbox that a
thread of the process runs (relaybay/wsgi.py, `post_in_background`). Elsewhere (the test
client, a command's own process) the send is made where it is asked for, within the same bound.
"""

import asyncio
import contextlib
import contextvars
import hashlib
import json
import logging
import os
import re
import threading
import urllib.request
import weakref

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction

BOARD_GROUP = "board"


def wait_group(hook_session):
    # Group names are limited to ASCII letters, digits, "-_." and 100 characters.
    return "wait." + hashlib.sha1(hook_session.encode()).hexdigest()


RELAYABLE_GROUP = re.compile(r"^(board|wait\.[0-9a-f]{40})$")
RELAYABLE_TYPES = {"board.ping", "wake"}
log = logging.getLogger("relaybay")


# Seconds the channel layer has to take one send before the send is given up: a send takes a
# few milliseconds when Redis answers.
SEND_BOUND = 1.0
# A send the layer did not take is tried again this often, and kept at most as long as a
# wake-up poll lasts (RELAYBAY_MAX_WAIT): by then every waiter has checked the database.
RETRY_AFTER = 0.5

_held = contextvars.ContextVar("relaybay_held_sends", default=None)


def send_to_group(group, message):
    """Best effort, never waited for (see the module's docstring). Within a request of the
    server (daphne's database threads, gunicorn's workers) the send is held (`holding_sends`)
    for the outbox; elsewhere it is made here, within SEND_BOUND."""
    layer = get_channel_layer()
    if layer is None:
        return
    held = _held.get()
    if held is not None:
        held.append((group, message))
        return
    try:
        async_to_sync(_bounded_send)(layer, group, message)
    except Exception as error:  # noqa: BLE001 - redis.ConnectionError, OSError, timeouts...
        _not_taken(group, message, error)


async def _bounded_send(layer, group, message):
    await asyncio.wait_for(layer.group_send(group, message), SEND_BOUND)


def _not_taken(group, message, error):
    reason = str(error) or f"no answer within {SEND_BOUND:g} s"
    log.warning("the channel layer did not take a %s for %s: %s", message.get("type"), group, reason)


class Outbox:
    """The channel-layer sends of one event loop, made in the background, one at a time, in
    the order they were asked for. While one is being made the others wait here, merged: a
    board ping's topics join those of the board ping waiting already, and a later message of
    the same type to the same group (a wake, a waiter's "replaced") takes the earlier one's
    place, since the receiver reads the database for what it means. So what waits is at most a
    message per group and type, however long the layer takes. A send the layer has not taken
    within SEND_BOUND goes back to wait, logged once for the stall, and the outbox tries again
    after RETRY_AFTER; a message that waited longer than a wake-up poll lasts is dropped, since
    every waiter has read the database since."""

    def __init__(self):
        self.waiting = {}  # (group, type) → (message, when it was last asked for)
        self.worker = None
        self.stalled = False

    def post(self, group, message):
        loop = asyncio.get_running_loop()
        key = (group, message.get("type"))
        self.waiting[key] = _merged(self.waiting.get(key), (message, loop.time()))
        if self.worker is None:
            self.worker = loop.create_task(self._send_waiting())

    def _put_back(self, key, kept):
        """A send the layer did not take goes first again, merged with what was asked for
        the same group and type meanwhile."""
        newer = self.waiting.pop(key, None)
        self.waiting = {key: _merged(kept, newer) if newer else kept, **self.waiting}

    async def _send_waiting(self):
        layer = get_channel_layer()
        loop = asyncio.get_running_loop()
        try:
            while self.waiting:
                key = next(iter(self.waiting))
                message, asked_at = self.waiting.pop(key)
                try:
                    await _bounded_send(layer, key[0], message)
                except Exception as error:  # noqa: BLE001 - as send_to_group
                    if not self.stalled:
                        _not_taken(key[0], message, error)
                        log.warning("the channel-layer sends not taken are kept and tried again every %g s", RETRY_AFTER)
                        self.stalled = True
                    self._put_back(key, (message, asked_at))
                    self._drop_older_than(loop.time() - settings.RELAYBAY_MAX_WAIT)
                    await asyncio.sleep(RETRY_AFTER)
                    continue
                if self.stalled:
                    log.warning("the channel layer takes sends again")
                    self.stalled = False
        finally:
            self.worker = None

    def _drop_older_than(self, moment):
        old = [key for key, (_, asked_at) in self.waiting.items() if asked_at < moment]
        for key in old:
            del self.waiting[key]
        if old:
            log.warning("dropped %d channel-layer send(s) kept longer than a wake-up poll lasts", len(old))


def _merged(earlier, later):
    """One waiting (message, asked at) for two of the same group and type: a board ping with
    both pings' topics, else the later message; asked at the later time."""
    if earlier is None:
        return later
    message = later[0]
    if message.get("type") == "board.ping":
        message = {**message, "topics": sorted({*earlier[0].get("topics", ()), *message.get("topics", ())})}
    return message, max(earlier[1], later[1])


_outboxes = weakref.WeakKeyDictionary()


def outbox():
    """The running event loop's outbox."""
    loop = asyncio.get_running_loop()
    box = _outboxes.get(loop)
    if box is None:
        box = _outboxes[loop] = Outbox()
    return box


@contextlib.contextmanager
def holding_sends():
    """Within the block (and the database threads its sync steps run on, which see its
    context), sends to the channel layer are held in the list it gives, for `post_held`."""
    held = []
    token = _held.set(held)
    try:
        yield held
    finally:
        _held.reset(token)


def post_held(held):
    """Hand the held sends, in the order they were asked for, to the running loop's outbox.
    Returns at once: nothing waits for the channel layer."""
    if not held:  # most answers: serve_api asks before each message it sends
        return
    box = outbox()
    while held:
        box.post(*held.pop(0))


def in_background(awaitable):
    """Run a channel-layer chore nobody waits for (a waiter leaving its group) on the running
    loop, within SEND_BOUND; its failure is only logged at debug level (a group entry expires
    on its own)."""

    async def chore():
        try:
            await asyncio.wait_for(awaitable, SEND_BOUND)
        except Exception as error:  # noqa: BLE001 - Redis gone or paused
            log.debug("a channel-layer chore did not finish: %r", error)

    task = asyncio.get_running_loop().create_task(chore())
    _chores.add(task)
    task.add_done_callback(_chores.discard)


_chores = set()


class _BackgroundLoop:
    """For requests that run on no event loop (gunicorn's sync workers): a thread of the
    process runs a loop for its outbox, started by the first sends handed to it (a worker
    forked from a master that had one starts its own)."""

    def __init__(self):
        self.loop = None
        self.pid = None
        self.lock = threading.Lock()

    def post(self, sends):
        with self.lock:
            if self.pid != os.getpid():
                self.loop = asyncio.new_event_loop()
                self.pid = os.getpid()
                threading.Thread(target=self.loop.run_forever, name="relaybay-outbox", daemon=True).start()
        self.loop.call_soon_threadsafe(post_held, sends)


_background = _BackgroundLoop()


def post_in_background(held):
    """Hand the sends held during a sync request (relaybay/wsgi.py) to the process's outbox
    thread; returns at once."""
    if held:
        _background.post(list(held))
        held.clear()


class RelayFailed(Exception):
    """The server did not take a relayed ping or wake (it is down, or at another address)."""


def relay_to_server(group, message):
    """How a process other than the server (a management command) sends: with the in-memory
    channel layer (the embedded default) the server's boards and waiters are in its process,
    so the send goes through its API (/api/relay, the owner's: commands run as the owner and
    send the owner token from data/); with Redis, straight to the layer.
    Raises RelayFailed when the server does not take it, for the command to say so."""
    if settings.REDIS_URL:
        send_to_group(group, message)
        return
    url = settings.RELAYBAY_URL.rstrip("/")
    request = urllib.request.Request(
        url + "/api/relay",
        data=json.dumps({"group": group, "message": message}).encode(),
        headers={"Authorization": f"Bearer {settings.RELAYBAY_OWNER_TOKEN}", "Content-Type": "application/json"},
    )
    try:
        urllib.request.urlopen(request, timeout=5).close()
    except OSError as error:  # urllib's HTTPError (a refusal) is an OSError too
        raise RelayFailed(f"relaybay at {url} did not take it: {getattr(error, 'reason', None) or error}") from error


def _send_after_commit(group, message, send):
    transaction.on_commit(lambda: send(group, message))


def ping(*topics, send=send_to_group):
    """Tell open boards which fragments to refetch: sessions, messages, inbox, events, ...
    `send`: how this process reaches them (relay_to_server outside the server)."""
    _send_after_commit(BOARD_GROUP, {"type": "board.ping", "topics": sorted(set(topics))}, send)


def wake_waiters(hook_sessions, send=send_to_group):
    for hook_session in hook_sessions:
        _send_after_commit(wait_group(hook_session), {"type": "wake"}, send)

"""Refresh pings and wake-ups, through the channel layer.

`ping` tells open boards what changed, and `wake_waiters` tells a session's waiting wake-up
hook that something arrived; both go through the channel layer after the transaction commits,
so nobody refetches a row that is not there yet. (The feed rows are sessions_app's:
sessions_app/feed.py.)

In the server, the database work runs on relaybay's database threads (core/dbthreads.py)
and the channel layer lives on the event loop. A send made on a database thread is held
(`holding_sends`) and made by the coroutine that awaited that thread, on the loop, as soon as
the thread's step returns and before the answer goes out (`send_held`): the thread does not
hand each send over to the loop and wait for it. Elsewhere (the test client, a command's
own process) the send is made where it is asked for.
"""

import contextlib
import contextvars
import hashlib
import json
import logging
import re
import urllib.request

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


_held = contextvars.ContextVar("relaybay_held_sends", default=None)


def send_to_group(group, message):
    """Best effort: the write this follows is committed already, so a channel layer that is
    down (Redis stopped) costs a board refresh or a prompt wake-up, logged, never the answer.
    A waiter still finds its delivery at its poll's last check. On a database thread in the
    server the send is held for the event loop (`holding_sends`)."""
    layer = get_channel_layer()
    if layer is None:
        return
    held = _held.get()
    if held is not None:
        held.append((group, message))
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception as error:  # noqa: BLE001 - redis.ConnectionError, OSError, timeouts...
        _not_taken(group, message, error)


def _not_taken(group, message, error):
    log.warning("the channel layer did not take a %s for %s: %s", message.get("type"), group, error)


@contextlib.contextmanager
def holding_sends():
    """Within the block (and the database threads its sync steps run on, which see its
    context), sends to the channel layer are held in the list it gives, for `send_held`."""
    held = []
    token = _held.set(held)
    try:
        yield held
    finally:
        _held.reset(token)


async def send_held(held):
    """Make the held sends, in the order they were asked for, on the event loop."""
    if not held:  # most answers: serve_api asks before each message it sends
        return
    layer = get_channel_layer()
    while held:
        group, message = held.pop(0)
        try:
            await layer.group_send(group, message)
        except Exception as error:  # noqa: BLE001 - as send_to_group
            _not_taken(group, message, error)


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

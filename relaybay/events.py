"""Refresh pings and wake-ups, through the channel layer.

`ping` tells open boards what changed, and `wake_waiters` tells a session's waiting wake-up
hook that something arrived; both go through the channel layer after the transaction commits,
so nobody refetches a row that is not there yet. (The feed rows are sessions_app's:
sessions_app/events.py.)
"""

import asyncio
import hashlib
import json
import logging
import re
import threading
import urllib.request
from contextlib import contextmanager

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

# Set by management commands that write: with the in-memory channel layer (the embedded
# default) their pings and wakes must reach the server process, so they go through its API.
relay_through_server = False


def _relay(group, message):
    request = urllib.request.Request(
        settings.RELAYBAY_URL.rstrip("/") + "/api/relay",
        data=json.dumps({"group": group, "message": message}).encode(),
        headers={"Authorization": f"Bearer {settings.RELAYBAY_TOKEN}", "Content-Type": "application/json"},
    )
    try:
        urllib.request.urlopen(request, timeout=5).close()
    except OSError:
        pass  # relaybay is not running: nobody is waiting for the ping either.


log = logging.getLogger("relaybay")
_detached = threading.local()
_sending = set()  # tasks of detached sends, held until done (the loop keeps only weak references)


@contextmanager
def sends_detached(loop):
    """On a database thread (relaybay/dbthreads.py): hand group sends to the server's event
    loop `loop` without waiting for them, so the thread that writes every hook never waits for
    the loop (nor for Redis)."""
    _detached.loop = loop
    try:
        yield
    finally:
        _detached.loop = None


def _log_failure(group, message):
    def done(task):
        _sending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("the channel layer did not take a %s for %s: %s", message.get("type"), group, task.exception())

    return done


def _start_send(layer, group, message):
    task = asyncio.ensure_future(layer.group_send(group, message))
    _sending.add(task)
    task.add_done_callback(_log_failure(group, message))


def send_to_group(group, message):
    """Best effort: the write this follows is committed already, so a channel layer that is
    down (Redis stopped) costs a board refresh or a prompt wake-up, logged, never the answer.
    A waiter still finds its delivery at its poll's last check."""
    layer = get_channel_layer()
    loop = getattr(_detached, "loop", None)
    if loop is not None and layer is not None and not (relay_through_server and not settings.REDIS_URL):
        try:
            loop.call_soon_threadsafe(_start_send, layer, group, message)
        except RuntimeError as error:  # the loop closed: the server is shutting down
            log.warning("the channel layer did not take a %s for %s: %s", message.get("type"), group, error)
        return
    try:
        if relay_through_server and not settings.REDIS_URL:
            _relay(group, message)
        elif layer is not None:
            async_to_sync(layer.group_send)(group, message)
    except Exception as error:  # noqa: BLE001 - redis.ConnectionError, OSError, timeouts...
        log.warning("the channel layer did not take a %s for %s: %s", message.get("type"), group, error)


def _send_after_commit(group, message):
    transaction.on_commit(lambda: send_to_group(group, message))


def ping(*topics):
    """Tell open boards which fragments to refetch: sessions, messages, inbox, events, ..."""
    _send_after_commit(BOARD_GROUP, {"type": "board.ping", "topics": sorted(set(topics))})


def wake_waiters(hook_sessions):
    for hook_session in hook_sessions:
        _send_after_commit(wait_group(hook_session), {"type": "wake"})

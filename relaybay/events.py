"""Refresh pings and wake-ups, through the channel layer.

`ping` tells open boards what changed, and `wake_waiters` tells a session's waiting wake-up
hook that something arrived; both go through the channel layer after the transaction commits,
so nobody refetches a row that is not there yet. (The feed rows are sessions_app's:
sessions_app/events.py.)
"""

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


def send_to_group(group, message):
    """Best effort: the write this follows is committed already, so a channel layer that is
    down (Redis stopped) costs a board refresh or a prompt wake-up, logged, never the answer.
    A waiter still finds its delivery at its poll's last check. In the server, asgiref runs
    the send on the server's event loop (the layer's home) and this thread waits for it."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception as error:  # noqa: BLE001 - redis.ConnectionError, OSError, timeouts...
        log.warning("the channel layer did not take a %s for %s: %s", message.get("type"), group, error)


class RelayFailed(Exception):
    """The server did not take a relayed ping or wake (it is down, or at another address)."""


def relay_to_server(group, message):
    """How a process other than the server (a management command) sends: with the in-memory
    channel layer (the embedded default) the server's boards and waiters are in its process,
    so the send goes through its API (/api/relay); with Redis, straight to the layer.
    Raises RelayFailed when the server does not take it, for the command to say so."""
    if settings.REDIS_URL:
        send_to_group(group, message)
        return
    url = settings.RELAYBAY_URL.rstrip("/")
    request = urllib.request.Request(
        url + "/api/relay",
        data=json.dumps({"group": group, "message": message}).encode(),
        headers={"Authorization": f"Bearer {settings.RELAYBAY_TOKEN}", "Content-Type": "application/json"},
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

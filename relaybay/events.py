"""Events and refresh pings.

`record_event` writes the feed row. `ping` tells open boards what changed, and `wake_waiters`
tells a session's waiting wake-up hook that something arrived; both go through the channel
layer after the transaction commits, so nobody refetches a row that is not there yet.
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


def record_event(name, *, session=None, hook_session="", data=None, replay=False, happened_at=None):
    from sessions_app.models import Event

    return Event.objects.create(
        name=name,
        session=session,
        hook_session=hook_session,
        data=data or {},
        replay=replay,
        happened_at=happened_at,
    )


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


def send_to_group(group, message):
    """Best effort: the write this follows is committed already, so a channel layer that is
    down (Redis stopped) costs a board refresh or a prompt wake-up, logged, never the answer.
    A waiter still finds its delivery at its poll's last check."""
    layer = get_channel_layer()
    try:
        if relay_through_server and not settings.REDIS_URL:
            _relay(group, message)
        elif layer is not None:
            async_to_sync(layer.group_send)(group, message)
    except Exception as error:  # noqa: BLE001 - redis.ConnectionError, OSError, timeouts...
        logging.getLogger("relaybay").warning("the channel layer did not take a %s for %s: %s", message.get("type"), group, error)


def _send_after_commit(group, message):
    transaction.on_commit(lambda: send_to_group(group, message))


def ping(*topics):
    """Tell open boards which fragments to refetch: sessions, messages, inbox, events, ..."""
    _send_after_commit(BOARD_GROUP, {"type": "board.ping", "topics": sorted(set(topics))})


def wake_waiters(hook_sessions):
    for hook_session in hook_sessions:
        _send_after_commit(wait_group(hook_session), {"type": "wake"})

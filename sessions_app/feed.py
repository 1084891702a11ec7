"""What a write leaves behind besides its rows: the feed row of what happened, and the wake-up
of a session whose wake-up hook waits. The refresh pings themselves are core.pings'."""

import functools

from core.compiled import Compiled, insert, insert_all
from core.pings import send_to_group, wake_waiters

from . import search_index
from .models import Event, HookLink


def record_event(name, **fields):
    """Write one feed row (an INSERT compiled once: every hook and every send writes some);
    `fields` as feed_row takes them."""
    row = insert(feed_row(name, **fields))
    search_index.keep_up([row])
    return row


def record_events(rows):
    """Write feed rows made by feed_row, with one INSERT. Their search entries follow in
    batches on SQLite (sessions_app/search_index.py)."""
    insert_all(rows)
    search_index.keep_up(rows)
    return rows


def feed_row(name, *, session=None, session_id=None, hook_session="", data=None, replay=False, happened_at=None):
    """A feed row, not written yet: record_event writes one, record_events several at once.
    `session_id` serves callers that hold only the row's key."""
    return Event(
        name=name,
        session_id=session.pk if session is not None else session_id,
        hook_session=hook_session,
        data=data or {},
        replay=replay,
        happened_at=happened_at,
    )


def wake_session(session, send=send_to_group):
    """Something arrived for `session`: wake its wake-up hooks that wait (an idle exact link
    with a current waiter), once the write commits. `send`: core.pings'. Asked after the
    write, not from links loaded earlier: a waiter that registered in between is woken too."""
    wake_sessions([session], send=send)


def wake_sessions(sessions, send=send_to_group):
    """wake_session for each of a broadcast's recipients, asked in one statement."""
    if sessions:
        wake_waiters(_waiting_hooks(len(sessions))(*[row.pk for row in sessions]), send=send)


@functools.cache
def _waiting_hooks(count):
    """The statement for `count` rows, compiled once (a fleet has a few sizes)."""

    def waiting(*session_ids):
        waiting = HookLink.objects.filter(session_id__in=session_ids, exact=True, state=HookLink.State.IDLE).exclude(waiter="")
        return waiting.values_list("hook_session", flat=True)

    return Compiled(waiting, kinds=(int,) * count)

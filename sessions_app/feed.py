"""What a write leaves behind besides its rows: the feed row of what happened, and the wake-up
of a session whose wake-up hook waits. The refresh pings themselves are core.pings'."""

from core.pings import send_to_group, wake_waiters

from . import search_index
from .models import Event, HookLink


def record_event(name, **fields):
    """Write one feed row; `fields` as feed_row takes them."""
    row = feed_row(name, **fields)
    row.save(force_insert=True)
    search_index.keep_up([row])
    return row


def record_events(rows):
    """Write feed rows made by feed_row, with one INSERT. Their search entries follow in
    batches on SQLite (sessions_app/search_index.py)."""
    Event.objects.bulk_create(rows)
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
        waiting = HookLink.objects.filter(session_id__in=[row.pk for row in sessions], exact=True, state=HookLink.State.IDLE).exclude(waiter="")
        wake_waiters(list(waiting.values_list("hook_session", flat=True)), send=send)

"""What a write leaves behind besides its rows: the feed row of what happened, and the wake-up
of a session whose wake-up hook waits. The refresh pings themselves are relaybay.events'."""

from relaybay.compiled import insert
from relaybay.events import send_to_group, wake_waiters

from .models import Event, HookLink


def record_event(name, *, session=None, session_id=None, hook_session="", data=None, replay=False, happened_at=None):
    """Write one feed row (an INSERT compiled once: every hook and every send writes some).
    `session_id` serves callers that hold only the row's key."""
    return insert(
        Event(
            name=name,
            session_id=session.pk if session is not None else session_id,
            hook_session=hook_session,
            data=data or {},
            replay=replay,
            happened_at=happened_at,
        )
    )


def wake_session(session, send=send_to_group):
    """Something arrived for `session`: wake its wake-up hooks that wait (an idle exact link
    with a current waiter), once the write commits. `send`: relaybay.events'. The row's links
    as loaded in the caller's transaction (find_sessions loads them) serve, or are read now."""
    waiting = [link.hook_session for link in session.links.all() if link.exact and link.state == HookLink.State.IDLE and link.waiter]
    wake_waiters(waiting, send=send)

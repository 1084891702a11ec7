"""Claude Code's native messages as message rows of channel `native` (docs/rules.md §4.9).

Hook ingestion reads what a payload says of native messaging (sessions_app.hooks.claude_native) and
hands it here through the recorder registered in MessagingConfig.ready. One row per native
send, with a mark following the hooks: sent or unreachable (the sender's SendMessage result),
held (the sender's notice, or the recipient's approval prompt, whichever of it and the send
reaches relaybay first), delivered (the recipient's prompt carried it), denied, expired,
refused, dropped (the sender's notices). The text is never stored: a send and its delivery
are matched by a keyed digest of the text together with the sender.
"""

from datetime import timedelta

from django.db.models import Q

from core.pings import ping
from sessions_app import directory
from sessions_app.feed import record_event
from sessions_app.hooks import claude_native
from sessions_app.models import HookLink

from .models import SessionMessage

Channel, State = SessionMessage.Channel, SessionMessage.State
# A send and its delivery are matched within this time; Claude Code holds a message at most
# this long (its default expiry) and delivers a busy session's at its next tool result.
MATCH_WINDOW = timedelta(minutes=10)
# A held message's approval prompt follows its send by moments; older sends are not it.
APPROVAL_WINDOW = timedelta(minutes=5)
# An approval prompt that came before its send is kept on the recipient's link this long for
# the send to find: the sender's SendMessage result follows it by moments.
APPROVAL_BEFORE_SEND = timedelta(minutes=1)
NOTICE_STATES = {State.HELD, State.DENIED, State.EXPIRED, State.REFUSED, State.DROPPED}


def _one(name):
    """The one row going by `name`, or None when none or several do."""
    rows = directory.find_sessions(name) if name else []
    return rows[0] if len(rows) == 1 else None


def _name_of(link):
    return link.native_name or link.session.name


def _edge(message):
    return {
        "message": message.pk,
        "from": f"S-{message.sender_id}" if message.sender_id else "",
        "from_name": message.sender_name,
        "to": f"S-{message.recipient_id}" if message.recipient_id else "",
        "to_name": message.recipient_name,
        "channel": Channel.NATIVE,
    }


def _mark(message, mark, **data):
    record_event(f"message.{mark}", session_id=message.sender_id or message.recipient_id, data={**_edge(message), **data})


def _create(**fields):
    message = SessionMessage.objects.create(channel=Channel.NATIVE, body="", **fields)
    record_event("session.message", session_id=message.sender_id or message.recipient_id, data=_edge(message))
    return message


def _sent(link, send, now):
    """The sender's SendMessage ran: its row, made here or by a delivery that came first."""
    directory.serialize_on("native", send.digest)
    if send.msg_id and SessionMessage.objects.filter(channel=Channel.NATIVE, native_id=send.msg_id).exists():
        # Its hook came again: the hook client replays an event whose answer did not reach it
        # in time, though relaybay had recorded it.
        return
    state = State.SENT if send.success else State.UNREACHABLE
    earlier = (
        SessionMessage.objects.filter(
            channel=Channel.NATIVE, native_digest=send.digest, native_id="", sender_id=link.session_id, created_at__gt=now - MATCH_WINDOW
        )
        .exclude(delivered_at=None)
        .order_by("id")
        .first()
    )
    if send.success and earlier is not None:
        # The recipient's prompt reached relaybay before the sender's tool result did.
        SessionMessage.objects.filter(pk=earlier.pk).update(native_id=send.msg_id)
        return
    recipient = _one(send.to) if send.success else None
    if recipient is not None:
        # Beside the recipient's approval prompt, which may be recorded at the same moment.
        directory.serialize_on("native-to", str(recipient.pk))
    message = _create(
        sender_id=link.session_id,
        sender_name=_name_of(link),
        sender_verified=link.exact,
        recipient=recipient,
        recipient_name=send.to[:200],
        task_id=link.session.task_id,
        state=state,
        native_id=send.msg_id,
        native_digest=send.digest,
    )
    _mark(message, state, msg_id=send.msg_id)
    if state == State.SENT and recipient is not None and _approval_was_asked(recipient, now):
        _hold(message)


def _approval_was_asked(recipient, now):
    """Whether the recipient's terminal asked about a message before its send reached
    relaybay; the prompt is taken by this send (a compare-and-set: one send takes it)."""
    asked = HookLink.objects.filter(session_id=recipient.pk, approval_asked_at__gt=now - APPROVAL_BEFORE_SEND)
    return asked.update(approval_asked_at=None) > 0


def _claimed_sender(sender, arrival):
    """The sender's name: its live link's native name when its socket is known, else the name
    the wrapper claims."""
    if sender is not None:
        names = [other.native_name for other in sender.newest_links() if other.native_socket == arrival.socket]
        return (names[0] if names and names[0] else sender.name)[:200]
    return (arrival.claimed_name or "unknown")[:200]


def _arrived(link, arrival, now):
    """The recipient's prompt carried a message: its send's row marked delivered, or a row
    made for it when the send has not been seen (yet)."""
    directory.serialize_on("native", arrival.digest)
    sender = _one("uds:" + arrival.socket) if arrival.socket else None
    waiting = SessionMessage.objects.filter(
        channel=Channel.NATIVE,
        native_digest=arrival.digest,
        delivered_at=None,
        state__in=[State.SENT, State.HELD],
        created_at__gt=now - MATCH_WINDOW,
    )
    if sender is not None:
        waiting = waiting.filter(sender=sender)
    waiting = waiting.filter(Q(recipient_id=link.session_id) | Q(recipient=None))
    by = f"UserPromptSubmit via {link.hook_session}"
    message = waiting.order_by("id").first()
    # The message was let in: an approval prompt still kept for its send is answered.
    HookLink.objects.filter(pk=link.pk).exclude(approval_asked_at=None).update(approval_asked_at=None)
    if message is not None:
        SessionMessage.objects.filter(pk=message.pk).update(delivered_at=now, delivered_by=by, recipient_id=link.session_id)
        message.recipient_id = link.session_id
    else:
        message = _create(
            sender=sender,
            sender_name=_claimed_sender(sender, arrival),
            # The socket is verified by Claude Code; a name without a known socket is only claimed.
            sender_verified=sender is not None,
            recipient_id=link.session_id,
            recipient_name=_name_of(link),
            task_id=link.session.task_id,
            delivered_at=now,
            delivered_by=by,
            native_digest=arrival.digest,
        )
    _mark(message, "delivered", by="UserPromptSubmit")


def _noticed(link, notice):
    """A delivery notice to the sender names its message by msg_id; one relaybay never saw
    changes nothing (the hook event keeps its kind and id)."""
    if notice.kind not in NOTICE_STATES or not notice.msg_id:
        return
    message = SessionMessage.objects.filter(channel=Channel.NATIVE, native_id=notice.msg_id, delivered_at=None).first()
    if message is None or message.state == notice.kind:
        return
    SessionMessage.objects.filter(pk=message.pk).update(state=notice.kind)
    _mark(message, notice.kind, msg_id=notice.msg_id)


def _approval_asked(link, now):
    """The recipient's terminal asks its user about a message: the newest native send to it
    that is neither delivered nor settled is held. Before its send has reached relaybay there
    is none: the prompt is kept on the link, and the send is held when it arrives."""
    directory.serialize_on("native-to", str(link.session_id))
    message = (
        SessionMessage.objects.filter(
            channel=Channel.NATIVE,
            recipient_id=link.session_id,
            state=State.SENT,
            delivered_at=None,
            created_at__gt=now - APPROVAL_WINDOW,
        )
        .order_by("-id")
        .first()
    )
    if message is None:
        HookLink.objects.filter(pk=link.pk).update(approval_asked_at=now)
        return
    _hold(message)


def _hold(message):
    SessionMessage.objects.filter(pk=message.pk).update(state=State.HELD)
    message.state = State.HELD
    _mark(message, State.HELD, by="Notification")


def do_record_native_traffic(*, link, traffic, now):
    """Record what one hook payload reported of native messaging. Called by hook ingestion
    inside its transaction, so the rows commit with the hook's event."""
    for item in traffic:
        if isinstance(item, claude_native.Send):
            _sent(link, item, now)
        elif isinstance(item, claude_native.NativeReceipt):
            _arrived(link, item, now)
        elif isinstance(item, claude_native.Notice):
            _noticed(link, item)
        elif isinstance(item, claude_native.Approval):
            _approval_asked(link, now)
    ping("messages", "map", "events", "inbox", "sessions")

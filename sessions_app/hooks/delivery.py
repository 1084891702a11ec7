"""Claiming what is pending for a session and turning it into one hook answer (SPEC §2.2-§2.5).

Claims are compare-and-set updates (`filter(pk=…, delivered_at=None).update(…)`), so when
several hooks of one session run at once each item goes to exactly one of them, on SQLite
and PostgreSQL alike, whichever process serves the hook.
"""

import functools
import json
from dataclasses import dataclass, field
from typing import NamedTuple

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from messaging.lib import message_block
from messaging.models import SessionMessage
from relaybay.events import ping, record_event

from ..models import Comment, HookLink

BUDGET = 8000
STOP_BLOCKS_PER_TURN = 3
SCAN = 50


def comment_block(comment):
    written = timezone.localtime(comment.created_at).strftime("%Y-%m-%d %H:%M UTC")
    return f"[relaybay] Comment C-{comment.pk} from the owner (written {written}):\n{comment.body}"


@dataclass
class Delivery:
    comments: list = field(default_factory=list)
    messages: list = field(default_factory=list)
    blocks: list = field(default_factory=list)

    def __bool__(self):
        return bool(self.blocks)

    def source(self):
        who = []
        if self.comments:
            who.append("the owner")
        senders = list(dict.fromkeys(m.sender_name for m in self.messages))
        if len(senders) == 1:
            # Quoted like the frame quotes it, so a name cannot pass for header text.
            who.append(f"session {json.dumps(senders[0], ensure_ascii=False)} (another session, not the owner)")
        elif senders:
            who.append(f"{len(senders)} other sessions (not the owner)")
        return " and ".join(who)

    def header(self):
        count = len(self.blocks)
        return f"relaybay: {count} new item{'s' if count > 1 else ''} for you, from {self.source()}. Read below."

    def text(self):
        return "\n\n".join([self.header(), *self.blocks])

    def fits(self, block, **item):
        """Whether one more whole item keeps the answer, header included, within BUDGET."""
        trial = Delivery(
            comments=self.comments + item.get("comments", []),
            messages=self.messages + item.get("messages", []),
            blocks=self.blocks + [block],
        )
        return len(trial.text()) <= BUDGET


def _pending_comments(session):
    return Comment.objects.filter(session_id=session, delivered_at=None)


def _pending_messages(session):
    # Native messages are Claude Code's to deliver; relaybay only records them.
    return SessionMessage.objects.filter(recipient_id=session, delivered_at=None, read_at=None, channel=SessionMessage.Channel.MCP)


class Pending(NamedTuple):
    comments: bool = True
    messages: bool = True

    def __bool__(self):
        return self.comments or self.messages


@functools.cache
def _pending_sql():
    comment, message = Comment._meta, SessionMessage._meta
    col = lambda meta, name: meta.get_field(name).column  # noqa: E731
    return (
        f"SELECT EXISTS(SELECT 1 FROM {comment.db_table} WHERE {col(comment, 'session')} = %s"
        f" AND {col(comment, 'delivered_at')} IS NULL),"
        f" EXISTS(SELECT 1 FROM {message.db_table} WHERE {col(message, 'recipient')} = %s"
        f" AND {col(message, 'delivered_at')} IS NULL AND {col(message, 'read_at')} IS NULL"
        f" AND {col(message, 'channel')} = '{SessionMessage.Channel.MCP}')"
    )


def pending(session_id):
    """Whether comments, and whether messages, wait for the session: whether `_pending_comments`
    and `_pending_messages` find anything. Every hook asks, and mostly hears no; written as SQL
    because building it with the ORM costs more than the database takes to answer it."""
    with connection.cursor() as cursor:
        cursor.execute(_pending_sql(), [session_id, session_id])
        comments, messages = cursor.fetchone()
    return Pending(bool(comments), bool(messages))


def claim_pending(link, carrier, kinds=Pending()):
    """Claim, oldest first, every whole item that fits one answer; `kinds` says which kinds
    are worth a look. Call inside a transaction."""
    now = timezone.now()
    by = f"{carrier} via {link.hook_session}"
    delivery = Delivery()
    full = False
    comments = _pending_comments(link.session_id).order_by("id")[:SCAN] if kinds.comments else []
    for comment in comments:
        block = comment_block(comment)
        if not delivery.fits(block, comments=[comment]):
            full = True
            break
        if Comment.objects.filter(pk=comment.pk, delivered_at=None).update(delivered_at=now, delivered_by=by):
            delivery.comments.append(comment)
            delivery.blocks.append(block)
    if not full and kinds.messages:
        for message in _pending_messages(link.session_id).order_by("id")[:SCAN]:
            block = message_block(message)
            if not delivery.fits(block, messages=[message]):
                break
            claimed = SessionMessage.objects.filter(pk=message.pk, delivered_at=None).update(
                delivered_at=now, delivered_by=by, not_delivered_reason=""
            )
            if claimed:
                delivery.messages.append(message)
                delivery.blocks.append(block)
    for comment in delivery.comments:
        record_event(
            "comment.delivered",
            session_id=link.session_id,
            hook_session=link.hook_session,
            data={"comment": comment.pk, "by": carrier},
        )
    for message in delivery.messages:
        record_event(
            "message.delivered",
            session_id=link.session_id,
            hook_session=link.hook_session,
            data={"message": message.pk, "from": message.sender_name, "to": message.recipient_name, "by": carrier},
        )
    if delivery:
        ping("sessions", "messages", "comments", "events")
    return delivery


def context_answer(event_name, delivery):
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": delivery.text()}}


def stop_answer(link, kinds=Pending()):
    """A Stop block when something is pending and this turn has blocks left. Inside a transaction."""
    took = HookLink.objects.filter(pk=link.pk, stop_blocks__lt=STOP_BLOCKS_PER_TURN).update(
        stop_blocks=F("stop_blocks") + 1, state=HookLink.State.BUSY
    )
    if not took:
        return {}
    delivery = claim_pending(link, "Stop", kinds)
    if not delivery:
        HookLink.objects.filter(pk=link.pk).update(stop_blocks=F("stop_blocks") - 1, state=HookLink.State.IDLE)
        return {}
    return {"decision": "block", "reason": delivery.text()}


WAKE_REPLACED = "replaced"


def claim_for_waiter(hook_session, waiter):
    """What a wake-up waiter may deliver now: text, None (keep waiting) or WAKE_REPLACED."""
    with transaction.atomic():
        link = HookLink.objects.select_for_update().select_related("session").filter(hook_session=hook_session).first()
        if link is None or link.waiter != waiter or not link.live:
            return WAKE_REPLACED
        if not link.exact or link.state != HookLink.State.IDLE:
            return None
        delivery = claim_pending(link, "wake-up")
        if not delivery:
            return None
        # The wake starts a new turn: it has its own Stop blocks, and this waiter is spent.
        HookLink.objects.filter(pk=link.pk).update(state=HookLink.State.BUSY, stop_blocks=0, waiter="")
        return delivery.text()


def register_waiter(hook_session, waiter):
    """Make `waiter` the session's current waiter; False when the hook id is unknown."""
    return HookLink.objects.filter(hook_session=hook_session).update(waiter=waiter) == 1


def forget_waiter(hook_session, waiter):
    """`waiter` gave up without waiting: unregister it, unless a newer one took over."""
    HookLink.objects.filter(hook_session=hook_session, waiter=waiter).update(waiter="")

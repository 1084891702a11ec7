"""Reads of messages: one message by its id, and the board's reads (unread counts, marks and
waiting reasons, the rows a session or a task shows, threads and the owner's Inbox)."""

from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Count
from django.utils import timezone

from core.errors import InvalidInput, NotFound
from core.inputs import clean_text, parse_id
from sessions_app import directory
from sessions_app.directory import Arrival

from .formatting import NATIVE_MARKS, message_mark, message_status, native_mark, read_mark
from .models import SessionMessage

# Claude Code expires a held native message after this long (its default): the sender's
# "expired" notice is never seen when the sender has exited by then.
NATIVE_HOLD = timedelta(minutes=5)


def get_message(message_id):
    """A message by its id (12 or M-12)."""
    ref = str(message_id).strip()
    ref = ref[2:] if ref.upper().startswith("M-") else ref
    if parse_id(ref) is None:
        raise InvalidInput(f'"{clean_text(str(message_id))}" is not a message id; give the number, like 12 or M-12.')
    message = SessionMessage.objects.select_related("sender", "recipient").filter(pk=parse_id(ref)).first()
    if message is None:
        raise NotFound(f"There is no message M-{ref}. messages_list shows your messages and their ids.")
    return message


def unread_counts(session_ids):
    """Messages to each row not yet read (the partial index on unread rows serves this)."""
    rows = (
        SessionMessage.objects.filter(recipient_id__in=session_ids, read_at=None, channel=SessionMessage.Channel.MCP)
        .values_list("recipient_id")
        .annotate(n=Count("id"))
    )
    return dict(rows)


def messages_by_ids(ids):
    return (
        SessionMessage.objects.filter(pk__in=ids)
        .select_related("task", "sender", "recipient")
        .prefetch_related(directory.links_loaded("recipient__links"))
    )


BOARD_WAITING = {
    **directory.NOT_DELIVERABLE,
    Arrival.CAPPED: directory.WAKE_CAP_WAIT,
    Arrival.WAKING: "it is idle and its wake-up hook is waiting; it is being woken.",
    Arrival.IDLE: "it is idle and no wake-up hook of it is waiting; it sees this at its next prompt.",
    Arrival.UNWAKEABLE: directory.UNWAKEABLE_WAIT,
    Arrival.BUSY: "it is busy; it reaches it at its next tool call or prompt.",
}


def waiting_reason(message):
    """Why a message that is neither delivered nor read still waits, as the board says it."""
    return BOARD_WAITING[directory.arrival(message.recipient)]


def decorate_messages(messages):
    """Give each message its marks and its number of replies."""
    messages = list(messages)
    replies = dict(
        SessionMessage.objects.filter(parent_id__in=[m.pk for m in messages])
        .values_list("parent_id")
        .annotate(n=Count("id"))
    )
    now = timezone.now()
    for message in messages:
        if message.channel == SessionMessage.Channel.NATIVE:
            # Claude Code delivers it, relaybay only watches: no read mark, no waiting reason.
            message.native_mark = native_mark(message)
            message.native_mark_title = NATIVE_MARKS.get(message.native_mark, "")
            message.read_mark = message.waiting = message.mark = message.decision = ""
        else:
            message.read_mark = read_mark(message)
            message.mark = message_mark(message, now)
            message.waiting = waiting_reason(message) if message.mark == "waiting" else ""
            message.decision = message_status(message, now) if message.mark in ("held", "denied", "expired") else ""
        message.reply_count = replies.get(message.pk, 0)
    return messages


def task_pairs(task):
    """(sender handle, recipient handle) of each pair that exchanged messages tagged with `task`."""
    tagged = SessionMessage.objects.filter(task=task, sender__isnull=False, recipient__isnull=False)
    return {(f"S-{sender}", f"S-{recipient}") for sender, recipient in tagged.values_list("sender_id", "recipient_id").distinct()}


def involving(sessions=(), task=None):
    """The querysets whose union is "messages of these rows (or of this task)"."""
    ids = [s.pk for s in sessions]
    querysets = []
    if ids:
        querysets += [SessionMessage.objects.filter(sender_id__in=ids), SessionMessage.objects.filter(recipient_id__in=ids)]
    if task is not None:
        querysets.append(SessionMessage.objects.filter(task=task))
    return querysets


def thread_roots(messages):
    """Map each message id to the id of its thread's root, walking parents up (depth ≤ 9)."""
    parent_of = {m.pk: m.parent_id for m in messages}
    missing = {p for p in parent_of.values() if p and p not in parent_of}
    while missing:
        rows = SessionMessage.objects.filter(pk__in=missing).values_list("pk", "parent_id")
        fetched = dict(rows)
        parent_of.update(fetched)
        parent_of.update({pk: None for pk in missing - fetched.keys()})
        missing = {p for p in fetched.values() if p and p not in parent_of}

    def root(pk):
        while parent_of.get(pk):
            pk = parent_of[pk]
        return pk

    return {m.pk: root(m.pk) for m in messages}


@dataclass
class Thread:
    root_id: int
    messages: list = field(default_factory=list)


def threaded(messages):
    """Messages grouped by thread, the thread with the newest message first; inside a thread
    oldest first, so each reply comes after what it answers."""
    roots = thread_roots(messages)
    threads = {}
    for message in sorted(messages, key=lambda m: m.pk):
        threads.setdefault(roots[message.pk], Thread(roots[message.pk])).messages.append(message)
    return sorted(threads.values(), key=lambda t: t.messages[-1].pk, reverse=True)


def whole_thread(message):
    """Every message of `message`'s thread, parents before replies."""
    root = message
    while root.parent_id:
        root = SessionMessage.objects.only("id", "parent_id").get(pk=root.parent_id)
    ids, level = [root.pk], [root.pk]
    while level:
        level = list(SessionMessage.objects.filter(parent_id__in=level).values_list("id", flat=True))
        ids += level
    return decorate_messages(messages_by_ids(ids).order_by("id"))


def inbox_querysets():
    """What waits on the owner (docs/rules.md §5.4): until the owner marks it seen, parents of
    depth-refused replies and unread messages whose recipient row is gone; until the owner
    delivers or denies it or it expires, a message held by its recipient's inbound policy
    (docs/rules.md §4.8); and, until it is delivered, denied or expires, a native message held for
    approval in its recipient's terminal (docs/rules.md §4.9). Querysets each served by its own partial
    index, rather than one OR that scans the table."""
    waiting = SessionMessage.objects.filter(owner_seen_at=None)
    now = timezone.now()
    return [
        waiting.filter(needs_owner=True),
        waiting.filter(recipient=None, read_at=None, needs_owner=False, channel=SessionMessage.Channel.MCP),
        SessionMessage.objects.filter(channel=SessionMessage.Channel.MCP, state=SessionMessage.State.HELD, held_until__gt=now),
        waiting.filter(
            channel=SessionMessage.Channel.NATIVE,
            state=SessionMessage.State.HELD,
            delivered_at=None,
            created_at__gt=now - NATIVE_HOLD,
        ),
    ]


def inbox_count():
    return sum(queryset.count() for queryset in inbox_querysets())

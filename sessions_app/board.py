"""Reads the owner's board shares: many rows' names and link states at once, unread counts,
the Inbox, message marks and threads, and keyset pages that stay fast on large tables."""

import unicodedata
from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.admin.views.decorators import staff_member_required
from django.db.models import Count, Prefetch
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.html import escape

from messaging.lib import read_mark
from messaging.models import SessionMessage
from relaybay.inputs import parse_id

from . import lib
from .models import HookLink, Session, Task

PAGE_SIZE = 50
# Claude Code expires a held native message after this long (its default): the sender's
# "expired" notice is never seen when the sender has exited by then.
NATIVE_HOLD = timedelta(minutes=5)

# The board is the owner's: their Django staff account (SPEC §5.1).
owner_required = staff_member_required(login_url="login")


def task_param(request, key="task"):
    """The task a filter names by id, or None."""
    ref = request.GET.get(key, "")
    return Task.objects.filter(pk=parse_id(ref)).first() if parse_id(ref) else None


def is_invisible(ch):
    """Control, format (bidi overrides, zero-width) and line/paragraph separator characters."""
    return ch not in "\n\t" and unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"}


def visible_text(text):
    """Agent-supplied text with its invisible characters written out as U+XXXX, for places
    that show plain strings (SVG labels, Markdown)."""
    text = "" if text is None else str(text)
    return "".join(f"⟨U+{ord(ch):04X}⟩" if is_invisible(ch) else ch for ch in text)


def plain_html(text):
    """Escaped text with each invisible character replaced by a visible U+XXXX marker."""
    text = "" if text is None else str(text)
    if not any(is_invisible(ch) for ch in text):
        return escape(text)
    return "".join(
        f'<span class="ctl" title="invisible character U+{ord(ch):04X}">U+{ord(ch):04X}</span>'
        if is_invisible(ch)
        else escape(ch)
        for ch in text
    )


def render_board(request, template, parts, context=None):
    """Render the page, or only the fragment an htmx refetch asks for.

    `parts` maps a fragment name (the id of its container, which is also its
    `{% partialdef %}` name) to a function returning that fragment's context, so a refetch
    runs only the queries of the fragment it redraws.
    """
    context = dict(context or {})
    target = request.htmx.target if request.htmx else None
    if target in parts:
        context.update(parts[target]())
        return TemplateResponse(request, f"{template}#{target}", context)
    for build in parts.values():
        context.update(build())
    return TemplateResponse(request, template, context)


def sessions_with_links():
    return Session.objects.select_related("task").prefetch_related(
        Prefetch("links", HookLink.objects.order_by("-id"))
    )


def display_name(session):
    """Session.name without a query per row: the links are prefetched, newest first."""
    if session.title:
        return session.title
    if session.desktop_id:
        return session.desktop_id
    links = list(session.links.all())
    if session.kind == Session.Kind.HOOK and links:
        return links[-1].hook_session
    return session.handle


def unread_counts(session_ids):
    """Messages to each row not yet read (the partial index on unread rows serves this)."""
    rows = (
        SessionMessage.objects.filter(recipient_id__in=session_ids, read_at=None, channel=SessionMessage.Channel.MCP)
        .values_list("recipient_id")
        .annotate(n=Count("id"))
    )
    return dict(rows)


def decorate_sessions(sessions):
    """Give each row what a list row shows: its name, link state, unread count."""
    sessions = list(sessions)
    unread = unread_counts([s.pk for s in sessions])
    for session in sessions:
        session.board_name = display_name(session)
        session.exactness, session.state = lib.link_state(session)
        session.why_not = lib.why_not_deliverable(session)
        session.unread = unread.get(session.pk, 0)
    return sessions


def resolve_filter_sessions(name):
    """Rows a filter names (a name, alias, desktop id, hook id or S-<id>); all of them if several."""
    return lib.find_sessions(name) if name else []


# --- Keyset pages --------------------------------------------------------------------------


@dataclass
class KeysetPage:
    rows: list
    newer: int | None = None
    older: int | None = None
    size: int = PAGE_SIZE

    @property
    def has_other_pages(self):
        return self.newer is not None or self.older is not None


def _id_param(value):
    return parse_id(value)


def keyset_ids(querysets, *, before=None, after=None, size=PAGE_SIZE):
    """One page of ids, newest first, from the union of `querysets`.

    Each queryset is read in id order from its own index and the pages are merged here, so
    "sent or received by S" is two index range scans rather than an OR over the table.
    Returns (ids, newer, older): the ids of the page and the cursors of its neighbours.
    """
    before, after = _id_param(before), _id_param(after)
    found = set()
    for queryset in querysets:
        if after is not None:
            queryset = queryset.filter(id__gt=after).order_by("id")
        else:
            if before is not None:
                queryset = queryset.filter(id__lt=before)
            queryset = queryset.order_by("-id")
        found.update(queryset.values_list("id", flat=True)[: size + 1])
    if after is not None:
        ids = sorted(found)[: size + 1]
        more_newer = len(ids) > size
        ids = sorted(ids[:size], reverse=True)
        newer = ids[0] if more_newer and ids else None
        older = ids[-1] if ids else after + 1
        return ids, newer, older
    ids = sorted(found, reverse=True)[: size + 1]
    more_older = len(ids) > size
    ids = ids[:size]
    older = ids[-1] if more_older else None
    newer = ids[0] if before is not None and ids else (before - 1 if before is not None else None)
    return ids, newer, older


def keyset_page(querysets, rows_for, *, before=None, after=None, size=PAGE_SIZE):
    """A KeysetPage whose rows are `rows_for(ids)` kept in the order of the ids."""
    ids, newer, older = keyset_ids(querysets, before=before, after=after, size=size)
    by_id = {row.pk: row for row in rows_for(ids)} if ids else {}
    return KeysetPage([by_id[i] for i in ids if i in by_id], newer=newer, older=older, size=size)


# --- Messages ------------------------------------------------------------------------------


def messages_by_ids(ids):
    return (
        SessionMessage.objects.filter(pk__in=ids)
        .select_related("task", "sender", "recipient")
        .prefetch_related(Prefetch("recipient__links", HookLink.objects.order_by("-id")))
    )


def waiting_reason(message):
    """Why a message that is neither delivered nor read still waits, as the board says it."""
    recipient = message.recipient
    why = lib.why_not_deliverable(recipient)
    if why:
        return why
    link = lib.current_link(recipient)
    if link.state == HookLink.State.IDLE:
        if link.waiter:
            return "it is idle and its wake-up hook is waiting; it is being woken."
        return "it is idle; it sees this at its next prompt or wake-up."
    return "it is busy; it reaches it at its next tool call or prompt."


def decorate_messages(messages):
    """Give each message its marks and its number of replies."""
    messages = list(messages)
    replies = dict(
        SessionMessage.objects.filter(parent_id__in=[m.pk for m in messages])
        .values_list("parent_id")
        .annotate(n=Count("id"))
    )
    for message in messages:
        message.read_mark = read_mark(message)
        message.waiting = "" if (message.delivered_at or message.read_at) else waiting_reason(message)
        message.reply_count = replies.get(message.pk, 0)
    return messages


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


# --- Events ------------------------------------------------------------------------------

# Hook payload fields an event row already shows as its name and its hook session.
REPEATED_KEYS = {"hook_event_name", "session_id"}
MARK_CHARS = 120


def event_marks(event):
    """An event's data as short (name, value) marks: long values cut, nested ones only named."""
    marks = []
    for key, value in (event.data or {}).items():
        if key in REPEATED_KEYS:
            continue
        if isinstance(value, list) and all(isinstance(item, (str, int, float, bool)) for item in value):
            text = ", ".join(str(item) for item in value)
        elif isinstance(value, (dict, list)):
            marks.append((key, "{…}" if isinstance(value, dict) else "[…]"))
            continue
        else:
            text = str(value)
        marks.append((key, text if len(text) <= MARK_CHARS else text[: MARK_CHARS - 1] + "…"))
    return marks


# --- Inbox ---------------------------------------------------------------------------------


def inbox_querysets():
    """What waits on the owner (SPEC §5.4): until the owner marks it seen, parents of
    depth-refused replies and unread messages whose recipient row is gone; and, until it is
    delivered, denied or expires, a native message held for approval in its recipient's
    terminal (SPEC §4.9). Querysets each served by its own partial index, rather than one OR
    that scans the table."""
    waiting = SessionMessage.objects.filter(owner_seen_at=None)
    return [
        waiting.filter(needs_owner=True),
        waiting.filter(recipient=None, read_at=None, needs_owner=False, channel=SessionMessage.Channel.MCP),
        waiting.filter(
            channel=SessionMessage.Channel.NATIVE,
            state=SessionMessage.State.HELD,
            delivered_at=None,
            created_at__gt=timezone.now() - NATIVE_HOLD,
        ),
    ]


def inbox_count():
    return sum(queryset.count() for queryset in inbox_querysets())

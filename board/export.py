"""Markdown export of a session or a task (docs/rules.md §5.5): its comments, its events and the marks
of its messages. Message texts are never exported. Agent-supplied names are escaped so that
they read as the plain text they are, never as Markdown."""

import re

from django.db.models import Q
from django.utils import timezone

from messaging import reads
from messaging.formatting import native_mark, read_mark
from messaging.models import SessionMessage
from sessions_app import directory
from sessions_app.models import Comment, Event

from . import pages

# What can start Markdown or HTML inside a line; names never start a line here.
_PUNCTUATION = re.compile(r"([\\`*_{}\[\]#|<>~&])")


def md(text):
    """One line of plain text for Markdown: punctuation escaped, invisible characters shown."""
    return _PUNCTUATION.sub(r"\\\1", pages.visible_text(text))


def fenced(text):
    """A block of text as a fenced code block, with a fence longer than any backtick run in it."""
    text = pages.visible_text(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def when(moment):
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S %Z") if moment else "—"


def _table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def _session_facts(session):
    exactness, state = directory.link_state(session)
    facts = [
        ("Kind", session.kind),
        ("Title", md(session.title) or "—"),
        ("Aliases", ", ".join(md(a) for a in session.aliases) or "—"),
        ("Desktop id", md(session.desktop_id) if session.desktop_id else "—"),
        ("Folder", md(session.folder) or "—"),
        ("Task", md(session.task.title) if session.task_id else "—"),
        ("Link", f"{exactness} {state}".strip()),
        ("Delivery", md(directory.why_not_deliverable(session)) or "comments and messages reach it at its next hook"),
        ("Created", when(session.created_at)),
        ("Last seen", when(session.last_seen_at)),
    ]
    links = ", ".join(
        f"{md(link.hook_session)} ({'exact' if link.exact else 'guessed'}, {link.state})" for link in session.newest_links()
    )
    facts.append(("Claude Code sessions", links or "—"))
    return "\n".join(f"- **{name}:** {value}" for name, value in facts)


def _comments(comments):
    parts = []
    for comment in comments:
        delivered = f"delivered {when(comment.delivered_at)} ({md(comment.delivered_by)}){_confirmation(comment)}" if comment.delivered_at else "not delivered yet"
        parts.append(
            f"### C-{comment.pk} to {md(comment.session_name)}\n\nWritten {when(comment.created_at)}; {delivered}.\n\n"
            + fenced(comment.body)
        )
    return "\n\n".join(parts) or "No comments."


def _messages(querysets):
    ids = set()
    for queryset in querysets:
        ids.update(queryset.values_list("id", flat=True))
    messages = SessionMessage.objects.filter(pk__in=ids).select_related("task").order_by("id").defer("body")
    rows = [
        [
            f"M-{m.pk}",
            "native" if m.channel == SessionMessage.Channel.NATIVE else "relaybay",
            md(m.sender_name) + ("" if m.sender_verified else " (name not verified)"),
            md(m.recipient_name) + ("" if m.recipient_id else " (row gone)"),
            md(m.task.title) if m.task_id else "",
            f"M-{m.parent_id}" if m.parent_id else "",
            when(m.created_at),
            _delivery_mark(m),
            _read_mark(m),
        ]
        for m in messages
    ]
    if not rows:
        return "No messages."
    return _table(["Message", "Channel", "From", "To", "Task", "Reply to", "Sent", "Delivered", "Read"], rows)


def _confirmation(item):
    """Whether the session's hook client confirmed it printed a delivered item (docs/rules.md §2.6)."""
    if item.confirmed_at:
        return f", confirmed {when(item.confirmed_at)}"
    return ", not confirmed yet" if item.offered_at else ""


def _delivery_mark(message):
    if message.delivered_at:
        return when(message.delivered_at) + _confirmation(message)
    if message.channel == SessionMessage.Channel.NATIVE:
        return native_mark(message)
    return "not delivered yet"


def _read_mark(message):
    if message.channel == SessionMessage.Channel.NATIVE:
        return "text not stored"
    return f"{read_mark(message)} {when(message.read_at)}" if message.read_at else "unread"


def _events(events):
    rows = []
    for event in events.order_by("id").iterator(chunk_size=2000):
        marks = [f"{md(key)}={md(value)}" for key, value in pages.event_marks(event)]
        name = event.name + (" (replay)" if event.replay else "")
        rows.append([str(event.pk), when(event.created_at), md(name), md(event.hook_session), " · ".join(marks)])
    if not rows:
        return "No events."
    return _table(["#", "When", "Event", "Claude Code session", "Marks"], rows)


def _document(title, sections):
    header = f"# {title}\n\nExported from relaybay {when(timezone.now())}. Message texts are never exported; names are shown as plain text."
    return "\n\n".join([header, *[f"## {name}\n\n{body}" for name, body in sections]]) + "\n"


def session_markdown(session):
    session = directory.sessions_with_links().get(pk=session.pk)
    name = session.name
    return _document(
        f"Session {md(name)} ({session.handle})",
        [
            ("Session", _session_facts(session)),
            ("Comments", _comments(session.comments.order_by("id"))),
            ("Messages (marks only)", _messages(reads.involving([session]))),
            ("Events", _events(Event.objects.filter(session=session))),
        ],
    )


def task_markdown(task):
    sessions = list(directory.sessions_with_links().filter(task=task).order_by("id"))
    listing = "\n".join(
        f"- {session.handle} {md(session.name)} — {session.kind}, "
        + " ".join(directory.link_state(session)).strip()
        for session in sessions
    )
    task_events = Event.objects.filter(Q(session__in=sessions) | Q(name__startswith="task.", data__task=task.pk))
    return _document(
        f"Task {md(task.title)} (#{task.pk}, {task.status})",
        [
            ("Sessions", listing or "No sessions."),
            ("Comments", _comments(Comment.objects.filter(session__in=sessions).order_by("id"))),
            ("Messages (marks only)", _messages(reads.involving(sessions, task=task))),
            ("Events", _events(task_events)),
        ],
    )


"""What the owner's board pages share: the owner check, fragment rendering, agent text made
visible, many rows' names and link states at once, and keyset pages that stay fast on large
tables. The reads of messages live with messaging (messaging/reads.py)."""

import json
import unicodedata
from dataclasses import dataclass
from datetime import datetime

from django.contrib import messages as flash
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils.html import escape

from approvals import lib as requests
from approvals.answers import summary_of
from messaging.reads import unread_counts
from core import auth
from core.errors import RelaybayError
from core.inputs import parse_id
from sessions_app import directory

from . import doing
from sessions_app.models import Event, HookLink, Task

PAGE_SIZE = 50

owner_required = auth.owner_required


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


def composer_answer(request, write, *, composer, page):
    """Answer a comment composer's post (board/_composer.html) with `write()`'s outcome.

    htmx gets the composer back: emptied and marked sent when the comment was saved, else
    with its text and the error sentence. A plain form post gets `page` again with a flash.
    """
    try:
        result = write()
    except RelaybayError as error:
        if request.htmx:
            answer = {**composer, "body": request.POST.get("body", ""), "error": error.message}
            return TemplateResponse(request, "board/_composer.html", answer)
        flash.error(request, error.message)
        return redirect(page)
    saved = f"Comment saved for {result.comment.session_name}; it reaches the session at its next hook."
    if request.htmx:
        return TemplateResponse(request, "board/_composer.html", {**composer, "sent": saved})
    flash.success(request, saved)
    return redirect(page)


def decorate_sessions(sessions):
    """Give each row what a list row shows: its name, link state, unread count."""
    sessions = list(sessions)
    unread = unread_counts([s.pk for s in sessions])
    waiting = requests.waiting_by_session([s.pk for s in sessions])
    for session in sessions:
        session.board_name = session.name
        session.exactness, session.state = directory.link_state(session)
        session.machine = directory.session_machine(session)
        session.why_not = directory.why_not_deliverable(session)
        when = directory.arrival(session)
        session.messages_wait = directory.WAKE_CAP_WAIT if when == directory.Arrival.CAPPED else ""
        # Some CLIs have no hook that waits while a session is idle (docs/rules.md §1.6).
        session.not_woken = directory.UNWAKEABLE_WAIT if when == directory.Arrival.UNWAKEABLE else ""
        session.unread = unread.get(session.pk, 0)
        # What it is doing, in words (board/doing.py): what it waits on the owner for, else the
        # tool it runs (read for busy rows only).
        session.needs_you = waiting.get(session.pk)
        now = activity(session) if session.state == HookLink.State.BUSY and session.needs_you is None else Activity(session.state)
        session.doing = doing.words(session, now, session.needs_you)
    return sessions


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


# --- Events ------------------------------------------------------------------------------

# Fields that tell nothing at a glance (the row's own name and hook id, ids, modes and
# settings of every hook call); they stay in the event's expandable details.
QUIET_KEYS = {"hook_event_name", "session_id", "prompt_id", "tool_use_id", "permission_mode", "effort", "cwd"}
MARK_CHARS = 120


def _clipped(text, limit=MARK_CHARS):
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_scalar(value):
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _is_blank(value):
    return value is None or value is False or value in ("", [], {})


def digest(value):
    """A one-line reading of a field: an object's plain fields ("command: pytest -q"), a list's
    items, a number of items when they are objects; "" when nothing reads at a glance."""
    if isinstance(value, dict):
        text = " · ".join(f"{key}: {item}" for key, item in value.items() if _is_scalar(item) and str(item).strip())
    elif isinstance(value, list):
        if all(_is_scalar(item) for item in value):
            text = ", ".join(str(item) for item in value)
        else:
            text = f"{len(value)} item{'s' if len(value) != 1 else ''}"
    else:
        text = str(value)
    return _clipped(" ".join(text.split()))


def event_marks(event):
    """An event's data as short (name, value) marks: what reads at a glance, nothing empty."""
    marks = []
    for key, value in (event.data or {}).items():
        if key in QUIET_KEYS or _is_blank(value):
            continue
        text = digest(value)
        if text:
            marks.append((key, text))
    return marks


def event_details(event):
    """Every stored field of an event, for the details a row expands on demand; "" when its
    marks already show them all."""
    data = event.data or {}
    shown = dict(event_marks(event))

    def hidden(key, value):
        if _is_blank(value):
            return False
        if key in QUIET_KEYS or isinstance(value, dict):
            return True
        if isinstance(value, list):
            return not all(_is_scalar(item) for item in value) or shown.get(key) != ", ".join(map(str, value))
        return shown.get(key) != str(value)

    return json.dumps(data, indent=2, ensure_ascii=False) if any(hidden(k, v) for k, v in data.items()) else ""


# --- What a session is doing now -----------------------------------------------------------


@dataclass
class Activity:
    """The top of a session's page: its state, since when, its current tool, its last prompt."""

    state: str  # busy, idle, ended; "" when no hook link speaks for the row
    since: datetime | None = None
    tool: str = ""
    tool_input: str = ""
    tool_summary: str = ""  # what the tool does: its command, file or address
    prompt: str = ""
    prompt_at: datetime | None = None
    prompt_shown: str = ""  # a wake-up in words (board/doing.py)


def activity(session):
    link = directory.current_link(session)
    if link is None:
        return Activity("")
    hook_events = Event.objects.filter(session=session, hook_session=link.hook_session, name__startswith="hook.").order_by("-id")
    prompt = hook_events.filter(name="hook.UserPromptSubmit").only("data", "created_at").first()
    now = Activity(link.state, since=link.last_event_at)
    if prompt is not None:
        now.prompt, now.prompt_at = str(prompt.data.get("prompt") or ""), prompt.created_at
        now.prompt_shown = doing.prompt_words(session, now.prompt, now.prompt_at)
    if link.state == HookLink.State.BUSY:
        last = hook_events.only("name", "data", "created_at").first()
        if last is not None and last.name == "hook.PreToolUse":
            now.tool = str(last.data.get("tool_name") or "")
            now.tool_input = digest(last.data.get("tool_input") or "")
            now.tool_summary = summary_of(last.data.get("tool_input"))
            now.since = last.created_at
        elif prompt is not None:
            now.since = prompt.created_at
    else:
        turned = "hook.SessionEnd" if link.state == HookLink.State.ENDED else "hook.Stop"
        last = hook_events.filter(name__in=[turned, "hook.SessionStart"]).only("created_at").first()
        if last is not None:
            now.since = last.created_at
    return now

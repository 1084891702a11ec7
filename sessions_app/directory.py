"""Reads and formatting for sessions: name and task lookup, link state, the texts hooks deliver."""

import re
from datetime import timedelta
from enum import StrEnum

from django.conf import settings
from django.db import connection
from django.db.models import OuterRef, Prefetch, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

import engines
from core import auth, capabilities, guidance
from core.errors import Ambiguous, InvalidInput, NotFound
from core.inputs import check_identifier, clean_text, is_identifier_text, parse_id

from machines.models import Machine

from . import identity
from .hooks.claude_native import socket_path
from .models import HookLink, RefusedHooks, Session, SessionName, Task, UnheardSession, fold_name

HANDLE_RE = re.compile(r"^S-([0-9]+)$")
NAME_MAX = 200
# The header carrying a Claude Code process's proof: sha256 of "relaybay-process:" and the
# process's CLAUDE_CODE_MESSAGING_TOKEN, sent by the hook client with every hook and by the
# http MCP server's headersHelper with every call (never the token itself).
PROCESS_HEADER = "X-Relaybay-Process"
PROOF_RE = re.compile(r"^[0-9a-f]{64}$")


def check_name(name, *, what="name"):
    """A name is one line of at most 200 characters, not blank."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise InvalidInput(f"The {what} must be a string.")
    if any(ch in name for ch in "\r\n\v\f\x85\u2028\u2029"):
        raise InvalidInput(f"The {what} must be a single line; remove the line break.")
    # NUL and lone surrogates: the same refusal, with its code, as every identifier's.
    check_identifier(name, what=what, max_length=len(name), required=False)
    name = name.strip()
    if not name:
        raise InvalidInput(f"The {what} is empty; give a session title, alias, desktop id or S-<id> handle.")
    if len(name) > NAME_MAX:
        raise InvalidInput(f"The {what} is longer than {NAME_MAX} characters; use a shorter title or alias.")
    return name


def process_proof(value):
    """The header's value when it is a well-formed proof, else ''."""
    value = (value or "").strip().lower()
    return value if PROOF_RE.match(value) else ""


def caller_process(request):
    """The process a request speaks as (core.auth.caller_process): its proof header, namespaced
    by the machine whose token it carries."""
    return auth.caller_process(getattr(request, "auth", None), process_proof(request.headers.get(PROCESS_HEADER)))


def hook_session_of_process(proof):
    """The hook session a Claude Code process speaks for now: the one its hooks last reported
    `proof` with (it moves to the new id after /clear or /resume), or None."""
    if not proof:
        return None
    return HookLink.objects.filter(process_proof=proof).order_by("pk").values_list("hook_session", flat=True).first()


def proven_hook_session(hook_session, proof):
    """The hook session a call speaks for: the one it names, else the one whose hooks carry the
    same process proof as the call (header X-Relaybay-Process, sent by the stdio MCP server and
    the http one's headersHelper), else none (docs/mcp.md)."""
    return (hook_session or "").strip() or hook_session_of_process(proof) or hook_session


def link_of(hook_session, *, with_session=False):
    """The hook id's link (hook_session is unique), or None; `with_session` loads its row too."""
    if not hook_session:
        return None
    links = HookLink.objects.filter(hook_session=hook_session)
    return (links.select_related("session") if with_session else links).first()


def live_exact_link(row):
    """The row's live exact link (a row has one at most), or None."""
    return HookLink.objects.live_exact().filter(session_id=row.pk).order_by("pk").first()


def serialize_on(*key):
    """Make concurrent transactions about the same `key` (a name about to be given a row, a
    hook id about to be linked) take turns until commit, so a row is made once. PostgreSQL
    (READ COMMITTED, several processes): a transaction-level advisory lock. SQLite: nothing
    to do, its IMMEDIATE transactions already let one writer in at a time. Call inside a
    transaction."""
    if capabilities.of(connection).advisory_locks:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", ["\n".join(key)])


def find_sessions(name):
    """Every row that goes by `name` (docs/rules.md §1.1, §4.9), with its links loaded as
    current_link reads them. Never creates a row.

    Claude Code's native name and messaging socket (`uds:/…/<pid>.sock` or the bare path)
    count while their link is live: both are the process's, and once it exits another
    session may take the name and another process the socket's pid."""
    name = (name or "").strip()
    if not name or not is_identifier_text(name):
        return []
    socket = socket_path(name) if name.startswith(("uds:", "/")) else ""
    handle = HANDLE_RE.match(name)
    pk = (parse_id(handle.group(1)) or 0) if handle else 0
    key = fold_name(name)
    going_by = _names_match(name, key, pk)
    if socket:
        # Only a name that is a socket asks for one: the index holds every link without a socket.
        going_by |= Q(pk__in=HookLink.objects.live().filter(native_socket=socket).values("session_id"))
    rows = list(Session.objects.filter(going_by))
    for row in rows:
        with_links(row)
    return rows


def _names_match(name, key, pk):
    """Its title or an alias (folded: `key`), desktop id, a hook id, a live native name, or its
    S-<id> handle (none when `pk` is 0). Every term is an index lookup: the names by SessionName's
    index, not by scanning every row's name_keys."""
    match = Q(pk__in=SessionName.objects.filter(key=key).values("session_id")) | Q(desktop_id=name)
    match |= Q(pk__in=HookLink.objects.filter(hook_session=name).values("session_id"))
    match |= Q(pk__in=HookLink.objects.live().filter(native_name_key=key).values("session_id"))
    return match | Q(pk=pk)


def candidates_sentence(rows):
    parts = []
    for row in rows:
        exactness, state = link_state(row)
        bits = [row.handle, f'"{row.public_name}"']
        if row.desktop_id:
            bits.append(f"desktop id {row.desktop_id}")
        bits.append(f"{exactness} {state}".strip())
        parts.append(" ".join(bits))
    return "; ".join(parts)


def one_going_by(name):
    """The one row going by `name`, or None; several is an error naming them."""
    rows = find_sessions(name)
    if len(rows) > 1:
        raise Ambiguous(f'Several sessions go by "{name}": {candidates_sentence(rows)}. Name one by its S-<id> handle.')
    return rows[0] if rows else None


def resolve_one(name, *, what="session"):
    """The one row going by `name`, or a clear error (none found / several found)."""
    name = check_name(name, what=what)
    row = one_going_by(name)
    if row is None:
        raise NotFound(f'No session goes by "{name}". Use sessions_list to see the names you can use.')
    return row


def get_task(task_ref):
    """A task by id or exact title."""
    if task_ref in (None, ""):
        return None
    task_ref = str(task_ref).strip()
    if parse_id(task_ref):
        task = Task.objects.filter(pk=parse_id(task_ref)).first()
        if task:
            return task
    if not is_identifier_text(task_ref):
        raise NotFound(f'No task "{clean_text(task_ref)}". Give a task id or its exact title.')
    tasks = list(Task.objects.filter(title__iexact=task_ref)[:2])
    if len(tasks) == 1:
        return tasks[0]
    if len(tasks) > 1:
        raise Ambiguous(f'Several tasks are titled "{task_ref}"; give the task id instead.')
    raise NotFound(f'No task "{task_ref}". Give a task id or its exact title.')


# How a row's links are loaded, for a list (sessions_with_links) or a name's rows (with_links):
# newest first, the order current_link reads them in.
LINKS_NEWEST_FIRST = HookLink.objects.order_by("-id")


def with_links(row):
    """`row` with its links loaded newest first (Session.newest_links), as sessions_with_links
    loads them for a list."""
    _give_links([row], LINKS_NEWEST_FIRST.filter(session_id=row.pk))
    return row


def _give_links(rows, links, attr="loaded_links"):
    """Each row's links, newest first as `links` come, each link knowing its row: as
    Session.newest_links reads them (`loaded_links`: all of them), or only those current_link
    chooses from (`speaking_links`: listed_sessions)."""
    by_id = {row.pk: row for row in rows}
    for row in rows:
        setattr(row, attr, [])
    for link in links:
        # A row that joined the list between the two reads (it became live, took the task)
        # was not listed: its links are not wanted.
        row = by_id.get(link.session_id)
        if row is None:
            continue
        HookLink.session.field.set_cached_value(link, row)
        getattr(row, attr).append(link)


def links_loaded(path="links"):
    """The prefetch that loads rows' links (`path` leads to the rows) as Session.newest_links
    reads them: a plain list per row (`to_attr`), rather than Django's own prefetch cache, which
    builds a related manager and a filtered queryset for every row."""
    return Prefetch(path, LINKS_NEWEST_FIRST, to_attr="loaded_links")


def sessions_with_links():
    """Rows with their task and their links loaded: what lists of rows show without a query per row."""
    return Session.objects.select_related("task").prefetch_related(links_loaded())


# The most rows sessions_list gives.
LIST_LIMIT = 500


# What session_summary and why_not_deliverable read of a row and of its links: sessions_list
# reads only these columns (the others stay deferred).
SHOWN = ("title", "aliases", "desktop_id", "kind", "engine", "folder", "task_id")
SHOWN_OF_LINKS = ("session_id", "exact", "state", "agent_wakes", "waiter", "waiter_polled_at", "process_proof")


def listed_sessions(*, task=None, folder="", engine="", live_only=False, limit=LIST_LIMIT, shown_only=False):
    """The rows of a task, of a folder, of an engine, or live only, most recently seen first (at most
    `limit`; None: all), each with its task and the links current_link chooses from: what
    sessions_list shows and whom a broadcast reaches, in three queries however many rows.
    `shown_only` reads only the columns a summary shows (SHOWN, SHOWN_OF_LINKS), the others
    left deferred (docs/benchmarks.md)."""
    listed = Session.objects.live() if live_only else Session.objects.all()
    if task is not None:
        listed = listed.filter(task_id=task.pk)
    if folder:
        listed = listed.filter(folder=folder)
    if engine:
        listed = listed.filter(engine=engine)
    listed = listed.order_by("-last_seen_at", "-id")
    rows = listed[:limit]
    rows_read = list(rows.only(*SHOWN) if shown_only else rows)
    # Only what current_link chooses from: each row's newest link, and its live exact one (a
    # row has one at most), not every link a row ever had (one per /clear, restart or new
    # session id). The rows' restriction stands outside the OR, so PostgreSQL too reads the
    # listed rows' links by index rather than filtering every link there is; the newest is
    # looked up once per row, not once per link.
    newest = HookLink.objects.filter(session_id=OuterRef("pk")).order_by("-id").values("pk")[:1]
    newest_of_rows = listed.annotate(newest=Subquery(newest))[:limit].values("newest")
    links = LINKS_NEWEST_FIRST.filter(Q(session_id__in=rows.values("pk")), Q(pk__in=newest_of_rows) | HookLink.LIVE_EXACT)
    _give_links(rows_read, links.only(*SHOWN_OF_LINKS) if shown_only else links, attr="speaking_links")
    attach_tasks(rows_read)
    return rows_read


def attach_tasks(objects):
    """Each object's task row (rows or messages), in one query for them all."""
    wanted = {obj.task_id for obj in objects if obj.task_id}
    tasks = Task.objects.in_bulk(wanted) if wanted else {}
    for obj in objects:
        if obj.task_id:
            obj.task = tasks[obj.task_id]


def current_link(session):
    """The link that speaks for the row: its live exact link, else its newest link. From the
    links listed_sessions loaded for it when it was listed (those two), else from all of them."""
    links = getattr(session, "speaking_links", None)
    if links is None:
        links = session.newest_links()
    for link in links:
        if link.live_exact:
            return link
    return links[0] if links else None


def _of_current_link(field):
    """A row's current_link's `field`, as a query (the same rule: its live exact link, else its
    newest link)."""
    links = HookLink.objects.filter(session_id=OuterRef("pk")).order_by("-id")
    return Coalesce(Subquery(links.filter(HookLink.LIVE_EXACT).values(field)[:1]), Subquery(links.values(field)[:1]))


def with_current_state(sessions):
    """`sessions` with `current_state`: the state of each row's current_link, so the board's
    state filter keeps the rows whose badge shows that state."""
    return sessions.annotate(current_state=_of_current_link("state"))


def on_machine(sessions, machine_id):
    """The rows session_machine places on the machine (None: relaybay's own), as a query: by
    the process their current_link proves."""
    sessions = sessions.annotate(current_proof=Coalesce(_of_current_link("process_proof"), Value("")))
    if machine_id is None:
        return sessions.exclude(current_proof__regex=auth.MACHINE_PROCESS.pattern)
    return sessions.filter(current_proof__startswith=f"m{machine_id}:")


def link_state(session):
    """('exact'|'guessed'|'none', 'busy'|'idle'|'ended'|'')."""
    link = current_link(session)
    if link is None:
        return "none", ""
    return ("exact" if link.exact else "guessed"), link.state


class Arrival(StrEnum):
    """When what is sent to a row can arrive: decided here once, worded by each caller."""

    GONE = "gone"  # the row is gone
    NO_LINK = "no link"  # no hook link at all
    GUESSED = "guessed"  # its link is only guessed
    ENDED = "ended"  # its exact link ended; it may come back
    CAPPED = "capped"  # idle, and messages woke it as often as the wake-up cap allows: at its next prompt
    UNWAKEABLE = "unwakeable"  # idle, no wake-up for it (engines.unwakeable()): at its next prompt
    WAKING = "waking"  # idle, and its wake-up hook waits: woken now
    IDLE = "idle"  # at its next prompt or wake-up
    BUSY = "busy"  # at its next tool call or prompt


def arrival(session):
    if session is None:
        return Arrival.GONE
    link = current_link(session)
    if link is None:
        return Arrival.NO_LINK
    if not link.exact:
        return Arrival.GUESSED
    if not link.live:
        return Arrival.ENDED
    if link.state == HookLink.State.IDLE:
        waiting = identity.waiter_connected(link, timezone.now())
        if not engines.wakes_by_hook(session.engine) and not waiting:
            return Arrival.UNWAKEABLE
        if wake_cap_reached(link):
            return Arrival.CAPPED
        return Arrival.WAKING if waiting else Arrival.IDLE
    return Arrival.BUSY


def wake_cap_reached(link):
    """Whether messages may no longer wake this idle session until the owner acts (docs/rules.md §4.8):
    the owner's comments still do, so this is an arrival of messages, not a reason that nothing
    can be delivered."""
    return link.agent_wakes >= settings.RELAYBAY_WAKE_CAP


WAKE_CAP_WAIT = (
    "messages from sessions woke it as often as the wake-up cap allows since the owner's last prompt or comment: "
    "this waits for its next prompt."
)


# When what is sent to an idle session no hook or waiter wakes arrives (docs/rules.md §1.6),
# naming the CLIs whose sessions that can be, from their declarations: the board, the MCP
# answers and the session's own SessionStart note say it in these words.
UNWAKEABLE_WAIT = f"it is idle and relaybay has no wake-up for it ({engines.unwakeable()}): it sees this at its next prompt."


NOT_DELIVERABLE = {
    Arrival.GONE: "its session row is gone.",
    Arrival.NO_LINK: "it has no hook link of its own, so no hook can carry anything to it.",
    Arrival.GUESSED: "its hook link is only guessed; it must link itself (session_link or RELAYBAY_SESSION).",
    Arrival.ENDED: "it has ended; this waits in case it comes back.",
}


# When what waits for a row that can be reached arrives: the first send's answer, a repeat's
# and messages_list say it in the same words.
ON_ITS_WAY = {
    Arrival.CAPPED: WAKE_CAP_WAIT,
    Arrival.WAKING: "it is idle, and its wake-up hook is waiting: it is being woken with this now.",
    Arrival.IDLE: "it is idle and no wake-up hook of it is waiting: it sees this at its next prompt.",
    Arrival.UNWAKEABLE: UNWAKEABLE_WAIT,
    Arrival.BUSY: "it reaches it at its next tool call or prompt.",
}


def comment_arrival(session):
    """When an owner's comment to this row arrives, in a sentence: as arrival() says, except
    that the wake-up cap holds back messages, never the owner's comments."""
    when = arrival(session)
    if when == Arrival.CAPPED:
        when = Arrival.WAKING if identity.waiter_connected(current_link(session), timezone.now()) else Arrival.IDLE
    return NOT_DELIVERABLE.get(when) or ON_ITS_WAY[when]


def why_not_deliverable(session):
    """A sentence saying why nothing can be delivered to this row now, or '' when it can."""
    return NOT_DELIVERABLE.get(arrival(session), "")


def how_to_link(hook_session=None):
    hook = hook_session or "<your CLAUDE_CODE_SESSION_ID>"
    return (
        f'call the relaybay MCP tool session_link(hook_session="{hook}", session="<your name>"), '
        "or start Claude Code with RELAYBAY_SESSION=<your name> in the environment"
    )


def identity_text(link):
    session = link.session
    engine = engines.of(session.engine)
    cli = engine.label
    lines = [
        f"relaybay: this {cli} session is tracked as {session.handle} "
        f'("{session.name}", kind {session.kind}) with hook session id {link.hook_session}.',
    ]
    if link.exact:
        lines.append(
            "Its link is exact: the owner's comments and messages from other sessions are delivered to you here. "
            f'In relaybay tools, name yourself session="{session.name}" with hook_session="{link.hook_session}".'
        )
    else:
        lines.append(
            "Its link is only guessed, so nothing is delivered to you yet. To make it exact, "
            + how_to_link(link.hook_session)
            + "."
        )
    lines.append(guidance.CHANNELS if engine.native_messages else guidance.ONE_CHANNEL)
    if engine.idle_note:
        lines.append(engine.idle_note)
    return "\n".join(lines)


def session_summary(session):
    """What discovery shows of a row: names and state, never a hook id. sessions_list reads
    only SHOWN of its rows and SHOWN_OF_LINKS of their links for it (and for
    why_not_deliverable): a field read here beyond those is read row by row."""
    exactness, state = link_state(session)
    link = current_link(session)
    return {
        "handle": session.handle,
        "name": session.public_name,
        "title": session.title,
        "aliases": session.aliases,
        "desktop_id": session.desktop_id,
        "kind": session.kind,
        "engine": session.engine,
        "folder": session.folder,
        "task": session.task.title if session.task_id else None,
        "link": exactness,
        "state": state,
        "machine": session_machine(session),
    }


# A machine's name never changes (machines/: added, revoked, never renamed): read once each.
_machine_names = {}
# The machine relaybay runs on, as session_machine names it.
HERE = "here"


def machine_name(machine_id):
    """The machine a session runs on, by the process its link proves: a machine's name, or
    'here' for relaybay's own machine (docs/rules.md §6)."""
    if machine_id is None:
        return HERE
    if machine_id not in _machine_names:
        _machine_names[machine_id] = Machine.objects.filter(pk=machine_id).values_list("name", flat=True).first() or f"machine {machine_id}"
    return _machine_names[machine_id]


def machine_elsewhere(process):
    """The name of the machine a process runs on when it is not relaybay's own, else None: what a
    session's name is followed by there (identity.default_name)."""
    machine_id = auth.machine_of_process(process)
    return None if machine_id is None else machine_name(machine_id)


def session_machine(session):
    """The name of the machine a row's session runs on: where the process its current_link
    proves runs (a link no process proves is relaybay's own machine's)."""
    link = current_link(session)
    return machine_name(auth.machine_of_process(link.process_proof) if link else None)


# How long the board warns about hook calls refused for a wrong token.
REFUSED_HOOKS_RECENT = timedelta(hours=1)


def refused_hooks_recently(now):
    """The streak of refused hook calls if the last one is recent, else None."""
    return RefusedHooks.objects.filter(pk=1, last_at__gte=now - REFUSED_HOOKS_RECENT).first()


# How long the board warns about a session whose CLI named it in MCP calls while none of its
# hooks arrived (docs/rules.md §1.6).
UNHEARD_RECENT = timedelta(days=1)


def unheard_sessions_recently(now):
    """The sessions that called relaybay's MCP tools lately while none of their hooks arrived."""
    return list(UnheardSession.objects.filter(last_at__gte=now - UNHEARD_RECENT)[:20])

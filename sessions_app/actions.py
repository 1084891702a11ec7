"""Writes on sessions, links, tasks and comments. One function per write, each atomic,
each recording its events and sending its refresh ping on commit (docs/rules.md §0)."""

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.auth import machine_of_process
from core.errors import ErrorCode, InvalidInput, Refused
from core.pings import ping, send_to_group
from core.inputs import clean_text
import engines

from . import directory, identity
from .feed import record_event, wake_session
from .models import Comment, HookLink, RefusedHooks, Session, Task, UnheardSession, fold_name

COMMENT_MAX = 4000
# Every alias is a name row (SessionName) each lookup by name may meet.
ALIASES_MAX = 20


def do_take_name(name, hook_session=None, *, kind):
    """The row a write names, made when no row goes by the name. The hook row of a running
    session naming itself by a name no row goes by takes that name (docs/rules.md §1.5).
    Call inside a transaction."""
    # Two first writes under one new name, on two processes, must not make two rows.
    directory.serialize_on("name", fold_name(name))
    row = directory.one_going_by(name)
    if row is not None:
        return row, False
    link = HookLink.objects.select_related("session").filter(hook_session=hook_session).first() if hook_session else None
    if identity.renames_its_row(link):
        # A running session naming itself anew: names are labels, its row takes this one.
        row = link.session
        was = row.title
        row.title = name
        row.save(update_fields=["title"])
        record_event("session.renamed", session=row, hook_session=hook_session, data={"session": row.handle, "name": name, "was": was})
        ping("sessions")
        return row, False
    if kind == Session.Kind.MCP and not (link and link.live):
        _check_unproven_names()
    folder = link.cwd if link else ""
    return Session.objects.create(kind=kind, title=name, folder=folder), True


def _check_unproven_names():
    """Rows made for names no running session proves are bounded (RELAYBAY_UNPROVEN_NAMES): a
    caller naming itself anew on every send must not fill the board with rows."""
    directory.serialize_on("unproven names")
    limit = settings.RELAYBAY_UNPROVEN_NAMES
    if Session.objects.filter(kind=Session.Kind.MCP, links__isnull=True)[:limit].count() >= limit:
        raise Refused(
            f"relaybay already keeps {limit} sessions made for names no running session proves, the limit. "
            "Nothing was written. Write under the name you already have, with your hook_session (relaybay's MCP "
            "server fills it in), or ask the owner to remove sessions nobody uses.",
            code=ErrorCode.UNPROVEN_NAMES_FULL,
        )


@dataclass
class LinkResult:
    link: HookLink | None
    moved: bool

    @property
    def verified(self):
        return self.link is not None and self.link.live_exact


def do_link_hook_session(row, hook_session, *, process=""):
    """Make `hook_session` an exact link of `row` following docs/rules.md §1.3. Call inside a transaction.

    Returns LinkResult(link=None) when the hook id was never seen (nothing moves). Raises
    Refused, writing nothing, when another row's live exact link holds the id, unless that
    row is the session's own hook row and `process`, the caller's proof, is the link's.
    """
    link = HookLink.objects.select_for_update().filter(hook_session=hook_session).first()
    if link is None:
        return LinkResult(None, moved=False)
    if not (link.session_id == row.pk and link.exact):
        holder = identity.running_holder(row, link.process_proof, timezone.now(), besides=link)
        if holder is not None:
            raise Refused(
                f'"{row.public_name}" ({row.handle}) is in use by another running Claude Code session; '
                "its link stays. Go by another name, or end that session first.",
                code=ErrorCode.NAME_IN_USE,
            )
    if link.session_id == row.pk:
        moved = not link.exact
        if moved:
            link.exact = True
            link.save(update_fields=["exact"])
    else:
        previous = link.session
        # A hook row with no other link is this session's own: it goes where the session goes.
        own_row = previous.kind == Session.Kind.HOOK and not previous.links.exclude(pk=link.pk).exists()
        if link.live_exact and not (own_row and process and link.process_proof == process):
            raise Refused(
                f"Hook session {hook_session} is linked to another live session ({previous.handle}); "
                "name that session, or use your own hook session id (CLAUDE_CODE_SESSION_ID).",
                code=ErrorCode.LINK_HELD,
            )
        link.session = row
        link.exact = True
        link.save(update_fields=["session", "exact"])
        if own_row:
            # The hooks' row knew which CLI the session runs in (docs/rules.md §1.6).
            if row.engine != previous.engine:
                row.engine = previous.engine
                row.save(update_fields=["engine"])
            _hand_over(previous, row)
        moved = True
    if moved:
        for old in row.links.live_exact().exclude(pk=link.pk):
            old.state = HookLink.State.ENDED
            old.save(update_fields=["state"])
        if link.cwd and not row.folder:
            row.folder = link.cwd
            row.save(update_fields=["folder"])
        record_event(
            "link.exact",
            session=row,
            hook_session=hook_session,
            data={"session": row.handle, "name": row.name},
        )
        ping("sessions")
        # The row's links as they are now: what reads them next (the caller's answer, the
        # send's sender rule) must not see those loaded before the move.
        directory.with_links(row)
    link.session = row
    return LinkResult(link, moved=moved)


def _hand_over(old, new):
    """A session's own hook row merged into the row its link moved to hands everything over:
    whatever points at the old row (its comments, events, links, and the messages of
    messaging or any app that refers to sessions) points at the new one."""
    for relation in Session._meta.related_objects:
        if relation.one_to_many:
            field = relation.field.name
            relation.related_model._base_manager.filter(**{field: old}).update(**{field: new})
    if old.task_id and not new.task_id:
        new.task_id = old.task_id
        new.save(update_fields=["task"])
    record_event("session.merged", session=new, data={"from": old.handle, "into": new.handle})
    old.delete()


def _row_for_name(base, *, cwd, process, now, explicit, engine):
    """The row a starting session goes by (docs/rules.md §1.5): the first of `base`, `base-2`,
    `base-3`, … that no row goes by (a new row), or whose one row is this session's to take
    back: named so explicitly (RELAYBAY_SESSION, the base name only) or a hook row of the same
    folder and the same CLI (`engine`), with no other running process holding it. Returns
    (row, why), `why` the reason the base name went to another session, if it did."""
    why = ""
    for number in range(1, 1000):
        suffix = "" if number == 1 else f"-{number}"
        name = base[: identity.TITLE_MAX - len(suffix)] + suffix
        serialize_on_name = fold_name(name)
        directory.serialize_on("name", serialize_on_name)
        rows = directory.find_sessions(name)
        if not rows:
            return Session.objects.create(kind=Session.Kind.HOOK, engine=engine, title=name, folder=cwd, last_seen_at=now), why
        if len(rows) == 1:
            row = rows[0]
            own_folder = row.kind == Session.Kind.HOOK and row.engine == engine and row.folder == cwd
            ours = (explicit and number == 1) or (own_folder and fold_name(row.title) == serialize_on_name)
            holder = identity.running_holder(row, process, now) if ours else None
            if ours and holder is None:
                return row, why
        if number == 1:
            if len(rows) > 1:
                why = f"several sessions go by it ({', '.join(r.handle for r in rows)})"
            elif holder is not None:
                why = f"another running Claude Code session holds it ({rows[0].handle})"
            else:
                why = f"another session goes by it ({rows[0].handle})"
    raise Refused(f'Every name from "{base}" to "{base}-999" is taken.', code=ErrorCode.NAME_IN_USE)


def _own_link(hook_session, row, payload, process, now):
    """A new hook id's link, proven by `process`: the one proof speaks for this id from now on.
    Its hooks arrive: the board warns no more that they never did (docs/rules.md §1.6)."""
    if process:
        HookLink.objects.filter(process_proof=process).update(process_proof="")
    if UnheardSession.objects.filter(hook_session=hook_session).delete()[0]:
        ping("sessions")
    return HookLink.objects.create(
        hook_session=hook_session,
        session=row,
        exact=False,
        process_proof=process,
        cwd=payload.get("cwd") or "",
        transcript_path=payload.get("transcript_path") or "",
        last_event_at=now,
    )


def link_started_session(*, hook_session, link, payload, process, now, engine=engines.DEFAULT.name):
    """Who a session is (docs/rules.md §1.5), for a hook id seen for the first time (`link`
    None) or a SessionStart carrying RELAYBAY_SESSION; `engine` is the CLI it runs in (§1.6).
    Returns (link, note): the link, exact unless relaybay only matched a desktop row by folder,
    and a sentence for the session when it could not have the name it asked for. Call inside a
    transaction."""
    asked, note = _asked_name(payload)
    if link is not None and not asked:
        return link, note
    if link is None and not asked:
        found = _link_of_same_process(hook_session, payload, process, now) or _link_guessed_to_desktop(hook_session, payload, process, now, engine)
        if found is not None:
            return found, note
    try:
        linked, not_free = _link_by_name(hook_session, link, payload, process, now, engine, asked)
    except Refused as error:
        if link is None:
            raise
        return link, f"RELAYBAY_SESSION was not used: {error.message}"
    return linked, not_free or note


def _asked_name(payload):
    """The name a SessionStart asks for (RELAYBAY_SESSION), checked, or None; and why it was not
    used, when it could not be."""
    asked = payload.get("relaybay_session") if payload.get("hook_event_name") == "SessionStart" else None
    if not asked:
        return None, ""
    try:
        return directory.check_name(asked, what="RELAYBAY_SESSION name"), ""
    except InvalidInput as error:
        return None, f"RELAYBAY_SESSION was not used: {error.message}"


def _link_of_same_process(hook_session, payload, process, now):
    """/clear and the like: the same process under a new id keeps its row; its old id ends."""
    same_process = directory.link_of(directory.hook_session_of_process(process), with_session=True) if process else None
    if same_process is None:
        return None
    HookLink.objects.filter(pk=same_process.pk).update(state=HookLink.State.ENDED, waiter="", waiter_polled_at=None)
    _own_link(hook_session, same_process.session, payload, process, now)
    return do_link_hook_session(same_process.session, hook_session).link


def _link_guessed_to_desktop(hook_session, payload, process, now, engine):
    """The one desktop row of the session's folder that is not live, guessed to be this one.
    Desktop sessions are one CLI's (its engine's desktop_rows): another's is never guessed into one."""
    cwd = payload.get("cwd") or ""
    if not cwd or not engines.of(engine).desktop_rows or machine_of_process(process) is not None:
        return None  # a folder of another machine is no folder of a desktop app here
    desktop = list(Session.objects.filter(kind=Session.Kind.DESKTOP, folder=cwd).not_live()[:2])
    if len(desktop) != 1:
        return None
    link = _own_link(hook_session, desktop[0], payload, process, now)
    record_event("link.guessed", session=desktop[0], hook_session=hook_session, data={"session": desktop[0].handle, "folder": cwd})
    link.session = desktop[0]
    return link


def _link_by_name(hook_session, link, payload, process, now, engine, asked):
    """The session's link to the row it goes by, made exact: the name it asked for, else its
    folder's or its native name (identity.default_name). Returns (link, note), the note saying
    why the name it asked for went to another session."""
    cwd = payload.get("cwd") or ""
    native = payload.get("relaybay_native") if isinstance(payload.get("relaybay_native"), dict) else {}
    native_name = (native.get("session") or {}).get("name") if isinstance(native.get("session"), dict) else ""
    native_name = native_name if isinstance(native_name, str) else ""
    base = asked or identity.default_name(cwd, native_name, directory.machine_elsewhere(process))
    # One savepoint: a refused move leaves no row made for the name behind.
    with transaction.atomic():
        row, why = _row_for_name(base, cwd=cwd, process=process, now=now, explicit=bool(asked), engine=engine)
        if row.engine != engine:
            # A row taken by its name (RELAYBAY_SESSION) runs in the CLI that took it.
            row.engine = engine
            row.save(update_fields=["engine"])
        note = ""
        if why and asked:
            note = (
                f'relaybay: "{asked}" is not free: {why}. So this session goes by "{row.public_name}" ({row.handle}). '
                "Rename it on the board, or end the other session and start again."
            )
            record_event("session.name_in_use", session=row, hook_session=hook_session, data={"asked": asked, "why": why, "given": row.public_name})
        if link is None:
            _own_link(hook_session, row, payload, process, now)
        return do_link_hook_session(row, hook_session).link, note


@dataclass
class CommentResult:
    comment: Comment


def do_write_comment(*, session, body, author=None, send=send_to_group):
    """`send`: how this process reaches boards and waiters (core.pings)."""
    body = clean_text(body or "").strip()
    if not body:
        raise InvalidInput("The comment is empty; write something to send.")
    if len(body) > COMMENT_MAX:
        raise InvalidInput(f"The comment is longer than {COMMENT_MAX} characters; shorten it or split it in two.", code=ErrorCode.BODY_TOO_LONG)
    with transaction.atomic():
        comment = Comment.objects.create(session=session, session_name=session.name, body=body, author=author)
        record_event("comment.written", session=session, data={"comment": comment.pk, "session": session.handle})
        # The owner acted: messages may wake the session again (the wake-up cap, docs/rules.md §4.8).
        session.links.exclude(agent_wakes=0).update(agent_wakes=0)
        wake_session(session, send=send)
        ping("sessions", "comments", send=send)
    return CommentResult(comment)


def _clean_aliases(aliases):
    if aliases is None:
        return None
    if isinstance(aliases, str):
        aliases = [a for a in aliases.split(",")]
    cleaned = []
    for alias in aliases:
        if alias is None or not str(alias).strip():
            continue
        alias = directory.check_name(str(alias), what="alias")
        if alias.casefold() not in {a.casefold() for a in cleaned}:
            cleaned.append(alias)
        if len(cleaned) > ALIASES_MAX:
            raise InvalidInput(f"A session goes by at most {ALIASES_MAX} aliases; give the few it is called by. Nothing was changed.")
    return cleaned


def do_update_session(*, session, title=None, aliases=None, task=..., folder=None):
    with transaction.atomic():
        changed = []
        if title is not None:
            session.title = directory.check_name(title, what="title") if title.strip() else ""
            changed.append("title")
        if aliases is not None:
            session.aliases = _clean_aliases(aliases)
            changed.append("aliases")
        if task is not ...:
            session.task = task
            changed.append("task")
        if folder is not None:
            session.folder = folder
            changed.append("folder")
        if changed:
            session.save(update_fields=changed)
            record_event("session.updated", session=session, data={"session": session.handle, "fields": changed})
            ping("sessions")
    return session


def do_set_inbound_policy(*, policy, session=None, task=None):
    """The owner's choice of what happens to messages to a session, or to every session of a
    task (docs/rules.md §4.8). Returns the rows it changed."""
    if policy not in Session.Inbound.values:
        raise InvalidInput(f'The inbound policy must be one of {", ".join(Session.Inbound.values)}, not "{policy}".')
    with transaction.atomic():
        rows = Session.objects.filter(pk=session.pk) if session is not None else Session.objects.filter(task=task)
        changed = list(rows.exclude(inbound=policy).order_by("pk").values_list("pk", flat=True))
        Session.objects.filter(pk__in=changed).update(inbound=policy)
        for pk in changed:
            record_event("session.inbound", session_id=pk, data={"session": f"S-{pk}", "policy": policy})
        if changed:
            ping("sessions")
    return changed


def do_set_quiet(*, session, quiet):
    """What the session's page shows: remembered on the row, nothing deleted."""
    if quiet not in Session.Quiet.values:
        raise InvalidInput(f'The choice must be one of {", ".join(Session.Quiet.values)}, not "{quiet}".')
    with transaction.atomic():
        Session.objects.filter(pk=session.pk).update(quiet=quiet)
        session.quiet = quiet
        ping("sessions")
    return session


@dataclass
class DesktopResult:
    session: Session
    created: bool


def do_register_desktop(*, desktop_id, title=None, aliases=None, folder=None, status=None):
    desktop_id = directory.check_name(desktop_id, what="desktop id")
    with transaction.atomic():
        session, created = Session.objects.select_for_update().get_or_create(
            desktop_id=desktop_id, defaults={"kind": Session.Kind.DESKTOP}
        )
        had = set() if created else {fold_name(name) for name in [session.title, *session.aliases]}
        if title is not None:
            session.title = directory.check_name(title, what="title") if title.strip() else ""
        if aliases is not None:
            session.aliases = _clean_aliases(aliases)
        new = [name for name in [session.title, *session.aliases] if name and fold_name(name) not in had]
        _check_names_free(session, [desktop_id, *new] if created else new)
        if folder is not None:
            session.folder = folder
        if status is not None:
            session.status = status[:50]
        session.last_seen_at = timezone.now()
        session.save()
        record_event(
            "desktop.registered" if created else "desktop.updated",
            session=session,
            data={"session": session.handle, "desktop_id": desktop_id, "status": session.status},
        )
        ping("sessions")
    return DesktopResult(session, created)


def _check_names_free(session, names):
    """A registration takes no name a running session goes by (docs/rules.md §1.1): "bob" must
    keep naming the one session it names, whoever registers."""
    for name in names:
        for other in directory.find_sessions(name):
            if other.pk != session.pk and any(link.live for link in other.newest_links()):
                raise Refused(
                    f'"{name}" is a name of {other.handle}, a running session: a desktop session cannot go by it, '
                    f'or "{name}" would name two sessions. Nothing was changed; register under names of its own.',
                    code=ErrorCode.NAME_IN_USE,
                )


def do_record_desktop_edge(*, sender, recipient):
    """A desktop-side SendMessage: the edge is recorded for the Map, its text never is."""
    with transaction.atomic():
        event = record_event(
            "session.message",
            session=sender,
            data={
                "from": sender.handle,
                "from_name": sender.name,
                "to": recipient.handle,
                "to_name": recipient.name,
                "channel": "desktop",
            },
        )
        ping("events", "map")
    return event


def do_save_task(*, task=None, title, status=None):
    title = directory.check_name(title, what="task title")
    if status and status not in Task.Status.values:
        raise InvalidInput(f"A task's status is one of: {', '.join(Task.Status.values)}.")
    with transaction.atomic():
        if task is None:
            task = Task.objects.create(title=title, status=status or Task.Status.OPEN)
            record_event("task.created", data={"task": task.pk, "title": task.title})
        else:
            task.title = title
            if status:
                task.status = status
            task.save()
            record_event("task.updated", data={"task": task.pk, "title": task.title, "status": task.status})
        ping("tasks", "sessions")
    return task


def do_note_unheard_session(*, engine, hook_session, now=None):
    """A session its CLI names in an MCP call (Codex puts its session id in every call's
    `_meta`): when relaybay never heard a hook of it, the board says so until one arrives
    (docs/rules.md §1.6): Codex skips hooks the person has not trusted, without a word.
    Whether it was unheard."""
    if directory.link_of(hook_session) is not None:
        return False
    now = now or timezone.now()
    with transaction.atomic():
        noted = UnheardSession.objects.filter(hook_session=hook_session).update(calls=F("calls") + 1, last_at=now)
        if not noted:
            UnheardSession.objects.create(engine=engine, hook_session=hook_session, calls=1, first_at=now, last_at=now)
            record_event("session.hooks_unheard", hook_session=hook_session, data={"engine": engine})
            ping("sessions")
    return True


NOTICE_MAX = 2000  # characters of a hook client's notice kept


def do_note_client_notice(*, hook_session, text):
    """What a session's hook client told the person about itself (a spool moved aside, events
    set aside, another account's listener on relaybay's address: docs/hook-client.md), on the
    board too: an event of the session."""
    text = clean_text(text)[:NOTICE_MAX].strip()
    if not text:
        return
    link = directory.link_of(hook_session)
    with transaction.atomic():
        record_event("hook.client_notice", session_id=link.session_id if link else None, hook_session=hook_session, data={"notice": text})
        ping("events")


def do_count_refused_hooks(*, count, now=None):
    """Add `count` hook calls refused for their token to the current streak (a new one after
    directory.REFUSED_HOOKS_RECENT without a refusal)."""
    now = now or timezone.now()
    with transaction.atomic():
        row, created = RefusedHooks.objects.select_for_update().get_or_create(
            pk=1, defaults={"count": count, "first_at": now, "last_at": now}
        )
        if created:
            pass
        elif now - row.last_at > directory.REFUSED_HOOKS_RECENT:
            RefusedHooks.objects.filter(pk=1).update(count=count, first_at=now, last_at=now)
        else:
            RefusedHooks.objects.filter(pk=1).update(count=F("count") + count, last_at=now)
    ping("sessions")

"""The edit check of a PreToolUse (docs/rules.md §7.1, §7.3), and the file notices a hook carries.

A PreToolUse of an edit tool (its engine's edit_tools, engines/) names the file it will write. Before
the tool runs, relaybay ties the path to its working tree (collisions/paths.py) and asks the
two rules of collisions/files.py: an exclusive reservation of another live session over the
file denies the edit (its engine's `denied`: the CLI does not run the tool, so the file is untouched);
otherwise the edit is noted, and the session's model is warned of the live sessions that edited
the same file lately and of shared reservations over it, while each of those sessions hears at
its next hook that this one is editing a file it changed (a FileNotice, delivered as comments
and messages are, docs/rules.md §2).
"""

import json
from django.db.models import Q
from django.utils import timezone

from core.pings import ping

from sessions_app import directory
from sessions_app.feed import feed_row
from sessions_app.hooks.delivery import Deliverable
from sessions_app.hooks.steps import NOTHING, Check, Step
from sessions_app.models import FileNotice, Session

from . import files, paths

# What one warning lists at most; the rest are counted. Keeps a warning well inside one answer.
LISTED = 5
SHOWN_CHARS = 300


def _clip(text, limit=SHOWN_CHARS):
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _name(session):
    """A session as a model reads it: its quoted name (the one message_send takes) and handle."""
    return f"{json.dumps(session.public_name, ensure_ascii=False)} ({session.handle})"


def _where(place):
    return f"{_clip(place.relative)} (working tree {_clip(place.root)})"


def _reach(session):
    return f"message_send(to={json.dumps(session.public_name, ensure_ascii=False)})"


def _ago(moment, now):
    minutes = int((now - moment).total_seconds() // 60)
    return "just now" if minutes < 1 else f"{minutes} minute{'s' if minutes != 1 else ''} ago"


def _reservation(reservation, now):
    why = f", reason: {json.dumps(_clip(reservation.reason), ensure_ascii=False)}" if reservation.reason else ""
    return f"as {_clip(reservation.pattern)} until {files.until_text(reservation.expires_at, now)}{why}"


def check_edit(link, dialect, payload, now, *, replay=False, happened_at=None):
    """The edit check of one hook event (a PreToolUse of one of its CLI's edit tools; any other
    passes). A replayed one is long past: its edit is noted at the time it was spooled, nothing
    answered."""
    if dialect.event != "PreToolUse":
        return NOTHING
    tool = payload.get("tool_name")
    given = dialect.engine.edited_paths(tool, payload.get("tool_input"))
    if not given:
        return NOTHING
    reported = paths.reported_tree(payload.get("relaybay_tree"))
    places = [place for place in (paths.place_of(p, payload.get("cwd"), reported) for p in given) if place is not None]
    if replay:
        for place in places:
            files.do_record_edit(place, session_id=link.session_id, hook_session=link.hook_session, tool=tool, now=happened_at or now)
        return NOTHING
    check = Check()
    for place in places:
        _check_place(check, link, tool, place, now)
    return check


def _check_place(check, link, tool, place, now):
    # Two sessions' edits of one file on two processes take turns (PostgreSQL; SQLite's writers
    # already do): each sees the other's, so one of the two is warned, never neither.
    directory.serialize_on("file", place.file_key)
    edited_there, held_there = files.others_there(place, link.session_id, now)
    held = files.holding(place, link.session_id, now) if held_there else []
    holders = Session.objects.in_bulk({r.session_id for r in held}) if held else {}
    exclusive = [r for r in held if r.exclusive]
    if exclusive:
        _deny(check, link, tool, place, exclusive[0], holders[exclusive[0].session_id], now)
        return
    found = files.collisions(place, link.session_id, now) if edited_there else files.Collisions()
    files.do_record_edit(place, session_id=link.session_id, hook_session=link.hook_session, tool=tool, now=now)
    if found.other_trees:
        ping("files")  # the board's "may conflict when merged": nobody is interrupted
    if found.same_file or held:
        _warn(check, link, tool, place, found.same_file, held, holders, now)


def _deny(check, link, tool, place, reservation, holder, now):
    """Another live session holds the file exclusively: the edit is denied."""
    check.deny = (
        f"relaybay denied this edit: {_where(place)} is reserved exclusively by another live session, {_name(holder)}, "
        f"{_reservation(reservation, now)}. The file is untouched. Write to it with {_reach(holder)}, wait until "
        "the reservation ends, or ask the owner, who can break it on relaybay's board."
    )
    data = {"path": place.relative, "root": place.root, "tool": tool, "holder": holder.handle, "holder_name": holder.public_name, "reservation": reservation.pattern}
    check.feed.append(feed_row("file.denied", session_id=link.session_id, hook_session=link.hook_session, data=data))
    ping("files")


def _warn(check, link, tool, place, same_file, held, holders, now):
    """Other live sessions edited the file lately or hold it shared: the model is warned, and
    each session that edited it hears that this one is editing it too."""
    sessions = Session.objects.in_bulk({e.session_id for e in same_file} | {link.session_id})
    lines = []
    for edited in same_file:
        other = sessions[edited.session_id]
        lines.append(f"- {_name(other)} edited it {_ago(edited.at, now)} ({_clip(edited.tool, 60)}). Reach it with {_reach(other)}.")
    for reservation in held:
        holder = holders[reservation.session_id]
        lines.append(f"- {_name(holder)} holds it reserved (shared) {_reservation(reservation, now)}. Reach it with {_reach(holder)}.")
    more = len(lines) - LISTED
    lines = lines[:LISTED] + ([f"- and {more} more (relaybay's board, Files, lists them)."] if more > 0 else [])
    heard = "Each session that edited it hears at its next hook that you are editing it too. " if same_file else ""
    check.warning = (
        f"relaybay: {_where(place)} is another live session's file too:\n" + "\n".join(lines) + f"\n{heard}Agree on who changes what before you go on."
    )
    files.do_notify_editing(same_file, editor=sessions[link.session_id], place=place, now=now)
    data = {
        "path": place.relative,
        "root": place.root,
        "tool": tool,
        "edited_by": [sessions[e.session_id].handle for e in same_file],
        "reserved_by": [holders[r.session_id].handle for r in held],
    }
    check.feed.append(feed_row("file.warned", session_id=link.session_id, hook_session=link.hook_session, data=data))
    ping("files")


def tree_updates(link, payload):
    """What the hook client's `relaybay_tree` changes of the link (docs/rules.md §7.2): its
    working tree's root and repository, for its reservations' relative paths."""
    tree = paths.reported_tree(payload.get("relaybay_tree"))
    if tree is None or (tree.root, tree.repository) == (link.tree_root, link.repository):
        return {}
    link.tree_root, link.repository = tree.root, tree.repository
    return {"tree_root": tree.root, "repository": tree.repository}


class FileNotices(Deliverable):
    """What a session hears about files at its next hook (docs/rules.md §7.1, §7.3)."""

    name = "file_notice"
    order = 30
    model = FileNotice
    session_field = "session"
    prefix = "F"
    carriable = Q()

    def block(self, item):
        where = f"{_clip(item.path)} (working tree {_clip(item.root)})"
        if item.kind == FileNotice.Kind.BROKEN:
            return f"[relaybay] F-{item.pk}: the owner broke your reservation of {where}: other sessions may edit those files now."
        name = json.dumps(item.other_name, ensure_ascii=False)
        changed = f" at {timezone.localtime(item.changed_at).strftime('%H:%M UTC')}" if item.changed_at else ""
        return (
            f"[relaybay] F-{item.pk}: session {name} is now editing {where}, a file you changed{changed}. "
            f"Agree on who changes what: message_send(to={name})."
        )

    def source(self, items):
        return "relaybay, about files you edit"

    def delivered_event(self, item, carrier):
        return "file_notice.delivered", {"file_notice": item.pk, "kind": item.kind, "by": carrier}


FILE_NOTICES = FileNotices()


class EditStep(Step):
    """The edit check's part of the hook pass (sessions_app/hooks/steps.py)."""

    def link_updates(self, link, payload):
        return tree_updates(link, payload)

    def session_ended(self, link, reason, now):
        # Its reservations end with it (docs/rules.md §7.3).
        return files.do_end_reservations(link, reason, now)

    def check(self, link, dialect, payload, now, **options):
        return check_edit(link, dialect, payload, now, **options)

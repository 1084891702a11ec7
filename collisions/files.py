"""Files sessions edit (docs/rules.md §7): which tools edit which file, who edited a file lately
(the collision rule), the reservations in force (the reservation rule), the writes on them, and
what the board reads of them. Paths only: no file's content is read or stored.

An edit with nothing to say costs its hook one question (others_there) and one write (do_record_edit).
"""

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, F
from django.utils import timezone

from core.errors import ErrorCode, InvalidInput, Refused
from core.inputs import clean_text
from core.pings import ping
from sessions_app import directory, identity
from sessions_app.feed import feed_row, record_event
from sessions_app.models import FileEdit, FileNotice, FileReservation, HookLink, Session, relative_to

from . import paths

RESERVE_MAX = 100  # paths in one files_reserve
HELD_MAX = 200  # reservations one session holds at once
TTL_DEFAULT = 3600
TTL_MIN = 60
TTL_MAX = 24 * 3600
REASON_MAX = 500
LISTED_MAX = 100


def window_start(now):
    return now - timedelta(minutes=settings.RELAYBAY_COLLISION_MINUTES)


def _live_sessions():
    return HookLink.objects.live().values("session_id")


def recent_by_live(now):
    """The live sessions' edits within the window: what both the collision rule and the lists of
    recent edits read (docs/rules.md §7.1)."""
    return FileEdit.objects.filter(last_at__gte=window_start(now), session_id__in=_live_sessions())


# --- Who edited a file lately ------------------------------------------------------------------


@dataclass(frozen=True)
class Edited:
    """A live session's latest edit of a file."""

    session_id: int
    path: str
    root: str
    at: datetime
    tool: str


def _edits_of_file(file_key, now):
    edits = recent_by_live(now).filter(file_key=file_key)
    return edits.order_by("-last_at").values_list("session_id", "path", "root", "last_at", "tool")


@dataclass
class Collisions:
    """What a session about to edit `place` is told of the others: the live sessions that edited
    the same file since its own last edit of it, within the window, and those that edited the
    same relative path in another tree of its repository (a conflict when merged, never an
    interruption). `mine`: when it last edited the file itself."""

    same_file: list = field(default_factory=list)
    other_trees: list = field(default_factory=list)
    mine: datetime | None = None


def collisions(place, session_id, now):
    """The collision rule (docs/rules.md §7.1), decided here alone."""
    edits = [Edited(*row) for row in _edits_of_file(place.file_key, now)]
    mine = next((e.at for e in edits if e.session_id == session_id and e.path == place.path), None)
    found = Collisions(mine=mine)
    for edit in edits:
        if edit.session_id == session_id or (mine is not None and edit.at <= mine):
            continue
        (found.same_file if edit.path == place.path else found.other_trees).append(edit)
    return found


# --- The reservations in force -----------------------------------------------------------------


@dataclass(frozen=True)
class Held:
    """A reservation in force, as the edit check reads it."""

    pk: int
    session_id: int
    pattern: str
    exclusive: bool
    reason: str
    expires_at: datetime


def in_force(now):
    """Every reservation in force: not ended, not expired, its session live (docs/rules.md §7.3)."""
    return FileReservation.objects.filter(ended_at=None, expires_at__gt=now, session_id__in=_live_sessions())


def holding(place, session_id, now):
    """The reservation rule (docs/rules.md §7.3): the reservations of other live sessions in force
    over the file, exclusive ones first."""
    rows = in_force(now).filter(root=place.root).order_by("pk").values_list("pk", "session_id", "pattern", "exclusive", "reason", "expires_at")
    held = [Held(*row) for row in rows if row[1] != session_id and paths.matches(row[2], place.relative)]
    return sorted(held, key=lambda r: (not r.exclusive, r.expires_at))


# --- Anything to look at? ---------------------------------------------------------------------


def others_there(place, session_id, now):
    """Whether another session edited the file lately, and whether another holds a reservation
    in force in its tree: the rules above without their last conditions (the session live, the
    glob matching), each one index lookup, asked in one query (on the session's own row). Every
    edit asks; most find neither, and the rules (collisions, holding) run only for what they find."""
    others_edits = FileEdit.objects.filter(file_key=place.file_key, last_at__gte=window_start(now)).exclude(session_id=session_id)
    others_held = FileReservation.objects.filter(root=place.root, ended_at=None, expires_at__gt=now).exclude(session_id=session_id)
    asked = Session.objects.filter(pk=session_id).values_list(Exists(others_edits), Exists(others_held))
    return asked.first() or (False, False)


# --- Writing an edit -------------------------------------------------------------------------


def do_record_edit(place, *, session_id, hook_session, tool, now):
    """Note that the session edits the file now (its path only): its row for the file counted
    once more, or made on its first edit of it."""
    again = dict(file_key=place.file_key, root=place.root, repository=place.repository, hook_session=hook_session, tool=tool, last_at=now)
    mine = FileEdit.objects.filter(session_id=session_id, path_key=place.path_key)
    if mine.update(edits=F("edits") + 1, **again):
        return
    try:
        with transaction.atomic():
            FileEdit.objects.create(session_id=session_id, path_key=place.path_key, path=place.path, edits=1, first_at=now, **again)
    except IntegrityError:
        # Another hook of the session made the row first: count this edit on it.
        mine.update(edits=F("edits") + 1, **again)


def do_notify_editing(recipients, *, editor, place, now):
    """Tell each session in `recipients` (Edited rows of the same file) at its next hook that
    `editor` is now editing a file it changed."""
    FileNotice.objects.bulk_create(
        [
            FileNotice(
                session_id=edited.session_id,
                kind=FileNotice.Kind.EDITING,
                other=editor,
                other_name=editor.public_name,
                path=place.relative,
                root=place.root,
                changed_at=edited.at,
            )
            for edited in recipients
        ]
    )


# --- Who calls files_reserve, files_release and files_list ---------------------------------------


NOT_PROVEN = (
    "relaybay knows no live Claude Code session of yours to hold reservations: pass hook_session (your "
    "CLAUDE_CODE_SESSION_ID; relaybay's MCP server fills it in) from a session whose hooks reach relaybay."
)


def access_caller_link(*, hook_session=None, session=None, process="", now=None):
    """The live hook link a reservation call speaks for (as message_send's caller, docs/rules.md §4.2):
    its hook session, given or proven by the process (directory.proven_hook_session), which must
    be live and may not be another running process's; `session`, when given, must be the name
    of that link's row."""
    now = now or timezone.now()
    hook_session = directory.proven_hook_session(hook_session, process)
    if not hook_session:
        raise InvalidInput(
            "Say which session you are: pass hook_session (your CLAUDE_CODE_SESSION_ID; relaybay's MCP server fills it in)."
        )
    link = directory.link_of(hook_session, with_session=True)
    if link is None or not link.live:
        raise Refused(NOT_PROVEN, code=ErrorCode.CALLER_NOT_PROVEN)
    try:
        identity.access_link(link, process, now)
    except identity.AnotherProcess:
        raise Refused(
            f"Hook session {hook_session} belongs to another running Claude Code process; reserve with your own "
            "(relaybay's MCP server fills it in).",
            code=ErrorCode.CALLER_NOT_PROVEN,
        ) from None
    if session is not None:
        name = directory.check_name(session, what="session")
        if all(row.pk != link.session_id for row in directory.find_sessions(name)):
            raise Refused(
                f'Hook session {hook_session} goes by "{link.session.public_name}", not by "{name}"; '
                "leave session out, or name yourself as your hook session goes by.",
                code=ErrorCode.CALLER_NOT_PROVEN,
            )
    return link


def caller_tree(link):
    """The working tree a caller's relative paths name: the one its hook client last reported,
    else the one relaybay finds from its folder."""
    if link.tree_root:
        return paths.Tree(link.tree_root, link.repository)
    if link.cwd.startswith("/"):
        return paths.tree_of_folder(os.path.realpath(link.cwd))
    raise Refused(
        "relaybay does not know your working tree yet: its hooks have reported no folder. Call again after a tool "
        "call of yours (its hook reports it).",
        code=ErrorCode.CALLER_NOT_PROVEN,
    )


# --- Reservations: the writes -------------------------------------------------------------------


def _check_ttl(ttl_seconds):
    if ttl_seconds is None:
        return TTL_DEFAULT
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or not TTL_MIN <= ttl_seconds <= TTL_MAX:
        raise InvalidInput(
            f"ttl_seconds must be a whole number of seconds from {TTL_MIN} to {TTL_MAX} (24 hours); "
            f"leave it out for {TTL_DEFAULT} (an hour), and reserve again to keep a reservation longer."
        )
    return ttl_seconds


def _check_reason(reason):
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise InvalidInput("The reason must be text.")
    reason = " ".join(clean_text(reason).split())
    if len(reason) > REASON_MAX:
        raise InvalidInput(f"The reason is longer than {REASON_MAX} characters; say it in a line.")
    return reason


def _check_paths(given, root, *, required=True):
    if given is None and not required:
        return None
    if not isinstance(given, list) or not all(isinstance(item, str) for item in given):
        raise InvalidInput("paths must be a list of paths or globs, like [\"src/app.py\", \"src/*.py\"].")
    if required and not given:
        raise InvalidInput("paths is empty: name the files you will change, like [\"src/app.py\"].")
    if len(given) > RESERVE_MAX:
        raise InvalidInput(
            f"{len(given)} paths in one call; at most {RESERVE_MAX}. Reserve a folder with a glob (src/**) instead of its files one by one."
        )
    return list(dict.fromkeys(paths.check_pattern(item, root) for item in given))


def until_text(moment, now):
    """When a reservation ends, as a model and the person read it."""
    minutes = max(0, round((moment - now).total_seconds() / 60))
    return f"{timezone.localtime(moment).strftime('%Y-%m-%d %H:%M UTC')} (in {minutes} minute{'s' if minutes != 1 else ''})"


@dataclass
class ReserveResult:
    tree: paths.Tree
    reservations: list
    edited_by_others: list


def do_reserve_files(*, link, paths_given, exclusive=True, ttl_seconds=None, reason=None, now=None):
    """Reserve files of the caller's working tree (docs/rules.md §7.3). All or nothing: a path
    refused, or one another live session holds in a way this one cannot share, stores nothing.
    Reserving a pattern the caller holds already renews it."""
    now = now or timezone.now()
    if not isinstance(exclusive, bool):
        raise InvalidInput("exclusive must be true or false.")
    ttl = _check_ttl(ttl_seconds)
    reason = _check_reason(reason)
    tree = caller_tree(link)
    patterns = _check_paths(paths_given, tree.root)
    with transaction.atomic():
        # Two sessions reserving in one tree at once take turns: each sees what the other holds.
        directory.serialize_on("files", tree.root)
        held = list(in_force(now).filter(root=tree.root).select_related("session"))
        mine = {r.pattern: r for r in held if r.session_id == link.session_id}
        for pattern in patterns:
            for other in held:
                if other.session_id != link.session_id and (exclusive or other.exclusive) and paths.overlap(pattern, other.pattern):
                    raise Refused(_held_sentence(pattern, other, now), code=ErrorCode.RESERVATION_HELD)
        new = [p for p in patterns if p not in mine]
        holds = in_force(now).filter(session_id=link.session_id).count()
        if holds + len(new) > HELD_MAX:
            raise Refused(
                f"You hold {holds} reservations; with these you would hold more than {HELD_MAX}. Release what you are "
                "done with (files_release), or reserve a folder with a glob.",
                code=ErrorCode.RESERVATIONS_FULL,
            )
        expires = now + timedelta(seconds=ttl)
        changes = dict(hook_session=link.hook_session, exclusive=exclusive, reason=reason, expires_at=expires)
        FileReservation.objects.filter(pk__in=[mine[p].pk for p in patterns if p in mine]).update(**changes)
        FileReservation.objects.bulk_create(
            [FileReservation(session_id=link.session_id, root=tree.root, pattern=p, created_at=now, **changes) for p in new]
        )
        reservations = list(FileReservation.objects.filter(session_id=link.session_id, root=tree.root, pattern__in=patterns, ended_at=None))
        record_event(
            "file.reserved",
            session_id=link.session_id,
            hook_session=link.hook_session,
            data={"paths": patterns, "root": tree.root, "exclusive": exclusive, "until": expires.isoformat(), "reason": reason},
        )
        ping("files")
    edited = [e for e in recent_edits(now, root=tree.root, besides=link.session_id) if any(paths.matches(p, e.relative) for p in patterns)]
    return ReserveResult(tree, reservations, edited[:LISTED_MAX])


def _held_sentence(pattern, other, now):
    kind = "exclusively" if other.exclusive else "shared"
    why = f", reason: {_quoted(other.reason)}" if other.reason else ""
    return (
        f"{pattern} overlaps {other.pattern}, which another live session, {_quoted(other.session.public_name)} "
        f"({other.session.handle}), holds {kind} until {until_text(other.expires_at, now)}{why}. Nothing was reserved. "
        f"Write to it with message_send(to={_quoted(other.session.public_name)}), or reserve other files."
    )


def _quoted(text):
    """A name or reason an agent wrote, quoted as relaybay quotes names to models."""
    return json.dumps(text, ensure_ascii=False)


@dataclass
class ReleaseResult:
    released: list
    not_held: list


def do_release_files(*, link, paths_given=None, now=None):
    """End the caller's reservations of `paths_given` (as it reserved them), or all of them."""
    now = now or timezone.now()
    mine = in_force(now).filter(session_id=link.session_id)
    not_held = []
    if paths_given is not None:
        root = caller_tree(link).root
        patterns = _check_paths(paths_given, root, required=False)
        held = set(mine.filter(root=root).values_list("pattern", flat=True))
        not_held = [p for p in patterns if p not in held]
        mine = mine.filter(root=root, pattern__in=patterns)
    with transaction.atomic():
        released = list(mine.select_for_update().values_list("pk", "pattern", "root"))
        FileReservation.objects.filter(pk__in=[pk for pk, _, _ in released]).update(ended_at=now, ended=FileReservation.Ended.RELEASED)
        if released:
            record_event(
                "file.released",
                session_id=link.session_id,
                hook_session=link.hook_session,
                data={"paths": [p for _, p, _ in released], "roots": sorted({r for _, _, r in released})},
            )
            ping("files")
    return ReleaseResult([(pattern, root) for _, pattern, root in released], not_held)


def do_break_reservation(*, reservation, now=None):
    """The owner ends another session's reservation (the board); its session hears so at its next
    hook. Whether it was still in force."""
    now = now or timezone.now()
    with transaction.atomic():
        broken = FileReservation.objects.filter(pk=reservation.pk, ended_at=None).update(ended_at=now, ended=FileReservation.Ended.BROKEN)
        if broken:
            FileNotice.objects.create(
                session_id=reservation.session_id, kind=FileNotice.Kind.BROKEN, other_name="the owner", path=reservation.pattern, root=reservation.root
            )
            record_event(
                "file.reservation_broken",
                session_id=reservation.session_id,
                data={"path": reservation.pattern, "root": reservation.root, "exclusive": reservation.exclusive},
            )
            ping("files", "sessions")
    return bool(broken)


# SessionEnd reasons that end the conversation; after /clear the same process goes on under a new
# session id, with its row and its reservations.
KEEPS_RESERVATIONS = {"clear"}


def do_end_reservations(link, reason, now):
    """A session ended (SessionEnd): its reservations end with it, unless it goes on (/clear) or
    another live link speaks for its row. The feed rows of what ended, for the hook to write."""
    if reason in KEEPS_RESERVATIONS or HookLink.objects.live().filter(session_id=link.session_id).exclude(pk=link.pk).exists():
        return []
    ended = list(FileReservation.objects.filter(session_id=link.session_id, ended_at=None, expires_at__gt=now).values_list("pk", "pattern"))
    if not ended:
        return []
    FileReservation.objects.filter(pk__in=[pk for pk, _ in ended]).update(ended_at=now, ended=FileReservation.Ended.SESSION_ENDED)
    ping("files")
    return [feed_row("file.reservations_ended", session_id=link.session_id, hook_session=link.hook_session, data={"paths": [p for _, p in ended]})]


# --- Reads: files_list and the board ------------------------------------------------------------


@dataclass
class Recent:
    """A live session's edit of a file within the window, for a list."""

    session_id: int
    path: str
    root: str
    repository: str
    at: datetime
    tool: str
    edits: int

    @property
    def relative(self):
        return relative_to(self.path, self.root)


def recent_edits(now, *, root=None, besides=None, limit=2000):
    """The live sessions' edits within the window, newest first (of one tree's files, and not by
    the session `besides`)."""
    edits = recent_by_live(now)
    if root is not None:
        edits = edits.filter(root=root)
    if besides is not None:
        edits = edits.exclude(session_id=besides)
    rows = edits.order_by("-last_at").values_list("session_id", "path", "root", "repository", "last_at", "tool", "edits")[:limit]
    return [Recent(*row) for row in rows]


def shared(now, key):
    """Files edited within the window by more than one live session: `key` "path_key" for the
    same file (a collision), "file_key" for the same relative path of one repository in several
    trees. Each group's edits, newest first, groups with the newest edit first."""
    recent = recent_by_live(now)
    if key == "file_key":
        recent = recent.exclude(repository="")
        counted = "path_key"
    else:
        counted = "session"
    keys = recent.values(key).annotate(n=Count(counted, distinct=True)).filter(n__gte=2).values_list(key, flat=True)
    groups = {}
    for edit in recent.filter(**{f"{key}__in": list(keys[:LISTED_MAX])}).select_related("session").order_by("-last_at"):
        groups.setdefault(getattr(edit, key), []).append(edit)
    return list(groups.values())


def session_files(session, limit=LISTED_MAX):
    """The files a session changed, newest first."""
    return list(FileEdit.objects.filter(session=session).order_by("-last_at")[:limit])

"""Reservations of files as JSON routes (docs/rules.md §7.3): files_reserve, files_release and
files_list, each a thin adapter over collisions/files.py. The MCP tools of the same names
run these routes' bodies (mcp_server/http.py) or call them (mcp_server/stdio.py)."""

from django.utils import timezone
from ninja import Query, Router

from core.auth import AgentAuth
from core.errors import Refused

from sessions_app import directory
from sessions_app.models import Session
from sessions_app.schemas import ERRORS, Error

from . import files
from .schemas import FilesListOut, FilesListQuery, ReleaseIn, ReleaseOut, ReserveIn, ReserveOut

# Every route here is the agents' (docs/rules.md §6): what an MCP server calls for its session.
router = Router(tags=["files"])
ERRORS = {**ERRORS, 403: Error, 404: Error, 409: Error}


def _process(request):
    return directory.caller_process(request) if request is not None else ""


def _caller(request, data):
    return files.access_caller_link(hook_session=data.hook_session, session=data.session, process=_process(request))


def _moment(value):
    return timezone.localtime(value).isoformat(timespec="seconds")


def reservation_out(reservation, caller_session_id=None):
    return {
        "id": reservation.pk,
        "path": reservation.pattern,
        "root": reservation.root,
        "exclusive": reservation.exclusive,
        "reason": reservation.reason,
        "expires_at": _moment(reservation.expires_at),
        "holder": reservation.session.public_name,
        "holder_handle": reservation.session.handle,
        "mine": reservation.session_id == caller_session_id,
    }


def edited_out(edit, sessions):
    session = sessions[edit.session_id]
    return {
        "path": edit.relative,
        "root": edit.root,
        "session": session.public_name,
        "session_handle": session.handle,
        "at": _moment(edit.at),
        "tool": edit.tool,
        "edits": edit.edits,
    }


def _edits_out(edits):
    sessions = Session.objects.in_bulk({edit.session_id for edit in edits})
    return [edited_out(edit, sessions) for edit in edits]


@router.post(
    "/files_reserve",
    response={200: ReserveOut, **ERRORS},
    auth=AgentAuth(),
    summary="Reserve files of your working tree, exclusively or shared",
    description="An exclusive reservation makes relaybay deny another live session's edit of those files before it "
    "happens; a shared one warns it. All or nothing: a refused path, or files another live session holds, stores "
    "nothing. Reserving a path you hold renews it.",
)
def files_reserve(request, data: ReserveIn):
    link = _caller(request, data)
    result = files.do_reserve_files(link=link, paths_given=data.paths, exclusive=data.exclusive, ttl_seconds=data.ttl_seconds, reason=data.reason)
    for reservation in result.reservations:
        reservation.session = link.session
    edited = result.edited_by_others
    note = (
        "Other live sessions edited some of these files lately (edited_by_others): agree with them before you change them."
        if edited
        else ""
    )
    return {
        "session": link.session.handle,
        "root": result.tree.root,
        "reservations": [reservation_out(r, link.session_id) for r in result.reservations],
        "edited_by_others": _edits_out(edited),
        "note": note,
    }


@router.post(
    "/files_release",
    response={200: ReleaseOut, **ERRORS},
    auth=AgentAuth(),
    summary="Release your reservations of files (those named, or all)",
)
def files_release(request, data: ReleaseIn):
    link = _caller(request, data)
    result = files.do_release_files(link=link, paths_given=data.paths)
    return {
        "session": link.session.handle,
        "released": [{"path": pattern, "root": root} for pattern, root in result.released],
        "not_held": result.not_held,
    }


@router.get(
    "/files_list",
    response={200: FilesListOut, **ERRORS},
    auth=AgentAuth(),
    summary="Reservations in force and other live sessions' recent edits, in your working tree",
    description="Scoped to the caller's working tree when relaybay knows the caller (its hook_session, or the process "
    "proof header X-Relaybay-Process), else, or with all_trees, every tree's.",
)
def files_list(request, query: Query[FilesListQuery]):
    now = timezone.now()
    try:
        link = _caller(request, query)
    except Refused:
        if query.hook_session or query.session:
            raise
        link = None  # a caller relaybay does not know sees every tree
    root = None if link is None or query.all_trees else files.caller_tree(link).root
    held = files.in_force(now).select_related("session").order_by("root", "pattern")
    if root is not None:
        held = held.filter(root=root)
    edits = files.recent_edits(now, root=root, besides=link.session_id if link else None, limit=files.LISTED_MAX)
    return {
        "root": root,
        "reservations": [reservation_out(r, link.session_id if link else None) for r in held[: files.LISTED_MAX]],
        "recent_edits": _edits_out(edits),
    }


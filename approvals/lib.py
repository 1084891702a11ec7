"""Reads of what sessions wait on the owner for (docs/rules.md §8): the Needs you list, its
count, a request's reason in words."""

from datetime import timedelta

from django.utils import timezone

from core.errors import NotFound
from sessions_app import directory, identity

from .models import Request

RECENT = timedelta(hours=24)
RECENT_MAX = 50


def waiting(now=None):
    """Every request waiting on the owner, oldest first, with its session."""
    return list(Request.objects.waiting(now or timezone.now()).select_related("session").order_by("requested_at", "id"))


def waiting_count(now=None):
    return Request.objects.waiting(now or timezone.now()).count()


def recent(now=None, limit=RECENT_MAX):
    """Requests settled within the last day (and those pending past their expiry), newest first."""
    now = now or timezone.now()
    settled = Request.objects.exclude(state=Request.State.PENDING).filter(decided_at__gte=now - RECENT)
    lapsed = Request.objects.filter(state=Request.State.PENDING, expires_at__lte=now, expires_at__gte=now - RECENT)
    rows = list(settled.select_related("session").order_by("-decided_at")[:limit]) + list(lapsed.select_related("session")[:limit])
    rows.sort(key=lambda r: r.decided_at or r.expires_at, reverse=True)
    return rows[:limit]


def waiting_by_session(session_ids, now=None):
    """{session id: its oldest request waiting on the owner} for the given rows."""
    found = {}
    for request in Request.objects.waiting(now or timezone.now()).filter(session_id__in=session_ids).order_by("requested_at", "id"):
        found.setdefault(request.session_id, request)
    return found


def reason(request):
    """What the session waits for, in words: "permission to run Bash: `npm test`"."""
    if request.kind == Request.Kind.PERMISSION:
        what = f"permission to run {request.tool}" if request.tool else "permission"
        return f"{what}: {request.summary}" if request.summary else what
    if request.kind == Request.Kind.QUESTION:
        return f"a question: {request.summary}" if request.summary else "a question"
    return request.summary or "your input"


def short_reason(request):
    """The same in a few words, for a line of the Sessions page: "Bash `npm test`"."""
    if request.kind == Request.Kind.PERMISSION:
        shown = request.summary if len(request.summary) <= 120 else request.summary[:119] + "…"
        return f"{request.tool or 'permission'} `{shown}`" if shown else (request.tool or "permission")
    if request.kind == Request.Kind.INPUT:
        return "a prompt, its turn ended"
    return reason(request)


def where_to_answer(request):
    """Why a request without buttons has none."""
    if request.answerable:
        return ""
    return "answer in the terminal"


def as_api(request, now):
    """A request as `GET /api/approvals` lists it (SPEC §4.14)."""
    session = request.session
    return {
        "id": request.pk,
        "handle": request.handle,
        "session": {"name": session.name, "handle": session.handle},
        "engine": request.engine,
        "kind": request.kind,
        "tool": request.tool,
        "summary": request.summary if request.state_at(now) == Request.State.PENDING else "",
        "answerable": request.answerable,
        "state": request.state_at(now).value,
        "scope": request.scope,
        "decided_by": request.decided_by,
        "requested_at": request.requested_at,
        "expires_at": request.expires_at,
        "decided_at": request.decided_at,
    }


def access_request(*, pk, process):
    """Permission request `pk` for the hook that holds it: only the request's own session speaks
    for it, by its process proof as for its hooks (sessions_app.identity.access_link), so no other
    agent can take the owner's answer or settle the request."""
    request = Request.objects.filter(pk=pk).first()
    if request is None:
        raise NotFound(f"There is no request R-{pk}.")
    link = directory.link_of(request.hook_session)
    if link is not None:
        identity.access_link(link, process)
    return request

"""The board's Needs you page (docs/rules.md §8): what sessions wait on the owner for, oldest
first, with the owner's answers; and the small state the board's script reads for the title,
the sidebar count and the browser's notifications."""

from django.contrib import messages as flash
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from core.auth import owner_required
from core.errors import RelaybayError
from sessions_app.models import Session

from . import actions, lib

FRAGMENT = "needs-you-rows"


def _rows(now):
    waiting = lib.waiting(now)
    by_session = {}
    for request in waiting:
        request.reason = lib.reason(request)
        request.where = lib.where_to_answer(request)
        by_session.setdefault(request.session_id, []).append(request)
    groups = [{"session": items[0].session, "requests": items, "answerable": sum(r.answerable for r in items)} for items in by_session.values()]
    recent = lib.recent(now)
    for request in recent:
        request.shown_state = request.state_at(now)
    return {"groups": groups, "count": len(waiting), "recent": recent}


@owner_required
def needs_you(request):
    now = timezone.now()
    context = {"section": "needs-you", **_rows(now)}
    if request.htmx and request.htmx.target == FRAGMENT:
        return TemplateResponse(request, f"approvals/needs_you.html#{FRAGMENT}", context)
    return TemplateResponse(request, "approvals/needs_you.html", context)


def _decision(request):
    decision = request.POST.get("decision", "")
    scope = "session" if decision == "allow-session" else "once"
    if decision not in ("allow", "allow-session", "deny"):
        raise RelaybayError("Choose Allow once, Allow for this session or Deny.")
    return {"allow": decision != "deny", "scope": scope, "message": request.POST.get("message", "").strip()[:2000]}


def _by(request):
    return f"owner ({request.user.get_username()})"[:40]


def _answered(request):
    if request.htmx:
        return needs_you(request)
    return redirect("needs-you")


@owner_required
@require_POST
def decide(request, pk):
    try:
        actions.do_decide_request(pk=pk, by=_by(request), **_decision(request))
    except RelaybayError as error:
        flash.error(request, f"Too late: {error.message}" if isinstance(error, actions.NotPending) else error.message)
    return _answered(request)


@owner_required
@require_POST
def decide_session(request, pk):
    session = get_object_or_404(Session, pk=pk)
    try:
        done = actions.do_decide_session_requests(session=session, by=_by(request), **_decision(request))
    except RelaybayError as error:
        flash.error(request, error.message)
    else:
        if not done.requests:
            flash.error(request, "Too late: none of its requests waits any more.")
    return _answered(request)


@owner_required
def needs_you_state(request):
    """The count and the waiting requests, for the board's script (static/approvals/needs_you.js):
    the title, the sidebar's count and a notification per new request."""
    waiting = lib.waiting()
    url = reverse("needs-you")
    pending = [
        {"id": r.pk, "session": r.session.name, "reason": lib.reason(r)[:300], "url": f"{url}#request-{r.pk}"} for r in waiting
    ]
    return JsonResponse({"count": len(pending), "pending": pending})

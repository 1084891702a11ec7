from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from relaybay.errors import RelaybayError

from . import actions, lib
from .models import Session

owner_required = staff_member_required(login_url="login")


@owner_required
def sessions_list(request):
    sessions = Session.objects.select_related("task").prefetch_related("links")
    rows = [(s, lib.link_state(s)) for s in sessions[:500]]
    return render(request, "sessions_app/sessions.html", {"rows": rows})


@owner_required
def session_detail(request, pk):
    session = get_object_or_404(Session.objects.select_related("task"), pk=pk)
    events = Paginator(session.events.all(), 50).get_page(request.GET.get("page"))
    return render(
        request,
        "sessions_app/session.html",
        {
            "session": session,
            "links": session.links.order_by("-id"),
            "link_state": lib.link_state(session),
            "why_not": lib.why_not_deliverable(session),
            "comments": session.comments.order_by("-id"),
            "events": events,
        },
    )


@owner_required
@require_POST
def write_comment(request, pk):
    session = get_object_or_404(Session, pk=pk)
    try:
        actions.do_write_comment(session=session, body=request.POST.get("body", ""), author=request.user)
        messages.success(request, "Comment saved; it is delivered at the session's next hook.")
    except RelaybayError as error:
        messages.error(request, error.message)
    return redirect("session", pk=pk)


@owner_required
@require_POST
def edit_session(request, pk):
    session = get_object_or_404(Session, pk=pk)
    try:
        actions.do_update_session(
            session=session, title=request.POST.get("title", ""), aliases=request.POST.get("aliases", "")
        )
        messages.success(request, "Session updated.")
    except RelaybayError as error:
        messages.error(request, error.message)
    return redirect("session", pk=pk)

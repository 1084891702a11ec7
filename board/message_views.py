"""The owner's messages board: every message with its marks, threads, and the Inbox (docs/rules.md §5.3, §5.4)."""

from django.contrib import messages as flash
from django.db.models import Q
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from messaging import reads
from messaging.actions import do_decide_held_message, do_mark_inbox_seen
from messaging.models import SessionMessage
from core.errors import InvalidInput, NotFound
from sessions_app import directory
from sessions_app.actions import do_write_comment
from sessions_app.models import Session, Task

from . import pages
from .pages import owner_required, render_board, task_param

CHANNELS = {"mcp": "relaybay (MCP)", "native": "Claude Code native"}
STATES = {
    "waiting": Q(delivered_at=None, read_at=None, state=SessionMessage.State.SENT),
    "held": Q(state=SessionMessage.State.HELD),
    # Native messages have no read mark (Claude Code delivers them): never "unread".
    "unread": Q(read_at=None, channel=SessionMessage.Channel.MCP),
    "read": Q(read_at__isnull=False),
}


@owner_required
def messages_list(request):
    name = request.GET.get("session", "").strip()
    task = task_param(request)
    state = request.GET.get("state", "")
    channel = request.GET.get("channel", "")
    broadcast = request.GET.get("broadcast", "")
    broadcast = int(broadcast) if broadcast.isdigit() else None
    matched = directory.find_sessions(name)

    def rows():
        members = list(Session.objects.filter(task=task).values_list("pk", flat=True)) if task else []
        if name:
            querysets = reads.involving(matched)
            if task:
                in_task = Q(task=task) | Q(sender_id__in=members) | Q(recipient_id__in=members)
                querysets = [qs.filter(in_task) for qs in querysets]
        elif task:
            querysets = reads.involving([Session(pk=pk) for pk in members], task=task)
        else:
            querysets = [SessionMessage.objects.all()]
        if broadcast:
            querysets = [qs.filter(broadcast_id=broadcast) for qs in querysets]
        if state in STATES:
            querysets = [qs.filter(STATES[state]) for qs in querysets]
        if channel in CHANNELS:
            querysets = [qs.filter(channel=channel) for qs in querysets]
        page = pages.keyset_page(
            querysets, reads.messages_by_ids, before=request.GET.get("before"), after=request.GET.get("after")
        )
        return {"message_page": page, "rows": reads.decorate_messages(page.rows)}

    context = {
        "section": "messages",
        "tasks": Task.objects.all(),
        "filters": {"session": name, "task": task, "state": state, "channel": channel, "broadcast": broadcast},
        "channels": CHANNELS,
        "matched": pages.decorate_sessions(matched) if matched else [],
        "states": list(STATES),
    }
    return render_board(request, "messaging/messages.html", {"messages-rows": rows}, context)


@owner_required
def message_thread(request, pk):
    message = get_object_or_404(SessionMessage, pk=pk)

    def thread():
        return {"thread": reads.whole_thread(message)}

    return render_board(request, "messaging/thread.html", {"thread-rows": thread}, {"section": "messages", "message": message})


@owner_required
@require_POST
def comment_on_message(request, pk):
    """The owner writes, from a message's row, to its sender or its recipient."""
    message = get_object_or_404(SessionMessage.objects.select_related("sender", "recipient"), pk=pk)

    def write():
        to = request.POST.get("to")
        if to not in ("sender", "recipient"):
            raise InvalidInput("Choose whom the comment is for: the message's sender or its recipient.")
        session = message.sender if to == "sender" else message.recipient
        if session is None:
            name = message.sender_name if to == "sender" else message.recipient_name
            raise NotFound(f'The session row of "{name}" is gone: no hook can carry a comment to it.')
        return do_write_comment(session=session, body=request.POST.get("body", ""), author=request.user)

    action = reverse("message-comment", args=[pk])
    return pages.composer_answer(request, write, composer={"action": action, "m": message}, page=reverse("message", args=[pk]))


@owner_required
def inbox(request):
    def rows():
        page = pages.keyset_page(
            reads.inbox_querysets(), reads.messages_by_ids, before=request.GET.get("before"), after=request.GET.get("after")
        )
        return {"inbox_page": page, "items": reads.decorate_messages(page.rows)}

    return render_board(request, "messaging/inbox.html", {"inbox-rows": rows}, {"section": "inbox"})


@owner_required
@require_POST
def inbox_seen(request, pk):
    message = get_object_or_404(SessionMessage, pk=pk)
    do_mark_inbox_seen(message=message)
    flash.success(request, f"M-{message.pk} marked seen; it left the Inbox.")
    return redirect("inbox")


@owner_required
@require_POST
def inbox_decide(request, pk):
    message = get_object_or_404(SessionMessage.objects.select_related("recipient"), pk=pk)
    decision = request.POST.get("decision")
    if decision not in ("deliver", "deny"):
        flash.error(request, "Choose Deliver or Deny.")
        return redirect("inbox")
    result = do_decide_held_message(message=message, deliver=decision == "deliver")
    (flash.success if result.decided else flash.error)(request, result.sentence)
    return redirect("inbox")


@owner_required
def inbox_count(request):
    return TemplateResponse(request, "base.html#inbox-count", {})

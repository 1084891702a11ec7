"""The owner's board: sessions, tasks, events, map, search and export pages.

Plain function views over the actions (writes) and `board` (reads). Each live fragment of a
page is a `{% partialdef %}` whose container refetches itself on a refresh ping; the view
renders only that fragment when htmx asks for it (see render_board in board/pages.py).
"""

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from core.errors import RelaybayError
from core.inputs import clean_text, parse_id

from machines.models import Machine
from messaging import reads
from sessions_app import actions
from sessions_app import directory
from collisions import files
from sessions_app.models import Comment, Event, HookLink, Session, Task

from . import export, pages, search
from . import map as session_map
from .pages import owner_required, render_board, task_param

# Each keeps the rows whose badge (directory.current_link's state) says so.
SESSION_STATES = {
    "live": lambda qs: directory.with_current_state(qs).filter(current_state__in=HookLink.LIVE_STATES),
    "busy": lambda qs: directory.with_current_state(qs).filter(current_state=HookLink.State.BUSY),
    "idle": lambda qs: directory.with_current_state(qs).filter(current_state=HookLink.State.IDLE),
    "ended": lambda qs: directory.with_current_state(qs).filter(current_state=HookLink.State.ENDED),
    "unlinked": lambda qs: qs.filter(links__isnull=True),
}
EVENT_KINDS = ["hook", "message", "comment", "link", "session", "task", "desktop", "file", "file_notice"]


def _run(request, write, success):
    """Run one action for a form; its error sentence becomes the page's message."""
    try:
        result = write()
    except RelaybayError as error:
        messages.error(request, error.message)
        return None
    if success:
        messages.success(request, success)
    return result


# --- Sessions ------------------------------------------------------------------------------


@owner_required
def sessions_list(request):
    state = request.GET.get("state", "")
    kind = request.GET.get("kind", "")
    engine = request.GET.get("engine", "")
    machine = request.GET.get("machine", "")
    machines = dict(Machine.objects.values_list("name", "pk"))
    text = clean_text(request.GET.get("q", "")).strip()
    task = task_param(request)

    def rows():
        sessions = directory.sessions_with_links().order_by("-last_seen_at", "-id")
        if state in SESSION_STATES:
            sessions = SESSION_STATES[state](sessions)
        if kind in Session.Kind.values:
            sessions = sessions.filter(kind=kind)
        if engine in Session.Engine.values:
            sessions = sessions.filter(engine=engine)
        if machine == directory.HERE or machine in machines:
            sessions = directory.on_machine(sessions, machines.get(machine))
        if task:
            sessions = sessions.filter(task=task)
        if text:
            sessions = sessions.filter(
                Q(name_keys__contains=text.casefold())
                | Q(desktop_id__icontains=text)
                | Q(folder__icontains=text)
                | Q(links__hook_session=text)
            ).distinct()
        page = Paginator(sessions, 100).get_page(request.GET.get("page"))
        return {
            "page": page,
            "sessions": pages.decorate_sessions(page.object_list),
            "refused_hooks": directory.refused_hooks_recently(timezone.now()),
            "unheard": directory.unheard_sessions_recently(timezone.now()),
        }

    context = {
        "section": "sessions",
        "tasks": Task.objects.all(),
        "kinds": Session.Kind.values,
        "engines": Session.Engine.choices,
        "machines": [directory.HERE, *machines],
        "states": list(SESSION_STATES),
        "filters": {"state": state, "kind": kind, "engine": engine, "machine": machine, "q": text, "task": task},
    }
    return render_board(request, "sessions_app/sessions.html", {"sessions-rows": rows}, context)


@owner_required
def session_detail(request, pk):
    session = get_object_or_404(directory.sessions_with_links(), pk=pk)
    pages.decorate_sessions([session])

    def link():
        return {"links": session.newest_links()}

    def now():
        # Refetched every few seconds as well as on pings: a tool call within a busy turn
        # sends no ping (the hook path stays quiet), yet the current tool should show.
        return {"activity": pages.activity(session)}

    def comments():
        return {"comments": list(session.comments.select_related("author").order_by("-id")[:100])}

    def changed_files():
        return {"changed_files": files.session_files(session)}

    def session_messages():
        page = pages.keyset_page(
            reads.involving([session]),
            reads.messages_by_ids,
            before=request.GET.get("m_before"),
            after=request.GET.get("m_after"),
        )
        return {"message_page": page, "threads": reads.threaded(reads.decorate_messages(page.rows))}

    def events():
        page = pages.keyset_page(
            [Event.objects.filter(session=session)],
            lambda ids: Event.objects.filter(pk__in=ids),
            before=request.GET.get("before"),
            after=request.GET.get("after"),
        )
        return {"event_page": page}

    # The owner's quiet choice for this page: what it hides is only not shown, never deleted.
    parts = {"session-now": now, "session-link": link, "session-files": changed_files}
    if session.quiet != Session.Quiet.AGENTS_ONLY:
        parts |= {"session-comments": comments, "session-events": events}
    if session.quiet != Session.Quiet.HIDE_AGENTS:
        parts["session-messages"] = session_messages
    context = {
        "section": "sessions",
        "session": session,
        "tasks": Task.objects.all(),
        "inbound_choices": Session.Inbound.choices,
        "quiet_choices": Session.Quiet.choices,
    }
    return render_board(request, "sessions_app/session.html", parts, context)


@owner_required
@require_POST
def write_comment(request, pk):
    session = get_object_or_404(Session, pk=pk)
    return pages.composer_answer(
        request,
        lambda: actions.do_write_comment(session=session, body=request.POST.get("body", ""), author=request.user),
        composer={"action": reverse("session-comment", args=[pk])},
        page=reverse("session", args=[pk]),
    )


@owner_required
@require_POST
def edit_session(request, pk):
    session = get_object_or_404(Session, pk=pk)
    task_ref = request.POST.get("task", "")
    task = Task.objects.filter(pk=parse_id(task_ref)).first() if parse_id(task_ref) else None
    _run(
        request,
        lambda: actions.do_update_session(
            session=session,
            title=request.POST.get("title", ""),
            aliases=request.POST.get("aliases", ""),
            task=task if "task" in request.POST else ...,
        ),
        "Session updated.",
    )
    return redirect("session", pk=pk)


@owner_required
@require_POST
def set_inbound(request, pk):
    session = get_object_or_404(Session, pk=pk)
    policy = request.POST.get("policy", "")
    _run(
        request,
        lambda: actions.do_set_inbound_policy(session=session, policy=policy),
        f"Messages from other sessions to {session.handle}: {Session.Inbound(policy).label if policy in Session.Inbound.values else policy}.",
    )
    return redirect("session", pk=pk)


@owner_required
@require_POST
def set_quiet(request, pk):
    session = get_object_or_404(Session, pk=pk)
    _run(request, lambda: actions.do_set_quiet(session=session, quiet=request.POST.get("quiet", "")), None)
    return redirect("session", pk=pk)


@owner_required
def session_export(request, pk):
    session = get_object_or_404(Session, pk=pk)
    return _markdown(export.session_markdown(session), f"relaybay-{session.handle}.md")


# --- Tasks ---------------------------------------------------------------------------------


@owner_required
def tasks_list(request):
    status = request.GET.get("status", "")

    def rows():
        tasks = Task.objects.annotate(session_count=Count("sessions", distinct=True))
        if status in Task.Status.values:
            tasks = tasks.filter(status=status)
        return {"tasks": list(tasks.order_by("status", "-id"))}

    context = {"section": "tasks", "statuses": Task.Status.values, "status": status}
    return render_board(request, "sessions_app/tasks.html", {"tasks-rows": rows}, context)


@owner_required
@require_POST
def create_task(request):
    task = _run(request, lambda: actions.do_save_task(title=request.POST.get("title", "")), "Task created.")
    return redirect("task", pk=task.pk) if task else redirect("tasks")


@owner_required
def task_detail(request, pk):
    task = get_object_or_404(Task, pk=pk)

    def task_sessions():
        return {"sessions": pages.decorate_sessions(directory.sessions_with_links().filter(task=task).order_by("-last_seen_at", "-id"))}

    def comments():
        return {"comments": list(Comment.objects.filter(session__task=task).select_related("session").order_by("-id")[:100])}

    def task_messages():
        members = list(Session.objects.filter(task=task).only("id"))
        page = pages.keyset_page(
            reads.involving(members, task=task),
            reads.messages_by_ids,
            before=request.GET.get("m_before"),
            after=request.GET.get("m_after"),
        )
        return {"message_page": page, "threads": reads.threaded(reads.decorate_messages(page.rows))}

    parts = {"task-sessions": task_sessions, "task-comments": comments, "task-messages": task_messages}
    candidates = pages.decorate_sessions(directory.sessions_with_links().exclude(task=task).order_by("-last_seen_at", "-id")[:300])
    context = {
        "section": "tasks",
        "task": task,
        "statuses": Task.Status.values,
        "candidates": candidates,
        "inbound_choices": Session.Inbound.choices,
    }
    return render_board(request, "sessions_app/task.html", parts, context)


@owner_required
@require_POST
def edit_task(request, pk):
    task = get_object_or_404(Task, pk=pk)
    _run(
        request,
        lambda: actions.do_save_task(task=task, title=request.POST.get("title", ""), status=request.POST.get("status") or None),
        "Task saved.",
    )
    return redirect("task", pk=pk)


@owner_required
@require_POST
def attach_session(request, pk):
    task = get_object_or_404(Task, pk=pk)

    def attach():
        session = directory.resolve_one(request.POST.get("session", ""), what="session")
        return actions.do_update_session(session=session, task=task)

    _run(request, attach, "Session attached.")
    return redirect("task", pk=pk)


@owner_required
@require_POST
def detach_session(request, pk, session_pk):
    session = get_object_or_404(Session, pk=session_pk, task_id=pk)
    _run(request, lambda: actions.do_update_session(session=session, task=None), "Session detached.")
    return redirect("task", pk=pk)


@owner_required
@require_POST
def set_task_inbound(request, pk):
    task = get_object_or_404(Task, pk=pk)
    policy = request.POST.get("policy", "")
    changed = _run(request, lambda: actions.do_set_inbound_policy(task=task, policy=policy), None)
    if changed is not None:
        messages.success(request, f"Inbound policy {policy} set for every session of the task ({len(changed)} changed).")
    return redirect("task", pk=pk)


@owner_required
def task_export(request, pk):
    task = get_object_or_404(Task, pk=pk)
    return _markdown(export.task_markdown(task), f"relaybay-task-{task.pk}.md")


def _markdown(text, filename):
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- Events, map, search -------------------------------------------------------------------


@owner_required
def events_feed(request):
    kind = request.GET.get("kind", "")
    name = request.GET.get("session", "").strip()
    matched = directory.find_sessions(name)

    def rows():
        events = Event.objects.all()
        if kind in EVENT_KINDS:
            events = events.filter(name__startswith=kind + ".")
        if name:
            events = events.filter(session__in=matched)
        page = pages.keyset_page(
            [events],
            lambda ids: Event.objects.filter(pk__in=ids).select_related("session"),
            before=request.GET.get("before"),
            after=request.GET.get("after"),
        )
        return {"event_page": page}

    context = {"section": "events", "kinds": EVENT_KINDS, "kind": kind, "session_filter": name, "matched": matched}
    return render_board(request, "board/events.html", {"events-rows": rows}, context)


@owner_required
def map_view(request):
    task = task_param(request)
    shared_files = request.GET.get("files") == "1"

    def drawing():
        return {"map": session_map.draw(task=task, shared_files=shared_files)}

    context = {"section": "map", "tasks": Task.objects.all(), "task": task, "shared_files": shared_files}
    return render_board(request, "board/map.html", {"map-svg": drawing}, context)


@owner_required
def search_view(request):
    text = request.GET.get("q", "").strip()
    results = search.search(text) if text else None
    return render_board(request, "board/search.html", {}, {"section": "search", "q": text, "results": results})

"""The writes of what sessions wait on the owner for (docs/rules.md §8). The board, the owner's
API and the hook path call these; none re-implements a rule."""

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import ErrorCode, NotFound, RelaybayError
from core.pings import ping, send_to_group
from sessions_app.feed import feed_row, record_events

from . import answers
from .models import Request

State = Request.State


class NotPending(RelaybayError):
    """A decision for a request that no longer waits: it says what became of it."""

    code = ErrorCode.NOT_PENDING

    def __init__(self, request, state):
        said = State(state).label.lower()
        super().__init__(f"{request.handle} is no longer waiting: it was {said}. Nothing was changed.")
        self.state = str(state)

    def body(self):
        return {**super().body(), "state": self.state}


def request_group(pk):
    """The channel-layer group a hook waiting on request `pk` listens on."""
    return "request." + hashlib.sha1(str(pk).encode()).hexdigest()


def _wake_waiting_hook(pk):
    transaction.on_commit(lambda: send_to_group(request_group(pk), {"type": "wake"}))


def open_request(*, link, engine, kind, tool, summary, answerable, now, attended=True):
    """A new request of the session, in the hook's own transaction; its feed row is returned for
    the hook to write with its own."""
    request = Request.objects.create(
        session_id=link.session_id, hook_session=link.hook_session, engine=engine, kind=kind, tool=tool[:200],
        summary=summary, answerable=answerable, attended=attended, requested_at=now,
        expires_at=now + timedelta(seconds=settings.RELAYBAY_APPROVAL_SECONDS),
    )  # fmt: skip
    ping("approvals", "sessions")
    data = {"request": request.handle, "kind": kind, "tool": request.tool}
    return request, [feed_row("approval.requested", session_id=link.session_id, hook_session=link.hook_session, data=data)]


def settle_answered_elsewhere(*, link, now):
    """The session went on (a later hook of it): what waited was answered in the terminal, or,
    past its expiry, expired. Feed rows returned for the hook to write."""
    waiting = list(Request.objects.filter(hook_session=link.hook_session, state=State.PENDING).only("pk", "tool", "expires_at"))
    feed = []
    for request in waiting:
        state = State.EXPIRED if request.expires_at <= now else State.ANSWERED_ELSEWHERE
        by = "relaybay" if state == State.EXPIRED else "terminal"
        done = Request.objects.filter(pk=request.pk, state=State.PENDING).update(
            state=state, decided_by=by, decided_at=now, summary="", message=""
        )
        if done:
            data = {"request": request.handle, "tool": request.tool, "decided_by": by}
            feed.append(feed_row(f"approval.{state}", session_id=link.session_id, hook_session=link.hook_session, data=data))
            _wake_waiting_hook(request.pk)
    if feed:
        ping("approvals", "sessions")
    return feed


def do_withdraw_request(*, pk):
    """The hook holding request `pk` was ended by its CLI (the person answered No or Esc in the
    terminal: Claude Code then stops the hook): it was answered in the terminal."""
    now = timezone.now()
    with transaction.atomic():
        request = Request.objects.filter(pk=pk).first()
        if request is None:
            return False
        done = Request.objects.filter(pk=pk, state=State.PENDING).update(
            state=State.ANSWERED_ELSEWHERE, decided_by="terminal", decided_at=now, summary="", message=""
        )
        if done:
            data = {"request": request.handle, "tool": request.tool, "decided_by": "terminal"}
            record_events([feed_row("approval.answered_elsewhere", session_id=request.session_id, hook_session=request.hook_session, data=data)])
            ping("approvals", "sessions")
    return bool(done)


@dataclass
class Decided:
    requests: list


def do_decide_request(*, pk, allow, scope=Request.Scope.ONCE, message="", by):
    """The owner's answer to one permission request: first answer wins, compare-and-set; a
    request no longer pending is NotPending (409) with its state, one that never was NotFound."""
    if not Request.objects.filter(pk=pk).exists():
        raise NotFound(f"There is no request R-{pk}.")
    return do_decide_requests(pks=[pk], allow=allow, scope=scope, message=message, by=by, strict=True)


def do_decide_session_requests(*, session, allow, scope=Request.Scope.ONCE, message="", by):
    """The owner's answer to every permission request of `session` waiting now."""
    pks = list(Request.objects.waiting(timezone.now()).filter(session=session, answerable=True).values_list("pk", flat=True))
    return do_decide_requests(pks=pks, allow=allow, scope=scope, message=message, by=by, strict=False)


def do_decide_requests(*, pks, allow, scope, message, by, strict):
    """Decide each request of `pks` that still waits; with `strict`, one that does not is
    NotPending and nothing is written. The message goes to the model only (kept until the
    waiting hook takes it); the feed keeps the tool, the decision, who and when."""
    now = timezone.now()
    state = State.ALLOWED if allow else State.DENIED
    scope = Request.Scope(scope) if scope else Request.Scope.ONCE
    decided = []
    with transaction.atomic():
        for request in Request.objects.filter(pk__in=pks).select_related(None):
            updated = Request.objects.filter(pk=request.pk, state=State.PENDING, expires_at__gt=now, answerable=True).update(
                state=state, scope=scope, message=message if not allow else "", decided_by=by, decided_at=now, summary=""
            )
            if not updated:
                if strict:
                    fresh = Request.objects.get(pk=request.pk)
                    current = fresh.state_at(now)
                    if current == State.PENDING:  # waiting, but for the terminal only
                        raise RelaybayError(
                            f"{request.handle} can be answered only in its terminal: its hook does not wait for relaybay.",
                            code=ErrorCode.NOT_PENDING,
                        )
                    raise NotPending(fresh, current)
                continue
            decided.append(request)
            data = {"request": request.handle, "tool": request.tool, "decision": state.value, "scope": scope.value, "decided_by": by}
            record_events([feed_row(f"approval.{state}", session_id=request.session_id, hook_session=request.hook_session, data=data)])
            _wake_waiting_hook(request.pk)
        if decided:
            ping("approvals", "sessions")
    return Decided(requests=decided)


@dataclass
class Taken:
    state: str
    answer: dict | None = None


def do_take_answer(*, pk, now=None):
    """What the hook waiting on request `pk` prints: the owner's decision in its CLI's shape; for
    a headless run past its expiry, relaybay's denial; else nothing (answered in the terminal,
    or expired in a terminal whose dialog still stands). The deny message leaves relaybay here."""
    now = now or timezone.now()
    with transaction.atomic():
        request = Request.objects.select_for_update().filter(pk=pk).first()
        if request is None:
            return Taken(state="gone")
        if request.state == State.PENDING and request.expires_at <= now:
            Request.objects.filter(pk=pk, state=State.PENDING).update(state=State.EXPIRED, decided_by="relaybay", decided_at=now, summary="")
            data = {"request": request.handle, "tool": request.tool, "decided_by": "relaybay"}
            record_events([feed_row("approval.expired", session_id=request.session_id, hook_session=request.hook_session, data=data)])
            ping("approvals", "sessions")
            request.state = State.EXPIRED
        if request.state == State.PENDING:
            return Taken(state=State.PENDING)
        answer = None
        if request.state in (State.ALLOWED, State.DENIED):
            answer = answers.permission_answer(
                request.engine, allow=request.state == State.ALLOWED, scope=request.scope, tool=request.tool, message=request.message
            )
        elif request.state == State.EXPIRED and not request.attended:
            seconds = int((request.expires_at - request.requested_at).total_seconds())
            answer = answers.permission_answer(request.engine, allow=False, message=answers.NOBODY_ANSWERED.format(seconds=seconds))
        if request.taken_at is None:
            Request.objects.filter(pk=pk).update(taken_at=now, message="")
        return Taken(state=request.state, answer=answer)

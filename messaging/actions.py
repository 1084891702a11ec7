"""The writes of the MCP channel: send, acknowledge, link (docs/rules.md §4). The JSON API, the MCP
server (through the API) and the board all call these; no rule is written twice."""

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from relaybay.errors import ErrorCode, InvalidInput, NotFound, RateLimited, Refused, SenderRefused
from relaybay.events import ping
from relaybay.inputs import clean_text, parse_id
from sessions_app import lib as session_lib
from sessions_app.lib import Arrival
from sessions_app.actions import get_task, link_hook_session, named_row, resolve_one
from sessions_app.events import record_event, wake_session
from sessions_app.hooks.delivery import BUDGET, answer_size
from sessions_app.models import HookLink, Session

from . import lib
from .delivery import MESSAGES
from .models import SessionMessage

SENDS_PER_MINUTE = 10
LONGEST_ID = 10**12
MAX_DEPTH = 8


@dataclass
class Claim:
    """Who a call says makes it: the name it gives and the hook link its hook_session names.
    Nothing is proven yet; the send rule (resolve_sender) and the ack rule (resolve_reader)
    judge it."""

    name: str | None
    hook_session: str | None
    link: HookLink | None


def claim_of(*, session=None, session_title=None, hook_session=None, what="session"):
    name = session_lib.check_name(session if session is not None else session_title, what=what)
    hook = (hook_session or "").strip() or None
    link = HookLink.objects.select_related("session").filter(hook_session=hook).first() if hook else None
    return Claim(name, hook, link)


@dataclass
class Caller:
    """Who a call is, once a rule has judged its claim: the row, the name it goes by here,
    and whether its proof holds (a live exact link of its own)."""

    row: Session
    name: str
    verified: bool


def _live_exact_link(row):
    return row.links.live().filter(exact=True).first()


def _linked_elsewhere(name):
    return (
        f'"{name}" is linked to a live Claude Code session; write with its hook_session to prove it is you. '
        "If you restarted without a session end, write again with your new hook_session "
        "(CLAUDE_CODE_SESSION_ID): that moves the link to you."
    )


def resolve_sender(claim):
    """The send rule (docs/rules.md §4.2): who writes. A row live under an exact link is written as
    only with that link's id, or with a live id of the caller's own, which moves the link to
    it (a restart). Call inside a transaction: it may create an `mcp` row or move a link, and
    a refusal raised later rolls those back."""
    name, hook_session, link = claim.name, claim.hook_session, claim.link
    if name is None and hook_session is None:
        raise SenderRefused(
            "The sender is required: pass session (your title or name) and hook_session "
            "(your CLAUDE_CODE_SESSION_ID) so the recipient knows who writes."
        )
    if name is None:
        if link is None:
            raise SenderRefused(
                f"relaybay has seen no hook events from hook session {hook_session}; "
                "pass session with your name as well (it is then stored as not verified)."
            )
        # The hook id names its row; an old id of a row that is live under another exact
        # link must not pass for it, exactly as its name without that link's id would not.
        held = _live_exact_link(link.session)
        if held is not None and held.pk != link.pk:
            raise SenderRefused(_linked_elsewhere(link.session.public_name))
        return Caller(link.session, link.session.public_name, link.carries_deliveries)
    if link is not None and link.carries_deliveries and link.session not in session_lib.find_sessions(name):
        raise SenderRefused(
            f'Hook session {hook_session} belongs to another live session, not to "{name}". '
            "Pass your own hook_session (CLAUDE_CODE_SESSION_ID), or name the session that id belongs to."
        )
    row, _ = named_row(name, hook_session, kind=Session.Kind.MCP)
    if link is None or not link.live:
        if _live_exact_link(row) is not None:
            raise SenderRefused(_linked_elsewhere(name))
        return Caller(row, name, False)
    return Caller(row, name, link_hook_session(row, hook_session).verified)


def _check_body(body):
    if not isinstance(body, str):
        raise InvalidInput("The body must be text.")
    body = lib.normalise_body(clean_text(body))
    if not body.strip():
        raise InvalidInput("The body is empty; write the message text in body.")
    if len(body) > lib.BODY_MAX:
        raise InvalidInput(
            f"The body is {len(body)} characters after normalising line breaks; the limit is {lib.BODY_MAX}. "
            "Shorten it or split it into several messages.",
            code=ErrorCode.BODY_TOO_LONG,
        )
    return body


def _check_fits(message):
    """The message alone in a hook answer, header included, as the Stop reason or the wake-up
    would carry it, must fit one answer. Measured with an id longer than any it will have, so
    whether a body fits never depends on its id."""
    size = answer_size(MESSAGES, message, lib.message_block(message, number=LONGEST_ID))
    if size > BUDGET:
        raise InvalidInput(
            f"This body would take {size} characters once quoted and framed, over the {BUDGET} one hook answer "
            "can carry (line breaks, quotes and backslashes count double). Shorten it or split it.",
            code=ErrorCode.BODY_TOO_LONG,
        )


def _check_rate(sender_row, now):
    window = SessionMessage.objects.filter(sender=sender_row, created_at__gt=now - timedelta(minutes=1), channel=SessionMessage.Channel.MCP)
    recent = list(window.order_by("created_at").values_list("created_at", flat=True)[:SENDS_PER_MINUTE])
    if len(recent) >= SENDS_PER_MINUTE:
        wait = max(1, int((recent[0] + timedelta(minutes=1) - now).total_seconds() + 0.999))
        raise RateLimited(
            f"You sent {SENDS_PER_MINUTE} messages in the last minute, the limit. Wait {wait} s before sending again."
        )


def get_message(message_id):
    ref = str(message_id).strip()
    ref = ref[2:] if ref.upper().startswith("M-") else ref
    if parse_id(ref) is None:
        raise InvalidInput(f'"{clean_text(str(message_id))}" is not a message id; give the number, like 12 or M-12.')
    message = SessionMessage.objects.select_related("sender", "recipient").filter(pk=parse_id(ref)).first()
    if message is None:
        raise NotFound(f"There is no message M-{ref}. messages_list shows your messages and their ids.")
    return message


SENDER_TOLD = {
    Arrival.NO_LINK: (
        "Not delivered: it never linked its own hook session, so no hook can carry this to it. "
        "It gets it once it links (session_link with its hook_session, or RELAYBAY_SESSION when it starts); "
        "the owner sees it on the board."
    ),
    Arrival.ENDED: "Not delivered: it has ended; this waits in case it comes back.",
    Arrival.WAKING: "Not delivered yet: it is idle, and its wake-up hook is waiting: it is being woken with this now.",
    Arrival.IDLE: "Not delivered yet: it is idle. It sees this at its next prompt or wake-up.",
    Arrival.BUSY: "Not delivered yet: it reaches it at its next tool call or prompt.",
}
SENDER_TOLD[Arrival.GUESSED] = SENDER_TOLD[Arrival.NO_LINK]


def reachability(recipient):
    """What the sender is told about when the message can arrive (docs/rules.md §4.3)."""
    return SENDER_TOLD[session_lib.arrival(recipient)]


@dataclass
class SendResult:
    message: SessionMessage
    status: str

    @property
    def note(self):
        if self.message.sender_verified:
            return ""
        return (
            "Your name is not verified (no live hook link of yours proves it), and the recipient is told so. "
            "Pass hook_session=<your CLAUDE_CODE_SESSION_ID> to verify it."
        )


def _refuse_deep_reply(parent):
    with transaction.atomic():
        SessionMessage.objects.filter(pk=parent.pk).update(needs_owner=True, owner_seen_at=None)
        record_event(
            "message.depth_refused",
            session=parent.recipient,
            data={"message": parent.pk, "from": parent.sender_name, "to": parent.recipient_name, "depth": parent.depth + 1},
        )
        ping("inbox", "messages")
    raise Refused(
        f"This reply would be {parent.depth + 1} deep; replies stop at {MAX_DEPTH}. "
        f"M-{parent.pk} went to the owner's Inbox instead: leave the decision to the owner.",
        code=ErrorCode.REPLY_TOO_DEEP,
    )


class _ReplyTooDeep(Exception):
    pass


def do_send_message(*, body, to=None, task=None, in_reply_to=None, session=None, session_title=None, hook_session=None):
    body = _check_body(body)
    parent = get_message(in_reply_to) if in_reply_to not in (None, "") else None
    try:
        return _send_message(
            body=body, to=to, task=task, parent=parent, session=session, session_title=session_title, hook_session=hook_session
        )
    except _ReplyTooDeep:
        # The refusal writes only the owner's Inbox mark, never the reply.
        _refuse_deep_reply(parent)


def _send_message(*, body, to, task, parent, session, session_title, hook_session):
    now = timezone.now()
    with transaction.atomic():
        sender = resolve_sender(claim_of(session=session, session_title=session_title, hook_session=hook_session, what="sender name"))
        Session.objects.select_for_update().filter(pk=sender.row.pk).first()
        if to not in (None, ""):
            recipient = resolve_one(to, what="recipient")
            recipient_name = session_lib.check_name(to)
        elif parent is not None:
            recipient = parent.sender
            recipient_name = parent.sender_name
            if recipient is None:
                raise NotFound(f"M-{parent.pk}'s sender row is gone; there is nobody to reply to.")
        else:
            raise InvalidInput("Say who receives it: pass to (a session name, S-<id> handle or desktop id), or in_reply_to.")
        if recipient.pk == sender.row.pk:
            raise Refused("A session cannot write to itself; pass another session in to (sessions_list shows them).", code=ErrorCode.SELF_MESSAGE)
        if parent is not None and parent.depth + 1 > MAX_DEPTH:
            # Judged only once the sender and recipient are: a send refused for who writes
            # must not reach the owner's Inbox. Raising rolls back what resolving the sender
            # may have written (an mcp row, a moved link).
            raise _ReplyTooDeep
        _check_rate(sender.row, now)
        task_row = get_task(task) if task not in (None, "") else (parent.task if parent else sender.row.task)
        status = reachability(recipient)
        message = SessionMessage(
            sender=sender.row,
            sender_name=sender.name,
            sender_verified=sender.verified,
            recipient=recipient,
            recipient_name=recipient_name,
            task=task_row,
            body=body,
            parent=parent,
            depth=parent.depth + 1 if parent else 0,
            not_delivered_reason=status,
        )
        _check_fits(message)
        message.save()
        edge = {"message": message.pk, "from": sender.row.handle, "from_name": sender.name, "to": recipient.handle, "to_name": recipient_name}
        record_event("session.message", session=sender.row, data={**edge, "channel": "mcp"})
        record_event("message.sent", session=sender.row, data={**edge, "verified": sender.verified, "depth": message.depth})
        if parent is not None and parent.recipient_id == sender.row.pk:
            proven, verified = _ack_proof(sender.row, (hook_session or "").strip() or None)
            if proven:
                _mark_read([parent], reader=sender.row, verified=verified)
        wake_session(recipient)
        ping("messages", "sessions", "map", "events")
    return SendResult(message, status)


def _ack_proof(row, hook_session):
    """The ack rule (docs/rules.md §4.4): (may the caller mark the row's mail read, is the mark verified).

    A row with an exact link, live or ended, needs that link's id: an ended link counts,
    because that session may come back and must then get what was not read in its name.
    While the row is live, only its live link's id proves it, as for a send (§4.2): an old
    id left behind by a restart does not. A row that never linked itself cannot prove
    anything, so anyone naming it may mark its mail, and the mark says so."""
    exact = row.links.filter(exact=True)
    live = exact.live()
    proving = set((live if live.exists() else exact).values_list("hook_session", flat=True))
    if proving:
        return hook_session in proving, True
    return True, False


def resolve_reader(claim):
    """Whose mail the caller marks read, by the ack rule; refused when it cannot prove it."""
    if claim.name is not None:
        row = resolve_one(claim.name, what="session")
    elif claim.link is not None:
        row = claim.link.session
    else:
        raise InvalidInput("Say whose mail is read: pass session (your name) and hook_session.")
    proven, verified = _ack_proof(row, claim.hook_session)
    if not proven:
        raise Refused(
            f'"{row.public_name}" has an exact hook link: acknowledge with its hook_session '
            "(your CLAUDE_CODE_SESSION_ID), so its mail is not marked read in its name by someone else.",
            code=ErrorCode.ACK_NOT_PROVEN,
        )
    return Caller(row, row.public_name, verified)


def _mark_read(messages, *, reader, verified):
    now = timezone.now()
    marked = 0
    for message in messages:
        if SessionMessage.objects.filter(pk=message.pk, read_at=None).update(read_at=now, read_verified=verified):
            marked += 1
            record_event(
                "message.read",
                session=reader,
                data={"message": message.pk, "from": message.sender_name, "to": message.recipient_name, "verified": verified},
            )
    if marked:
        ping("messages", "sessions")
    return marked


@dataclass
class AckResult:
    session: Session
    marked: int
    verified: bool


def do_ack_messages(*, message_id=None, session=None, session_title=None, hook_session=None):
    with transaction.atomic():
        reader = resolve_reader(claim_of(session=session, session_title=session_title, hook_session=hook_session))
        row, verified = reader.row, reader.verified
        if message_id not in (None, ""):
            message = get_message(message_id)
            if message.recipient_id != row.pk:
                raise Refused(f"M-{message.pk} is not addressed to {row.handle}; you can only acknowledge your own mail.", code=ErrorCode.NOT_YOUR_MAIL)
            messages = [message]
        else:
            unread = SessionMessage.objects.filter(recipient=row, read_at=None, channel=SessionMessage.Channel.MCP)
            messages = list(unread.exclude(delivered_at=None) if verified else unread)
        marked = _mark_read(messages, reader=row, verified=verified)
    return AckResult(row, marked, verified)


def do_link_session(*, hook_session, session=None, session_title=None):
    hook = (hook_session or "").strip()
    if not hook:
        raise InvalidInput("Pass hook_session: your CLAUDE_CODE_SESSION_ID.")
    with transaction.atomic():
        link = HookLink.objects.filter(hook_session=hook).first()
        if link is None:
            raise NotFound(
                f"relaybay has seen no hook events from hook session {hook}, so there is nothing to link. "
                "Check the id (CLAUDE_CODE_SESSION_ID) and that relaybay's hooks are configured (python manage.py claude_config)."
            )
        if not link.live:
            raise Refused(f"Hook session {hook} has ended; link the hook session you are running in now.", code=ErrorCode.HOOK_ENDED)
        name = session_lib.check_name(session if session is not None else session_title, what="session")
        if name is None:
            raise InvalidInput("Pass session (or session_title): the name to link this hook session to.")
        row, _ = named_row(name, hook, kind=Session.Kind.MCP)
        result = link_hook_session(row, hook)
    return result


def do_mark_inbox_seen(*, message):
    with transaction.atomic():
        SessionMessage.objects.filter(pk=message.pk).update(owner_seen_at=timezone.now())
        record_event("message.owner_seen", session=message.recipient, data={"message": message.pk})
        ping("inbox", "messages")
    message.refresh_from_db()
    return message

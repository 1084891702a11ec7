"""The writes of the MCP channel: send, acknowledge, link (docs/rules.md §4). The JSON API, the MCP
server (through the API) and the board all call these; no rule is written twice."""

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import ErrorCode, InvalidInput, NotFound, Refused, SenderRefused
from core.pings import ping
from core.inputs import clean_text
from sessions_app import directory, identity
from sessions_app.directory import Arrival
from sessions_app.actions import do_link_hook_session, do_take_name
from sessions_app.directory import get_task, resolve_one
from sessions_app.feed import feed_row, record_event, record_events, wake_session, wake_sessions
from sessions_app.hooks.delivery import BUDGET, answer_size
from sessions_app.models import HookLink, Session

from . import fleet, formatting, reads
from .deliverable import MESSAGES
from .models import Dispatch, SessionMessage

LONGEST_ID = 10**12

MAX_DEPTH = 8


@dataclass
class Claim:
    """Who a call says makes it: the name it gives and the hook link its hook_session names.
    Nothing is proven yet; the send rule (access_sender) and the ack rule (access_reader)
    judge it."""

    name: str | None
    hook_session: str | None
    link: HookLink | None


def claim_of(*, session=None, session_title=None, hook_session=None, what="session"):
    name = directory.check_name(session if session is not None else session_title, what=what)
    hook = (hook_session or "").strip() or None
    # Without a name, the link's row is who calls: loaded with it.
    return Claim(name, hook, directory.link_of(hook, with_session=name is None))


@dataclass
class Caller:
    """Who a call is, once a rule has judged its claim: the row, the name it goes by here,
    whether its proof holds (a live exact link of its own), and the process that proves it:
    the link's process proof, `link:<id>` for a link whose hooks send none, "" when unproven.
    Sends are counted per process (fleet.check_rate), so a new name is no new budget.

    As access_sender judges a claim, `row` is None when no row goes by the name yet and
    `relinks` says the claim's live hook id becomes the row's exact link: do_take_sender
    writes both."""

    row: Session | None
    name: str
    verified: bool
    process: str = ""
    relinks: bool = False

    @property
    def settled(self):
        return self.row is not None and not self.relinks


def _proving(link):
    """The process a verified caller's link stands for (Caller.process)."""
    return link.process_proof or f"link:{link.pk}"


def _linked_elsewhere(name):
    return (
        f'"{name}" is linked to a live Claude Code session; write with its hook_session to prove it is you. '
        "If you are that session restarted, call session_link with this name: once the old session's "
        "process has exited, it moves the name, and its mail, to you."
    )


def access_sender(claim, process=""):
    """The send rule (docs/rules.md §4.2): who writes, judged without writing. The hook id speaks
    for its link only as identity.access_link lets the caller's process; a row live under an
    exact link is written as only with that link's id, or with a live id of the caller's own,
    which moves the link to it (a restart). Returns the Caller; one not yet `settled` names the
    row and the link do_take_sender writes."""
    name, hook_session, link = claim.name, claim.hook_session, claim.link
    if link is not None:
        try:
            identity.access_link(link, process)
        except identity.AnotherProcess:
            raise SenderRefused(
                f"Hook session {hook_session} belongs to another running Claude Code process; write with your own "
                "(relaybay's MCP server fills it in)."
            ) from None
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
        # (A live exact link is its row's only one: do_link_hook_session ends the others.)
        if not link.live_exact and directory.live_exact_link(link.session) is not None:
            raise SenderRefused(_linked_elsewhere(link.session.public_name))
        verified = link.live_exact
        return Caller(link.session, link.session.public_name, verified, _proving(link) if verified else "")
    row = directory.one_going_by(name)
    # No row goes by the name: a running session's hook row takes it, else a row is made for it.
    named_pk = row.pk if row is not None else (link.session_id if identity.renames_its_row(link) else None)
    if link is not None and link.live_exact and link.session_id != named_pk:
        raise SenderRefused(
            f'Hook session {hook_session} goes by "{link.session.public_name}", not by "{name}". '
            f'Write as "{link.session.public_name}" (or leave session out), or call session_link with "{name}" '
            "to go by it, when no running session holds it."
        )
    if link is None or not link.live:
        if row is not None and directory.live_exact_link(row) is not None:
            raise SenderRefused(_linked_elsewhere(name))
        return Caller(row, name, False)
    if row is not None and link.session_id == row.pk and link.exact:
        return Caller(row, name, True, _proving(link))
    return Caller(row, name, False, relinks=True)


def do_take_sender(claim, process=""):
    """The send rule's writes, once access_sender has judged the claim: the `mcp` row made for
    a new name (or a running session's hook row renamed to it), the caller's live hook id made
    that row's exact link. Call inside a transaction: a refusal raised later rolls them back."""
    caller = access_sender(claim, process)
    if caller.settled:
        return caller
    row, _ = do_take_name(caller.name, claim.hook_session, kind=Session.Kind.MCP)
    if not caller.relinks:
        return Caller(row, caller.name, False)
    linked = do_link_hook_session(row, claim.hook_session)
    return Caller(row, caller.name, linked.verified, _proving(linked.link) if linked.verified else "")


def _check_body(body):
    if not isinstance(body, str):
        raise InvalidInput("The body must be text.")
    body = formatting.normalise_body(clean_text(body))
    if not body.strip():
        raise InvalidInput("The body is empty; write the message text in body.")
    if len(body) > formatting.BODY_MAX:
        raise InvalidInput(
            f"The body is {len(body)} characters after normalising line breaks; the limit is {formatting.BODY_MAX}. "
            "Shorten it or split it into several messages.",
            code=ErrorCode.BODY_TOO_LONG,
        )
    return body


def _check_fits(message):
    """The message alone in a hook answer, header included, as the Stop reason or the wake-up
    would carry it, must fit one answer. Measured with an id longer than any it will have, so
    whether a body fits never depends on its id."""
    size = answer_size(MESSAGES, message, formatting.message_block(message, number=LONGEST_ID))
    if size > BUDGET:
        raise InvalidInput(
            f"This body would take {size} characters once quoted and framed, over the {BUDGET} one hook answer "
            "can carry (line breaks, quotes and backslashes count double). Shorten it or split it.",
            code=ErrorCode.BODY_TOO_LONG,
        )


SENDER_TOLD = {
    Arrival.NO_LINK: (
        "Not delivered: it never linked its own hook session, so no hook can carry this to it. "
        "It gets it once it links (session_link with its hook_session, or RELAYBAY_SESSION when it starts); "
        "the owner sees it on the board."
    ),
    Arrival.ENDED: "Not delivered: it has ended; this waits in case it comes back.",
    **{when: "Not delivered yet: " + sentence for when, sentence in directory.ON_ITS_WAY.items()},
}
SENDER_TOLD[Arrival.GUESSED] = SENDER_TOLD[Arrival.NO_LINK]


def reachability(recipient):
    """What the sender is told about when the message can arrive (docs/rules.md §4.3)."""
    return SENDER_TOLD[directory.arrival(recipient)]


def unverified_note(verified):
    if verified:
        return ""
    return (
        "Your name is not verified (no live hook link of yours proves it), and the recipient is told so. "
        "Pass hook_session=<your CLAUDE_CODE_SESSION_ID> to verify it."
    )


RETRY_NOTE = (
    "If this call fails or times out, call it again with the same request_id: a repeat within "
    "{hours} h returns this answer and sends nothing twice."
)


def retry_note(request_id):
    if not request_id:
        return "Pass request_id (any unique text) to make a retry after a timeout safe."
    return RETRY_NOTE.format(hours=settings.RELAYBAY_REQUEST_ID_HOURS)


def send_answer(message, status, *, request_id="", duplicate=False):
    """What message_send answers, and what a repeat of its request_id gets back."""
    return {
        "id": message.pk,
        "handle": message.handle,
        "to": message.recipient_name,
        "to_handle": f"S-{message.recipient_id}",
        "sender": message.sender_name,
        "sender_verified": message.sender_verified,
        "state": formatting.message_mark(message),
        "status": status,
        "note": unverified_note(message.sender_verified),
        "duplicate": duplicate,
        "request_id": request_id or None,
        "retry": retry_note(request_id),
        "repeat": False,
    }


@dataclass
class SendResult:
    answer: dict
    message: SessionMessage | None = None

    @property
    def status(self):
        return self.answer["status"]

    @property
    def note(self):
        return self.answer["note"]


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


def do_send_message(*, body, to=None, task=None, in_reply_to=None, request_id=None, session=None, session_title=None, hook_session=None, process=""):
    body = _check_body(body)
    request_id = fleet.clean_request_id(request_id)
    parent = reads.get_message(in_reply_to) if in_reply_to not in (None, "") else None
    try:
        return _send_message(
            body=body,
            to=to,
            task=task,
            parent=parent,
            request_id=request_id,
            session=session,
            session_title=session_title,
            hook_session=hook_session,
            process=process,
        )
    except _ReplyTooDeep:
        # The refusal writes only the owner's Inbox mark, never the reply.
        _refuse_deep_reply(parent)


def _sender_and_earlier_answer(*, session, session_title, hook_session, request_id, now, process=""):
    """The proven sender of a send or broadcast, and the answer it already had for this
    request_id, if any. Sends of one sender take turns on every process (serialize_on): its
    rate, its request ids and its duplicates are judged on what the previous send committed."""
    sender = do_take_sender(claim_of(session=session, session_title=session_title, hook_session=hook_session, what="sender name"), process)
    directory.serialize_on("sender", str(sender.row.pk))
    return sender, fleet.earlier_answer(sender.row, request_id, now)


def _send_message(*, body, to, task, parent, request_id, session, session_title, hook_session, process=""):
    now = timezone.now()
    with transaction.atomic():
        sender, earlier = _sender_and_earlier_answer(
            session=session, session_title=session_title, hook_session=hook_session, request_id=request_id, now=now, process=process
        )
        if earlier is not None:
            return SendResult(earlier)
        if to not in (None, ""):
            recipient = resolve_one(to, what="recipient")
            recipient_name = directory.check_name(to)
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
        first = fleet.first_of_duplicate(sender.row, recipient, body, now)
        if first is not None:
            first.recipient = recipient  # as loaded, with its links: its status reads them
            seconds = max(0, int((now - first.created_at).total_seconds()))
            status = (
                f"Not sent again: the same text went to {first.recipient_name} as {first.handle} {seconds} s ago, "
                f"so no second message was written. {first.handle} is {formatting.message_status(first, now)}"
            )
            return SendResult(send_answer(first, status, request_id=request_id, duplicate=True), first)
        fleet.check_rate(sender.process, now)
        fleet.lock_inboxes([recipient])
        verdict = fleet.inbound_verdict(recipient, now)
        if verdict.refused:
            raise Refused(verdict.why, code=verdict.code)
        task_row = get_task(task) if task not in (None, "") else (parent.task if parent else sender.row.task)
        dispatch = fleet.record_dispatch(sender, Dispatch.Kind.SEND, request_id, now)
        (message,) = _write_messages(sender=sender, to=[(recipient, recipient_name, verdict)], body=body, task=task_row, parent=parent, now=now)
        if parent is not None and parent.recipient_id == sender.row.pk:
            # The send rule judged the sender already; its proof stands for the reply's mark.
            proven, verified = _ack_proof(sender.row, (hook_session or "").strip() or None, sender.process)
            if proven:
                _mark_read([parent], reader=sender.row, verified=verified)
        answer = send_answer(message, message.not_delivered_reason, request_id=request_id)
        fleet.keep_answer(dispatch, request_id, answer)
        ping("messages", "sessions", "map", "events")
    return SendResult(answer, message)


def _write_messages(*, sender, to, body, task, parent, now, broadcast=None, also=()):
    """The message rows of one send or broadcast, one per (recipient, the name it was written
    to, its verdict) in `to`, and their feed rows, each with one INSERT (`also`: feed rows
    of the same write that follow theirs, a broadcast's own); then a wake-up for each
    recipient that may be woken."""
    messages = []
    for recipient, recipient_name, verdict in to:
        held = verdict.state == SessionMessage.State.HELD
        message = SessionMessage(
            sender=sender.row,
            sender_name=sender.name,
            sender_verified=sender.verified,
            recipient=recipient,
            recipient_name=recipient_name,
            task=task,
            body=body,
            parent=parent,
            depth=parent.depth + 1 if parent else 0,
            state=verdict.state,
            held_until=fleet.hold_expiry(now) if held else None,
            broadcast=broadcast,
            not_delivered_reason=verdict.why if held else reachability(recipient),
        )
        _check_fits(message)
        messages.append(message)
    SessionMessage.objects.bulk_create(messages)
    feed = []
    marks = {"verified": sender.verified, "depth": messages[0].depth}
    if broadcast is not None:
        marks["broadcast"] = broadcast.handle
    for message in messages:
        recipient = message.recipient
        edge = {"message": message.pk, "from": sender.row.handle, "from_name": sender.name, "to": recipient.handle, "to_name": message.recipient_name}
        feed.append(feed_row("session.message", session=sender.row, data={**edge, "channel": "mcp"}))
        feed.append(feed_row("message.sent", session=sender.row, data={**edge, **marks}))
        if message.state == SessionMessage.State.HELD:
            feed.append(feed_row("message.held", session=recipient, data=edge))
    record_events(feed + list(also))
    if any(message.state == SessionMessage.State.HELD for message in messages):
        ping("inbox")
    wake_sessions([message.recipient for message in messages if message.state != SessionMessage.State.HELD])
    return messages


def broadcast_recipients(sender_row, *, task=None, folder=None):
    """Who a broadcast reaches (docs/rules.md §4.8): the sessions of a task (the sender's own by
    default), or the live sessions working in a folder; never the sender, never an ended one."""
    folder = (folder or "").strip()
    task_row = get_task(task) if task not in (None, "") else (None if folder else sender_row.task)
    if task_row is None and not folder:
        raise InvalidInput(
            "Say who the broadcast is for: you belong to no task, so pass task (a task id or title) "
            "or folder (the absolute path the sessions work in)."
        )
    found = directory.listed_sessions(task=task_row, folder=folder, live_only=bool(folder), limit=None)
    recipients = sorted(
        (row for row in found if row.pk != sender_row.pk and directory.arrival(row) != Arrival.ENDED), key=lambda row: row.pk
    )
    scope = []
    if task_row is not None:
        scope.append(f'task "{task_row.title}" (T-{task_row.pk})')
    if folder:
        scope.append(f"folder {folder}")
    scope = " and ".join(scope)
    return recipients, task_row, scope


BROADCAST_OUTCOMES = ("delivering now", "not delivered yet", "held", "refused", "already sent")


def _outcome(verdict, recipient):
    if verdict.refused:
        return "refused"
    if verdict.state == SessionMessage.State.HELD:
        return "held"
    return "delivering now" if directory.arrival(recipient) == Arrival.WAKING else "not delivered yet"


def do_broadcast_message(*, body, task=None, folder=None, dry_run=False, request_id=None, session=None, session_title=None, hook_session=None, process=""):
    body = _check_body(body)
    request_id = "" if dry_run else fleet.clean_request_id(request_id)
    now = timezone.now()
    with transaction.atomic():
        sender, earlier = _sender_and_earlier_answer(
            session=session, session_title=session_title, hook_session=hook_session, request_id=request_id, now=now, process=process
        )
        if earlier is not None:
            return SendResult(earlier)
        recipients, task_row, scope = broadcast_recipients(sender.row, task=task, folder=folder)
        if not recipients:
            raise Refused(
                f"This broadcast would reach nobody: {scope} has no session besides you that has not ended. "
                "Nothing was sent; sessions_list shows who is there.",
                code=ErrorCode.BROADCAST_REACHES_NOBODY,
            )
        fleet.check_rate(sender.process, now)
        plan = _broadcast_plan(sender, recipients, body, now)
        kind = Dispatch.Kind.DRY_RUN if dry_run else Dispatch.Kind.BROADCAST
        dispatch = fleet.record_dispatch(sender, kind, request_id, now)
        report = [_planned_entry(recipient, verdict, first) for recipient, verdict, first in plan]
        counts = {outcome: n for outcome in BROADCAST_OUTCOMES if (n := sum(1 for e in report if e["outcome"] == outcome))}
        announced = feed_row(
            "message.broadcast",
            session=sender.row,
            data={"broadcast": dispatch.handle, "from": sender.row.handle, "scope": scope, "dry_run": dry_run, **counts},
        )
        written = [(entry, recipient, verdict) for entry, (recipient, verdict, first) in zip(report, plan) if first is None and not verdict.refused]
        if written and not dry_run:
            to = [(recipient, recipient.public_name, verdict) for _, recipient, verdict in written]
            messages = _write_messages(sender=sender, to=to, body=body, task=task_row, parent=None, now=now, broadcast=dispatch, also=[announced])
            for (entry, _, _), message in zip(written, messages, strict=True):
                entry.update(message=message.handle, id=message.pk)
        else:
            record_events([announced])
        answer = _broadcast_answer(sender, dispatch, scope, report, counts, dry_run=dry_run, request_id=request_id)
        fleet.keep_answer(dispatch, request_id, answer)
        ping("messages", "sessions", "map", "events")
    return SendResult(answer)


def _broadcast_plan(sender, recipients, body, now):
    """For each recipient, (recipient, verdict, first): the message that already went to it with
    the same text (`first`, no verdict asked), else its side's verdict. Refused whole when every
    recipient refuses it."""
    fleet.lock_inboxes(recipients)
    firsts = fleet.firsts_of_duplicates(sender.row, recipients, body, now)
    plan = [
        (recipient, None, firsts[recipient.pk]) if recipient.pk in firsts else (recipient, fleet.inbound_verdict(recipient, now), None)
        for recipient in recipients
    ]
    if all(verdict is not None and verdict.refused for _, verdict, _ in plan):
        causes = " ".join(verdict.cause for _, verdict, _ in plan)
        raise Refused(
            f"This broadcast would reach nobody: every recipient refuses it. {causes} Nothing was sent.",
            code=ErrorCode.BROADCAST_REACHES_NOBODY,
        )
    return plan


def _planned_entry(recipient, verdict, first):
    """A recipient's line of the broadcast's answer; its message is filled in once written."""
    entry = {"to": recipient.public_name, "to_handle": recipient.handle, "message": None, "id": None}
    if first is not None:
        entry.update(outcome="already sent", why=f"the same text went to it as {first.handle} moments ago; not sent twice.")
        entry.update(message=first.handle, id=first.pk)
    elif verdict.refused:
        entry.update(outcome="refused", why=verdict.why)
    else:
        status = verdict.why if verdict.state == SessionMessage.State.HELD else reachability(recipient)
        entry.update(outcome=_outcome(verdict, recipient), why=status)
    return entry


def _broadcast_answer(sender, dispatch, scope, report, counts, *, dry_run, request_id):
    return {
        "broadcast": None if dry_run else dispatch.handle,
        "dry_run": dry_run,
        "scope": scope,
        "sender": sender.name,
        "sender_verified": sender.verified,
        "recipients": report,
        "counts": counts,
        "status": _broadcast_status(report, dry_run),
        "note": unverified_note(sender.verified),
        "request_id": request_id or None,
        "retry": "A dry run writes nothing but uses a rate slot; request_id is not kept for it." if dry_run else retry_note(request_id),
        "repeat": False,
    }


def _broadcast_status(report, dry_run):
    written = sum(1 for e in report if e["message"] and e["outcome"] != "already sent")
    parts = [f"{n} {outcome}" for outcome in BROADCAST_OUTCOMES if (n := sum(1 for e in report if e["outcome"] == outcome))]
    if dry_run:
        return f"Dry run, nothing sent: it would reach {len(report)} sessions ({', '.join(parts)})."
    return f"Sent to {written} of {len(report)} sessions ({', '.join(parts)}); each recipient's line says when it arrives."


def _ack_proof(row, hook_session, process=""):
    """The ack rule (docs/rules.md §4.4): (may the caller mark the row's mail read, is the mark verified).

    A row with an exact link, live or ended, needs that link's id: an ended link counts,
    because that session may come back and must then get what was not read in its name.
    While the row is live, only its live link's id proves it, as for a send (§4.2): an old
    id left behind by a restart does not; and a live link a running process proves needs that
    process's proof too (identity.access_link, docs/rules.md §1.5). A row that never linked
    itself cannot prove anything, so anyone naming it may mark its mail, and the mark says so."""
    exact = [link for link in row.newest_links() if link.exact]
    live = [link for link in exact if link.live]
    proving = {link.hook_session: link for link in live or exact}
    if proving:
        link = proving.get(hook_session)
        if link is None:
            return False, True
        try:
            identity.access_link(link, process)
        except identity.AnotherProcess:
            return False, True
        return True, True
    return True, False


def check_mail_reader(row, hook_session, process=""):
    """Who may list a row's mail (docs/rules.md §4.4): the ack rule's proof. A row with an exact
    link is listed only for the session that link proves (or for the owner, whom the route
    lets through before asking); a row that never linked itself, for anyone naming it."""
    proven, _ = _ack_proof(row, hook_session, process)
    if not proven:
        raise Refused(
            f'"{row.public_name}" has an exact hook link: its mail is listed for that session alone (the MCP server '
            "fills in your hook_session to prove it) and for the owner. List your own mail: pass your own name in session.",
            code=ErrorCode.READ_NOT_PROVEN,
        )


def access_reader(claim, process=""):
    """Whose mail the caller marks read, by the ack rule; refused when it cannot prove it."""
    if claim.name is not None:
        row = resolve_one(claim.name, what="session")
    elif claim.link is not None:
        row = claim.link.session
    else:
        raise InvalidInput("Say whose mail is read: pass session (your name) and hook_session.")
    proven, verified = _ack_proof(row, claim.hook_session, process)
    if not proven:
        raise Refused(
            f'"{row.public_name}" has an exact hook link: acknowledge with its hook_session '
            "(your CLAUDE_CODE_SESSION_ID), so its mail is not marked read in its name by someone else.",
            code=ErrorCode.ACK_NOT_PROVEN,
        )
    return Caller(row, row.public_name, verified)


def _unread_mail(recipient_id, *, delivered_only):
    """What an ack without message_id marks: the caller's unread relaybay messages, those
    delivered to it when its proof holds (`delivered_only`), else every one."""
    unread = SessionMessage.objects.filter(recipient_id=recipient_id, read_at=None, channel=SessionMessage.Channel.MCP)
    return list(unread.exclude(delivered_at=None) if delivered_only else unread)


def _mark_read(messages, *, reader, verified):
    """Mark `messages` read, skipping any read already, and write a message.read feed row for
    each one marked: three statements however many there are. The unread ones are locked as
    they are read, so a concurrent ack of the same mail waits and then finds them read."""
    if not messages:
        return 0
    unread = SessionMessage.objects.filter(pk__in=[message.pk for message in messages], read_at=None)
    locked = set(unread.select_for_update().values_list("pk", flat=True))
    marked = [message for message in messages if message.pk in locked]
    if not marked:
        return 0
    unread.filter(pk__in=locked).update(read_at=timezone.now(), read_verified=verified)
    record_events(
        [
            feed_row(
                "message.read",
                session=reader,
                data={"message": message.pk, "from": message.sender_name, "to": message.recipient_name, "verified": verified},
            )
            for message in marked
        ]
    )
    ping("messages", "sessions")
    return len(marked)


@dataclass
class AckResult:
    session: Session
    marked: int
    verified: bool


def do_ack_messages(*, message_id=None, session=None, session_title=None, hook_session=None, process=""):
    with transaction.atomic():
        reader = access_reader(claim_of(session=session, session_title=session_title, hook_session=hook_session), process)
        row, verified = reader.row, reader.verified
        if message_id not in (None, ""):
            message = reads.get_message(message_id)
            if message.recipient_id != row.pk:
                raise Refused(f"M-{message.pk} is not addressed to {row.handle}; you can only acknowledge your own mail.", code=ErrorCode.NOT_YOUR_MAIL)
            messages = [message]
        else:
            messages = _unread_mail(row.pk, delivered_only=verified)
        marked = _mark_read(messages, reader=row, verified=verified)
    return AckResult(row, marked, verified)


def do_link_session(*, hook_session, session=None, session_title=None, process=""):
    """Link the caller's hook session to a name (docs/rules.md §1.3); `process`, the caller's proof,
    lets a running session move its own link, and its row with it, to the name."""
    hook = (hook_session or "").strip()
    if not hook:
        raise InvalidInput("Pass hook_session: your CLAUDE_CODE_SESSION_ID.")
    with transaction.atomic():
        link = directory.link_of(hook)
        if link is None:
            raise NotFound(
                f"relaybay has seen no hook events from hook session {hook}, so there is nothing to link. "
                "Check the id (CLAUDE_CODE_SESSION_ID) and that relaybay's hooks are configured (python manage.py claude_config)."
            )
        if not link.live:
            raise Refused(f"Hook session {hook} has ended; link the hook session you are running in now.", code=ErrorCode.HOOK_ENDED)
        name = directory.check_name(session if session is not None else session_title, what="session")
        if name is None:
            raise InvalidInput("Pass session (or session_title): the name to link this hook session to.")
        row, _ = do_take_name(name, hook, kind=Session.Kind.MCP)
        result = do_link_hook_session(row, hook, process=process)
    return result


def do_mark_inbox_seen(*, message):
    with transaction.atomic():
        SessionMessage.objects.filter(pk=message.pk).update(owner_seen_at=timezone.now())
        record_event("message.owner_seen", session=message.recipient, data={"message": message.pk})
        ping("inbox", "messages")
    message.refresh_from_db()
    return message


@dataclass
class DecideResult:
    message: SessionMessage
    decided: bool
    sentence: str


def do_decide_held_message(*, message, deliver):
    """The owner delivers or denies a held message, while it is held and not expired."""
    now = timezone.now()
    State = SessionMessage.State
    with transaction.atomic():
        target = State.SENT if deliver else State.DENIED
        reason = reachability(message.recipient) if (deliver and message.recipient) else ""
        held = SessionMessage.objects.filter(pk=message.pk, channel=SessionMessage.Channel.MCP, state=State.HELD)
        decided = held.filter(held_until__gt=now).update(
            state=target, not_delivered_reason=reason
        )
        if decided:
            name = "message.released" if deliver else "message.denied"
            record_event(name, session=message.recipient, data={"message": message.pk, "from": message.sender_name, "to": message.recipient_name})
            if deliver and message.recipient is not None:
                wake_session(message.recipient)
        else:
            # Past its time it is expired, and says so from now on.
            held.filter(held_until__lte=now).update(state=State.EXPIRED)
        ping("inbox", "messages", "sessions")
    message.refresh_from_db()
    if decided:
        sentence = f"M-{message.pk} delivered: it reaches {message.recipient_name} at its next hook." if deliver else f"M-{message.pk} denied."
    else:
        sentence = f"M-{message.pk} is {formatting.message_mark(message, now)}, not held: nothing changed."
    return DecideResult(message, bool(decided), sentence)

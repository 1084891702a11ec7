"""The rules a fleet of sessions adds to a send (docs/rules.md §4.8): rate slots (per proven process), request ids, dedupe,
the recipient's inbound policy and its unread cap. The send and broadcast actions call these
inside their transaction, once the sender's sends take turns on every process (serialize_on);
the recipient's inbox is locked too before its cap is judged.

Each check reads the database, never one process's memory: two repeats arriving at two
processes at the same moment see each other's committed rows.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import Q

from core.errors import ErrorCode, InvalidInput, RateLimited
from sessions_app import directory
from sessions_app.models import Session

from .models import Dispatch, SessionMessage


def check_rate(process, now):
    """One slot per accepted call (a broadcast or a dry run is one call, whatever its fan-out),
    counted per proven process (`Caller.process`), never per name: a sender taking name after
    name keeps its one budget, and every sender no live link proves ("") shares one."""
    directory.serialize_on("rate", process)
    limit = settings.RELAYBAY_SENDS_PER_MINUTE
    recent = _slots_taken(process, now - timedelta(minutes=1))
    if len(recent) >= limit:
        wait = max(1, int((recent[0] + timedelta(minutes=1) - now).total_seconds() + 0.999))
        whose = (
            "You sent"
            if process
            else "Senders whose name no live hook link proves share one budget, and together they sent"
        )
        raise RateLimited(
            f"{whose} {limit} messages or broadcasts in the last minute, the limit. Nothing was sent. "
            f"Wait {wait} s before sending again."
        )


def _slots_taken(process, since):
    """When the process's calls since `since` were accepted, oldest first, up to the limit."""
    window = Dispatch.objects.filter(process=process, created_at__gt=since)
    return list(window.order_by("created_at").values_list("created_at", flat=True)[: settings.RELAYBAY_SENDS_PER_MINUTE])


def clean_request_id(request_id):
    request_id = (request_id or "").strip() if isinstance(request_id, str) else request_id
    if request_id in (None, ""):
        return ""
    if not isinstance(request_id, str) or len(request_id) > 200 or any(ch in request_id for ch in "\r\n"):
        raise InvalidInput("request_id must be one line of at most 200 characters, like a UUID you made for this call.")
    return request_id


def earlier_answer(sender_row, request_id, now):
    """The answer a call with this request_id already got from this sender, or None. Past the
    window the id is free again: its old row gives it up."""
    if not request_id:
        return None
    found = Dispatch.objects.filter(sender=sender_row, request_id=request_id).first()
    if found is None:
        return None
    if found.created_at <= now - timedelta(hours=settings.RELAYBAY_REQUEST_ID_HOURS):
        Dispatch.objects.filter(pk=found.pk, request_id=request_id).update(request_id="")
        return None
    return {**found.answer, "repeat": True}


def keep_answer(dispatch, request_id, answer):
    """What a repeat of this request_id gets back (earlier_answer); without one there is no
    repeat to answer, so nothing is kept."""
    if request_id:
        Dispatch.objects.filter(pk=dispatch.pk).update(answer=answer)


def record_dispatch(sender, kind, request_id, now):
    """The accepted call's row: its rate slot (by the caller's process) and its request id."""
    return Dispatch.objects.create(sender=sender.row, process=sender.process, kind=kind, request_id=request_id, created_at=now)


def first_of_duplicate(sender_row, recipient, body, now):
    """The same body from the same sender to the same recipient within the dedupe window."""
    return firsts_of_duplicates(sender_row, [recipient], body, now).get(recipient.pk)


def firsts_of_duplicates(sender_row, recipients, body, now):
    """first_of_duplicate for each of a broadcast's recipients, in one statement: {recipient id: message}."""
    same = SessionMessage.objects.filter(
        sender_id=sender_row.pk,
        recipient_id__in=[row.pk for row in recipients],
        created_at__gt=now - timedelta(seconds=settings.RELAYBAY_DEDUPE_SECONDS),
        body=body,
        channel=SessionMessage.Channel.MCP,
    )
    firsts = {}
    for message in same.order_by("id"):  # oldest first
        firsts.setdefault(message.recipient_id, message)
    return firsts


def lock_inboxes(recipients):
    """Sends to one recipient take turns while its cap is judged; in id order, so two
    broadcasts to overlapping sets never wait on each other in a circle."""
    for pk in sorted({row.pk for row in recipients}):
        directory.serialize_on("inbox", str(pk))


def waiting_for(recipient_id, now):
    """Messages from sessions waiting for the recipient through relaybay: not delivered, not
    read, not decided against (denied or expired). Comments are another table: they never
    count; Claude Code delivers native messages itself."""
    live = Q(state=SessionMessage.State.SENT) | Q(state=SessionMessage.State.HELD, held_until__gt=now)
    return SessionMessage.objects.filter(live, recipient_id=recipient_id, delivered_at=None, read_at=None, channel=SessionMessage.Channel.MCP)


def _waiting_up_to_cap(recipient_id, now):
    """The ids of the messages waiting for the recipient, up to its unread cap."""
    return list(waiting_for(recipient_id, now).values_list("pk", flat=True)[: settings.RELAYBAY_UNREAD_CAP])


@dataclass
class Verdict:
    """What the recipient's side decides about a message to it: send, hold, or refuse. `why`:
    the sentence the sender reads; for a refusal, `cause` is its first part, what is true of the
    recipient (a broadcast refused by every recipient lists those)."""

    state: str | None
    why: str = ""
    code: str | None = None
    cause: str = ""

    @property
    def refused(self):
        return self.state is None


def inbound_verdict(recipient, now):
    """The recipient's inbound policy, then its unread cap. Call with its inbox locked."""
    name = f'"{recipient.public_name}" ({recipient.handle})'
    if recipient.inbound == Session.Inbound.REFUSE:
        cause = f"{name} refuses messages from other sessions: its owner set it so."
        return Verdict(
            None,
            f"{cause} Nothing was sent. Do not retry; carry on without it, or tell the owner in your own output.",
            ErrorCode.INBOUND_REFUSED,
            cause,
        )
    cap = settings.RELAYBAY_UNREAD_CAP
    if len(_waiting_up_to_cap(recipient.pk, now)) >= cap:
        cause = f"{name} already has {cap} messages from sessions waiting undelivered, the limit."
        return Verdict(
            None,
            f"{cause} Nothing was sent. Wait until it has taken some in (messages_list box=sent shows when yours "
            "are delivered), then send one message that says it all.",
            ErrorCode.UNREAD_CAP,
            cause,
        )
    if recipient.inbound == Session.Inbound.HOLD:
        hours = settings.RELAYBAY_HOLD_HOURS
        return Verdict(
            SessionMessage.State.HELD,
            f"Held: {name} holds messages from other sessions until its owner delivers or denies them "
            f"(a held message expires after {hours} h). messages_list box=sent shows what became of it.",
        )
    return Verdict(SessionMessage.State.SENT)


def hold_expiry(now):
    return now + timedelta(hours=settings.RELAYBAY_HOLD_HOURS)

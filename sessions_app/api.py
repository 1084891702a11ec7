import asyncio
import logging
import uuid
from datetime import datetime

from channels.layers import get_channel_layer
from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponse
from ninja import Router, Status
from redis.exceptions import TimeoutError as ChannelLayerTimeout

from core import inputs, pings
from core.auth import AgentAuth, AsyncAgentAuth, AsyncOwnerAuth, OwnerAuth, acredential_of
from core.dbthreads import threads as db_threads
from core.errors import InvalidInput
from core.pings import RELAYABLE_GROUP, RELAYABLE_TYPES, wait_group

from . import actions, directory
from .hooks import delivery, refusals
from .hooks.ingest import IDENTIFIERS, ingest_hook
from .schemas import ERRORS, DesktopEdgeIn, DesktopEdgeOut, DesktopIn, DesktopOut, Error, HookIn, InboundIn, InboundOut, RelayIn, WaitOut

router = Router(tags=["hooks and sessions"])
HOOK_BODY = HookIn.model_json_schema()


logger = logging.getLogger("relaybay")

# The command-hook client's side of delivery (docs/rules.md §2.6, docs/hook-client.md): it says
# it confirms what it prints, reports what it printed with its next calls, and hears which
# items an answer carries and which reports relaybay has taken.
CONFIRMING_HEADER = "X-Relaybay-Confirming"
PRINTED_HEADER = "X-Relaybay-Printed"
NOTICE_HEADER = "X-Relaybay-Notice"
ITEMS_HEADER = "X-Relaybay-Items"
CONFIRMED_HEADER = "X-Relaybay-Confirmed"


def _count_refused():
    """Tally a refused call for the board's warning. The tally is a side note: a database that
    cannot take it (locked, down) never turns the caller's 401 into a 503."""
    count = refusals.note_refused()
    if not count:
        return
    try:
        actions.do_count_refused_hooks(count=count)
    except DatabaseError as error:
        logger.warning("%d refused hook call(s) not counted: %s", count, error)


class HookAuth(AgentAuth):
    """The agents' token check of the hook route, which also counts a refused call for the
    board's warning (sessions connected with an old token)."""

    def __call__(self, request):
        checked = super().__call__(request)
        if checked is None:
            _count_refused()
        return checked


class AsyncHookAuth(AsyncAgentAuth):
    """The same for the wake-up long poll, an `async def` route."""

    def __call__(self, request):
        checked = super().__call__(request)
        return self._refused() if checked is None else checked

    async def authenticate(self, request, token):
        return await acredential_of(token) or await self._refused()

    async def _refused(self):
        await db_threads.run(_count_refused)


def _spooled_at(request):
    value = request.headers.get("X-Relaybay-Spooled-At")
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


@router.post(
    "/hooks",
    response={200: dict, **ERRORS},
    auth=HookAuth(),
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": HOOK_BODY}}}},
    summary="Post one Claude Code hook event",
    description="Takes the hook payload exactly as Claude Code sends it and returns the hook answer JSON. "
    "Header `X-Relaybay-Replay: 1` marks an event replayed from the hook client's spool: recorded, answered `{}`. "
    "Header `X-Relaybay-Process` carries the proof of the Claude Code process (a digest of its messaging token): "
    "relaybay's http MCP server then knows this hook session speaks for calls with the same proof. "
    "`X-Relaybay-Confirming: 1` says the client confirms what it prints: the items an answer carries (named in "
    "the answer's `X-Relaybay-Items`) stay offered until a later call reports them in `X-Relaybay-Printed` "
    "(`C-12 M-40`); the answer's `X-Relaybay-Confirmed` names the reports taken. `X-Relaybay-Notice` carries what the "
    "hook client told the person about itself (its spool set aside, another account on relaybay's address): recorded "
    "as the session's `hook.client_notice` event.",
)
def post_hook(request, response: HttpResponse):
    payload = inputs.read_json_body(request, what="The hook payload")
    replay = request.headers.get("X-Relaybay-Replay") == "1"
    process = directory.caller_process(request)
    if not replay:
        _take_report(request, response, payload, process)
    answer = ingest_hook(
        payload,
        replay=replay,
        spooled_at=_spooled_at(request) if replay else None,
        process=process,
        confirming=not replay and request.headers.get(CONFIRMING_HEADER) == "1",
    )
    _name_items(response, getattr(answer, "carried", ()))
    notice = request.headers.get(NOTICE_HEADER)
    hook_session = payload.get("session_id") if isinstance(payload, dict) else None
    if notice and not replay and isinstance(hook_session, str) and inputs.is_identifier_text(hook_session):
        actions.do_note_client_notice(hook_session=hook_session, text=notice)
    return answer


def _take_report(request, response, payload, process):
    """Confirm what the session's hook client printed (before this call claims anything, so
    none of it is offered again here)."""
    report = request.headers.get(PRINTED_HEADER)
    hook_session = payload.get("session_id") if isinstance(payload, dict) else None
    if not report or not isinstance(hook_session, str) or not hook_session.strip():
        return
    inputs.check_identifier(hook_session, what="hook payload's session_id", max_length=IDENTIFIERS["session_id"])
    taken = delivery.do_confirm_printed(hook_session, report, process)
    if taken:
        response.headers[CONFIRMED_HEADER] = " ".join(taken)


def _name_items(response, handles):
    if handles:
        response.headers[ITEMS_HEADER] = " ".join(handles)


@router.get(
    "/hooks/wait",
    response={200: WaitOut, **ERRORS},
    auth=AsyncHookAuth(),
    summary="Wake-up long poll for an idle session",
    description="Used by the asyncRewake Stop hook. Answers `delivered` with the text to wake the model with, "
    "`timeout` when nothing arrived in `timeout` seconds, or `replaced` when a newer waiter took over "
    "or the session ended; with `nudge=true` (Codex CLI's waiter, which wakes its session with a fixed prompt) "
    "`pending` when mail waits, left for the woken turn's hooks to deliver. `last=true` on the hook's final poll (its bound reached): when it times out, "
    "the session is no longer reported as being woken. The confirmation headers are those of `POST /hooks`.",
)
async def wait_for_delivery(
    request, response: HttpResponse, session_id: inputs.Name, timeout: float = 50, last: bool = False, nudge: bool = False
):
    timeout = max(0.0, min(timeout, settings.RELAYBAY_MAX_WAIT))
    waiter = uuid.uuid4().hex
    process = directory.caller_process(request)
    confirming = request.headers.get(CONFIRMING_HEADER) == "1"
    report = request.headers.get(PRINTED_HEADER)
    if report:
        inputs.check_identifier(session_id, what="session_id", max_length=IDENTIFIERS["session_id"])
        taken = await db_threads.run(delivery.do_confirm_printed, session_id, report, process)
        if taken:
            response.headers[CONFIRMED_HEADER] = " ".join(taken)
    if not await db_threads.run(delivery.do_register_waiter, session_id, waiter, process):
        return {"status": delivery.WAKE_REPLACED}

    async def check():
        outcome = await db_threads.run(lambda: delivery.do_claim_for_waiter(session_id, waiter, confirming=confirming, nudge=nudge))
        if outcome == delivery.WAKE_REPLACED:
            return {"status": "replaced"}
        if outcome == delivery.WAKE_PENDING:
            return {"status": "pending"}
        if outcome:
            _name_items(response, outcome.handles())
            return {"status": "delivered", "text": outcome.text()}
        return None

    # What waits already is handed over without the channel layer.
    answered = await check()
    if answered:
        return answered
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = wait_group(session_id)
    try:
        # Nothing waits on a channel layer that does not answer (docs/rules.md §2.7).
        await asyncio.wait_for(layer.group_add(group, channel), pings.SEND_BOUND)
    except Exception as error:
        # No channel layer (Redis down or paused): nobody will wait, so no waiter stays
        # registered to tell senders the session is being woken. The error answers 503
        # (core/api.py); the hook client tries again within its bound.
        await db_threads.run(delivery.do_forget_waiter, session_id, waiter)
        if isinstance(error, asyncio.TimeoutError):
            raise ChannelLayerTimeout(f"no answer within {pings.SEND_BOUND:g} s") from None
        raise
    try:
        pings.outbox().post(group, {"type": "replaced", "waiter": waiter})
        answered = await _woken(layer, channel, waiter, check, timeout)
        if answered:
            return answered
        # The hook's last poll (its bound reached) leaves nobody waiting: senders are told so.
        if last:
            await db_threads.run(delivery.do_forget_waiter, session_id, waiter)
        return {"status": "timeout"}
    finally:
        # Redis gone or paused: the group entry expires on its own.
        pings.in_background(layer.group_discard(group, channel))


async def _woken(layer, channel, waiter, check, timeout):
    """`check`'s answer once a wake on `channel` brings something within `timeout` seconds,
    else None. It checks first (something may have arrived between the first check and the
    joining of the group), on each wake, and once more at the end, for a write no wake reached."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    answered = await check()
    while not answered:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return None
        try:
            message = await asyncio.wait_for(layer.receive(channel), remaining)
        except asyncio.TimeoutError:
            return await check()
        # A "replaced" from another waiter may be older than ours (two waiters registering at
        # once on two processes): the database's current waiter decides, in the check.
        if not (message.get("type") == "replaced" and message.get("waiter") == waiter):
            answered = await check()
    return answered


@router.post(
    "/relay",
    response={204: None, **ERRORS, 403: Error},
    auth=AsyncOwnerAuth(),
    summary="Pass a refresh ping or wake from another process to this one's channel layer",
    description="Used by management commands when relaybay runs on the in-memory channel layer. The owner token only.",
)
async def relay(request, data: RelayIn):
    if not RELAYABLE_GROUP.match(data.group) or data.message.get("type") not in RELAYABLE_TYPES:
        raise InvalidInput("Only board pings and wake-ups can be relayed.")
    await get_channel_layer().group_send(data.group, inputs.clean_json(data.message))
    return Status(204, None)


@router.post("/desktop", response={200: DesktopOut, **ERRORS, 409: Error}, auth=AgentAuth(), summary="Register or update a desktop session")
def register_desktop(request, data: DesktopIn):
    result = actions.do_register_desktop(**data.dict())
    return {"created": result.created, "session": directory.session_summary(result.session)}


@router.post(
    "/desktop/edge",
    response={200: DesktopEdgeOut, **ERRORS, 404: Error, 409: Error},
    auth=AgentAuth(),
    summary="Record a desktop-side message edge (never its text)",
)
def record_desktop_edge(request, data: DesktopEdgeIn):
    sender = directory.resolve_one(data.sender, what="sender")
    recipient = directory.resolve_one(data.recipient, what="recipient")
    event = actions.do_record_desktop_edge(sender=sender, recipient=recipient)
    return {"event_id": event.pk, "sender": sender.handle, "recipient": recipient.handle}


@router.post(
    "/sessions/{handle}/inbound",
    response={200: InboundOut, **ERRORS, 403: Error, 404: Error, 409: Error},
    auth=OwnerAuth(),
    summary="Set what happens to messages from other sessions to one session",
    description="The owner's choice, as on the board: the owner token only.",
)
def set_inbound(request, handle: inputs.Name, data: InboundIn):
    session = directory.resolve_one(handle, what="session")
    changed = actions.do_set_inbound_policy(session=session, policy=data.policy)
    return {"session": session.handle, "policy": data.policy, "changed": bool(changed)}

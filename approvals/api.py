"""The owner's approvals API (SPEC §4.14, docs/rules.md §8) and the long poll of the hook that
waits for the owner's answer."""

import asyncio

from channels.layers import get_channel_layer
from django.conf import settings
from django.utils import timezone
from ninja import Router

from core import pings
from core.auth import AgentAuth, AsyncAgentAuth, OwnerAuth
from core.dbthreads import threads as db_threads
from sessions_app.directory import caller_process

from . import actions, lib
from .models import Request
from .schemas import ERRORS, AnswerOut, DecidedOut, DecisionIn, Error, NotPendingOut, RequestsOut

router = Router(tags=["needs you"])
# The waiting hook checks the database at least this often: a decision whose wake the channel
# layer lost, and an expiry, reach it within this.
RECHECK_SECONDS = 5.0


@router.get("/approvals", response={200: RequestsOut, **ERRORS, 403: Error}, auth=OwnerAuth(), summary="What sessions wait on the owner for")
def list_requests(request):
    now = timezone.now()
    return {"pending": [lib.as_api(r, now) for r in lib.waiting(now)], "recent": [lib.as_api(r, now) for r in lib.recent(now)]}


@router.post(
    "/approvals/{pk}",
    response={200: DecidedOut, **ERRORS, 403: Error, 404: Error, 409: NotPendingOut},
    auth=OwnerAuth(),
    summary="Answer a permission request",
    description="Allow once, allow for the rest of the session, or deny with a message to the model. "
    "First answer wins: a request no longer pending answers 409 with its state.",
)
def decide_request(request, pk: int, data: DecisionIn):
    allow = data.decision == "allow"
    actions.do_decide_request(pk=pk, allow=allow, scope=data.scope, message=data.message, by="owner (API)")
    return {"id": pk, "state": Request.State.ALLOWED if allow else Request.State.DENIED}


@router.post(
    "/approvals/{pk}/withdrawn",
    response={200: AnswerOut, 403: Error, 404: Error, **ERRORS},
    auth=AgentAuth(),
    summary="The hook holding a permission request was ended by its CLI",
    description="The hook client says so when Claude Code stops it (the person answered No or Esc in the "
    "terminal): the request is answered in the terminal. One no longer pending is left as it is.",
)
def withdraw_request(request, pk: int):
    lib.access_request(pk=pk, process=caller_process(request))
    actions.do_withdraw_request(pk=pk)
    found = Request.objects.filter(pk=pk).first()
    return {"state": found.state if found else "gone"}


@router.get(
    "/approvals/{pk}/wait",
    response={200: AnswerOut, 403: Error, 404: Error, **ERRORS},
    auth=AsyncAgentAuth(),
    summary="Long poll of the hook that holds a permission request open",
    description="Answers when the request is settled, with the hook answer to print (none when it was answered "
    "in the terminal), or `pending` after `timeout` seconds: the hook client polls again.",
)
async def wait_for_answer(request, pk: int, timeout: float = 50):
    timeout = max(0.0, min(timeout, settings.RELAYBAY_MAX_WAIT))
    process = caller_process(request)
    await db_threads.run(lambda: lib.access_request(pk=pk, process=process))

    async def check():
        return await db_threads.run(lambda: actions.do_take_answer(pk=pk))

    taken = await check()
    if taken.state != Request.State.PENDING:
        return taken
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = actions.request_group(pk)
    try:
        await asyncio.wait_for(layer.group_add(group, channel), pings.SEND_BOUND)
        joined = True
    except Exception:  # noqa: BLE001 - no channel layer: the database is checked each second
        joined = False
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        taken = await check()
        while taken.state == Request.State.PENDING:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return taken
            pause = min(remaining, RECHECK_SECONDS if joined else 1.0)
            if joined:
                try:
                    await asyncio.wait_for(layer.receive(channel), pause)
                except asyncio.TimeoutError:
                    pass
            else:
                await asyncio.sleep(pause)
            taken = await check()
        return taken
    finally:
        if joined:
            pings.in_background(layer.group_discard(group, channel))

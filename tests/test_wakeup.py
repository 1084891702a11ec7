"""The wake-up long poll: GET /api/hooks/wait, woken through the channel layer (docs/rules.md §2.2)."""

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django import db
from django.test import AsyncClient

from sessions_app.actions import do_write_comment
from sessions_app.hooks.ingest import ingest_hook
from sessions_app.models import Comment, HookLink, Session

from .conftest import OWNER_TOKEN, TOKEN

pytestmark = pytest.mark.django_db(transaction=True)

PROOF_A, PROOF_B = "a" * 64, "b" * 64


def in_thread(fn):
    # Not thread-sensitive: the test's own database calls must not queue behind the
    # long poll the test client is running. The thread's connection closes after each call,
    # as a request's would, so none outlives the test database.
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        finally:
            db.connection.close()

    return sync_to_async(call, thread_sensitive=False)


async def wait(session_id, timeout=5, *, proof="", **params):
    headers = {"Authorization": f"Bearer {TOKEN}", **({"X-Relaybay-Process": proof} if proof else {})}
    response = await AsyncClient().get("/api/hooks/wait", {"session_id": session_id, "timeout": timeout, **params}, headers=headers)
    assert response.status_code == 200
    return json.loads(response.content)


@in_thread
def post(event, session_id, *, process="", **fields):
    return ingest_hook({"hook_event_name": event, "session_id": session_id, "cwd": "/p", **fields}, process=process)


@in_thread
def comment(text):
    do_write_comment(session=Session.objects.get(title="alice"), body=text)


@in_thread
def link_state():
    return HookLink.objects.values_list("state", "waiter").get(hook_session="h-a")


@pytest.fixture
async def idle_alice():
    await post("SessionStart", "h-a", relaybay_session="alice")
    await post("UserPromptSubmit", "h-a")
    await post("Stop", "h-a", stop_hook_active=False)


async def until_waiting():
    for _ in range(100):
        if (await link_state())[1]:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the waiter never registered")


async def test_a_new_comment_wakes_the_idle_session(idle_alice):
    waiter = asyncio.create_task(wait("h-a"))
    await until_waiting()
    await comment("wake up, please")
    answer = await asyncio.wait_for(waiter, 5)
    assert answer["status"] == "delivered"
    assert "wake up, please" in answer["text"] and "from the owner" in answer["text"]
    # The wake starts a new turn.
    assert (await link_state())[0] == "busy"
    assert await in_thread(Comment.objects.filter(delivered_by="wake-up via h-a").count)() == 1


async def test_a_newer_waiter_replaces_the_older_one(idle_alice):
    older = asyncio.create_task(wait("h-a"))
    await until_waiting()
    newer = asyncio.create_task(wait("h-a", timeout=1))
    assert (await asyncio.wait_for(older, 5))["status"] == "replaced"
    assert (await asyncio.wait_for(newer, 5))["status"] == "timeout"


async def test_nothing_arriving_times_out(idle_alice):
    assert (await wait("h-a", timeout=0.3))["status"] == "timeout"


async def test_an_unknown_hook_session_is_told_to_stop_waiting():
    assert (await wait("never-seen", timeout=1))["status"] == "replaced"


async def test_a_comment_for_a_busy_session_waits_for_its_next_hook(idle_alice):
    waiter = asyncio.create_task(wait("h-a", timeout=1))
    await until_waiting()
    await post("UserPromptSubmit", "h-a")
    await comment("for the busy session")
    assert (await waiter)["status"] == "timeout"
    answer = await post("PreToolUse", "h-a")
    assert "for the busy session" in answer["hookSpecificOutput"]["additionalContext"]


async def test_session_end_releases_the_waiter(idle_alice):
    waiter = asyncio.create_task(wait("h-a"))
    await until_waiting()
    await post("SessionEnd", "h-a")
    assert (await asyncio.wait_for(waiter, 5))["status"] == "replaced"


async def test_a_comment_written_before_the_waiter_joined_is_delivered_at_once(idle_alice):
    await comment("already there")
    answer = await wait("h-a", timeout=2)
    assert answer["status"] == "delivered" and "already there" in answer["text"]


async def test_a_wake_relayed_from_another_process_wakes_the_waiter(idle_alice):
    """Management commands reach the server's in-memory channel layer through /api/relay, with
    the owner token."""
    from core.pings import wait_group

    waiter = asyncio.create_task(wait("h-a"))
    await until_waiting()
    await in_thread(lambda: Comment.objects.create(session=Session.objects.get(title="alice"), session_name="alice", body="from a script"))()
    response = await AsyncClient().post(
        "/api/relay",
        {"group": wait_group("h-a"), "message": {"type": "wake"}},
        content_type="application/json",
        headers={"Authorization": f"Bearer {OWNER_TOKEN}"},
    )
    assert response.status_code == 204
    answer = await asyncio.wait_for(waiter, 5)
    assert answer["status"] == "delivered" and "from a script" in answer["text"]


async def test_the_relay_refuses_anything_but_pings_and_wakes():
    response = await AsyncClient().post(
        "/api/relay",
        {"group": "wait.not-a-hash", "message": {"type": "wake"}},
        content_type="application/json",
        headers={"Authorization": f"Bearer {OWNER_TOKEN}"},
    )
    assert response.status_code == 400


@in_thread
def waiter_of_alice():
    return HookLink.objects.values_list("waiter", "waiter_polled_at").get(hook_session="h-a")


async def test_a_waiter_carrying_another_running_process_s_proof_is_told_to_stop_waiting():
    await post("SessionStart", "h-a", relaybay_session="alice", process=PROOF_A)
    await post("Stop", "h-a", stop_hook_active=False, process=PROOF_A)
    assert (await wait("h-a", timeout=1, proof=PROOF_B))["status"] == "replaced"
    assert await waiter_of_alice() == ("", None)
    assert (await wait("h-a", timeout=0.3, proof=PROOF_A))["status"] == "timeout"


async def test_a_poll_notes_when_it_began_and_the_last_one_timing_out_leaves_nobody_waiting(idle_alice):
    assert (await wait("h-a", timeout=0.3))["status"] == "timeout"
    waiter, polled_at = await waiter_of_alice()
    assert waiter and polled_at is not None
    assert (await wait("h-a", timeout=0.3, last="true"))["status"] == "timeout"
    assert await waiter_of_alice() == ("", None)

"""The board's websocket (docs/rules.md §5.6): only the owner may listen, and every action's refresh
ping arrives after its transaction commits, naming what changed."""

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client

from messaging.actions import do_ack_messages, do_mark_inbox_seen, do_send_message
from relaybay.asgi import application
from sessions_app import actions
from sessions_app.hooks.ingest import ingest_hook
from tests.board_fixtures import make_owner, named_session
from tests.native_payloads import APPROVAL, send_post, wrapped

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def cookie_for(user):
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def board_socket(user=None, origin=b"http://127.0.0.1:8000"):
    headers = [(b"origin", origin), (b"host", b"127.0.0.1:8000")]
    if user is not None:
        session = await sync_to_async(cookie_for)(user)
        headers.append((b"cookie", f"sessionid={session}".encode()))
    return WebsocketCommunicator(application, "/ws/board/", headers=headers)


async def owner_socket():
    owner = await sync_to_async(make_owner)()
    socket = await board_socket(owner)
    connected, _ = await socket.connect()
    assert connected
    return socket


async def test_an_anonymous_visitor_is_refused():
    socket = await board_socket()
    connected, _ = await socket.connect()
    assert not connected


async def test_an_account_that_is_not_staff_is_refused():
    guest = await sync_to_async(get_user_model().objects.create_user)(username="guest", password="guest-pass-1")
    socket = await board_socket(guest)
    connected, _ = await socket.connect()
    assert not connected


async def test_a_page_from_another_site_is_refused():
    owner = await sync_to_async(make_owner)()
    socket = await board_socket(owner, origin=b"http://evil.example")
    connected, _ = await socket.connect()
    assert not connected


async def test_the_owner_hears_a_comment_being_written():
    alpha = await sync_to_async(named_session)("alpha")
    socket = await owner_socket()
    await sync_to_async(actions.do_write_comment)(session=alpha, body="hello")
    assert await socket.receive_json_from(timeout=2) == {"topics": ["comments", "sessions"]}
    await socket.disconnect()


async def test_the_owner_hears_a_message_sent_delivered_and_read():
    alpha = await sync_to_async(named_session)("alpha")
    beta = await sync_to_async(named_session)("beta")
    socket = await owner_socket()
    message = (await sync_to_async(do_send_message)(
        body="hi", to="beta", session="alpha", hook_session=alpha.hook_session
    )).message
    sent = await socket.receive_json_from(timeout=2)
    assert {"messages", "sessions", "map"} <= set(sent["topics"])

    await sync_to_async(ingest_hook)({"hook_event_name": "UserPromptSubmit", "session_id": beta.hook_session, "cwd": "/w", "prompt": "go"})
    topics = set()
    while "messages" not in topics:
        topics |= set((await socket.receive_json_from(timeout=2))["topics"])

    await sync_to_async(do_ack_messages)(message_id=message.pk, session="beta", hook_session=beta.hook_session)
    assert "messages" in (await socket.receive_json_from(timeout=2))["topics"]
    await socket.disconnect()


async def test_the_owner_hears_a_native_message_sent_held_and_delivered():
    alpha = await sync_to_async(named_session)("alpha")
    beta = await sync_to_async(named_session)("beta")
    socket = await owner_socket()
    hook = {"cwd": "/w", "hook_event_name": "PostToolUse"}
    await sync_to_async(ingest_hook)({**hook, "session_id": alpha.hook_session, **send_post(to="beta")})
    topics = set()
    while not {"messages", "map", "inbox"} <= topics:
        topics |= set((await socket.receive_json_from(timeout=2))["topics"])
    await sync_to_async(ingest_hook)({**hook, "hook_event_name": "Notification", "session_id": beta.hook_session, **APPROVAL})
    topics = set()
    while "inbox" not in topics:
        topics |= set((await socket.receive_json_from(timeout=2))["topics"])
    await sync_to_async(ingest_hook)(
        {**hook, "hook_event_name": "UserPromptSubmit", "session_id": beta.hook_session, "prompt": wrapped()}
    )
    topics = set()
    while not {"messages", "inbox"} <= topics:
        topics |= set((await socket.receive_json_from(timeout=2))["topics"])
    await socket.disconnect()


async def test_the_owner_hears_an_inbox_item_marked_seen():
    alpha = await sync_to_async(named_session)("alpha")
    await sync_to_async(named_session)("beta")
    message = (await sync_to_async(do_send_message)(body="x", to="beta", session="alpha", hook_session=alpha.hook_session)).message
    socket = await owner_socket()
    await sync_to_async(do_mark_inbox_seen)(message=message)
    assert {"inbox", "messages"} <= set((await socket.receive_json_from(timeout=2))["topics"])
    await socket.disconnect()


async def test_the_ping_waits_for_the_commit_and_a_rolled_back_write_sends_none():
    alpha = await sync_to_async(named_session)("alpha")
    socket = await owner_socket()

    def write_then_roll_back():
        with pytest.raises(RuntimeError), transaction.atomic():
            actions.do_write_comment(session=alpha, body="never")
            raise RuntimeError("rolled back")

    await sync_to_async(write_then_roll_back)()
    assert await socket.receive_nothing(timeout=0.3)

    def write_inside_a_longer_transaction(seen):
        with transaction.atomic():
            actions.do_write_comment(session=alpha, body="later")
            seen.append(True)

    seen = []
    await sync_to_async(write_inside_a_longer_transaction)(seen)
    assert seen and await socket.receive_json_from(timeout=2) == {"topics": ["comments", "sessions"]}
    await socket.disconnect()


async def board_members(layer):
    """The channels in the board group: the in-memory layer's dict, or the Redis sorted set
    channels_redis keeps (scale-out pass)."""
    if hasattr(layer, "groups"):
        return set(layer.groups.get("board", {}))
    connection = layer.connection(layer.consistent_hash("board"))
    return set(await connection.zrange(layer._group_key("board"), 0, -1))


async def test_a_closed_page_leaves_the_group():
    layer = get_channel_layer()
    before = await board_members(layer)
    socket = await owner_socket()
    assert len(await board_members(layer) - before) == 1
    await socket.disconnect()
    assert await board_members(layer) == before


@pytest.mark.parametrize("frame", [{"text_data": "not json {"}, {"text_data": '{"topics": 1}'}, {"bytes_data": b"\xff\x00"}])
async def test_a_frame_from_the_owners_page_is_ignored_and_the_socket_stays_open(frame):
    # The board only listens; whatever a page sends must not close it (1011) or reach anything.
    alpha = await sync_to_async(named_session)("alpha")
    socket = await owner_socket()
    await socket.send_to(**frame)
    assert await socket.receive_nothing(timeout=0.2)
    await sync_to_async(actions.do_write_comment)(session=alpha, body="hello")
    assert await socket.receive_json_from(timeout=2) == {"topics": ["comments", "sessions"]}
    await socket.disconnect()

"""Where the hot API routes do their database work under the ASGI server: long-lived
database threads (relaybay/dbthreads.py)."""

import asyncio
import json
import threading

import pytest
from channels.layers import get_channel_layer
from django import db
from django.test import AsyncClient

from relaybay import dbthreads
from relaybay.events import send_to_group
from sessions_app.models import Event

from .conftest import TOKEN

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def db_threads(settings, monkeypatch):
    """Database threads as relaybay.asgi sets them up, with a pool of its own for this test."""
    settings.RELAYBAY_DB_THREADS = 1
    monkeypatch.setattr(dbthreads, "_enabled", True)
    monkeypatch.setattr(dbthreads, "_executor", None)
    yield
    if dbthreads._executor is not None:
        dbthreads._executor.submit(lambda: db.connection.close()).result()
        dbthreads._executor.shutdown()


def where():
    return threading.current_thread().name, db.connection.connection


def open_connection():
    db.connection.ensure_connection()
    return where()


async def test_database_steps_run_on_one_long_lived_thread(db_threads):
    first, connection = await dbthreads.run(open_connection)
    second, kept = await dbthreads.run(where)
    assert first == second and first.startswith("relaybay-db")
    assert first != threading.current_thread().name
    if db.connection.vendor == "sqlite":
        assert kept is connection is not None  # the connection serves the next request
    else:
        assert kept is None  # back in the pool after each step; checked again on checkout


async def test_a_database_error_drops_the_db_threads_connection(db_threads):
    def fails():
        db.connection.ensure_connection()
        raise db.OperationalError("server closed the connection unexpectedly")

    with pytest.raises(db.OperationalError):
        await dbthreads.run(fails)
    _, connection = await dbthreads.run(where)
    assert connection is None


async def test_pings_from_a_database_thread_go_to_the_servers_loop_without_waiting(db_threads, monkeypatch):
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("board", channel)
    released = asyncio.Event()
    loops = []
    group_send = layer.group_send

    async def held_send(group, message):
        # The send waits until the database step has returned: a step that waited for its
        # sends would never return.
        loops.append(asyncio.get_running_loop())
        await released.wait()
        await group_send(group, message)

    monkeypatch.setattr(layer, "group_send", held_send)
    try:
        await asyncio.wait_for(dbthreads.run(send_to_group, "board", {"type": "board.ping", "topics": ["sessions"]}), 5)
        released.set()
        assert await asyncio.wait_for(layer.receive(channel), 5) == {"type": "board.ping", "topics": ["sessions"]}
        assert loops == [asyncio.get_running_loop()]  # sent by the server's own event loop
    finally:
        await layer.group_discard("board", channel)


async def test_a_hook_posted_to_the_server_is_recorded_and_pings_the_board(db_threads):
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("board", channel)
    try:
        response = await AsyncClient().post(
            "/api/hooks",
            json.dumps({"session_id": "h-runner", "hook_event_name": "UserPromptSubmit", "cwd": "/p", "prompt": "hi"}),
            content_type="application/json",
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert response.status_code == 200
        assert json.loads(response.content) == {}
        ping = await asyncio.wait_for(layer.receive(channel), 5)
        assert "sessions" in ping["topics"]
    finally:
        await layer.group_discard("board", channel)
    recorded = Event.objects.filter(hook_session="h-runner", name="hook.UserPromptSubmit")
    assert await dbthreads.run(recorded.exists)


async def test_without_a_long_lived_loop_steps_run_on_the_request_thread(settings, monkeypatch):
    # Django's WSGI handler gives each async view a loop that ends with the request: a send
    # handed to it could be cancelled, so nothing runs on database threads there.
    settings.RELAYBAY_DB_THREADS = 1
    monkeypatch.setattr(dbthreads, "_enabled", False)
    name, _ = await dbthreads.run(where)
    assert not name.startswith("relaybay-db")


async def test_mcp_operations_run_on_the_database_threads_and_ping_after_commit(db_threads, monkeypatch):
    from messaging import lib as messaging_lib
    from sessions_app.hooks.ingest import ingest_hook

    for hook, name in (("h-tx", "db-tx"), ("h-rx", "db-rx")):
        await dbthreads.run(
            ingest_hook,
            {"session_id": hook, "hook_event_name": "SessionStart", "cwd": "/p", "source": "startup", "relaybay_session": name},
        )
    seen = []
    listing = messaging_lib.list_messages
    monkeypatch.setattr(messaging_lib, "list_messages", lambda *a, **k: seen.append(threading.current_thread().name) or listing(*a, **k))
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("board", channel)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        sent = await AsyncClient().post(
            "/api/message_send",
            json.dumps({"to": "db-rx", "body": "through a database thread", "hook_session": "h-tx"}),
            content_type="application/json",
            headers=auth,
        )
        assert sent.status_code == 200, sent.content
        ping = await asyncio.wait_for(layer.receive(channel), 5)
        assert "messages" in ping["topics"]
    finally:
        await layer.group_discard("board", channel)
    listed = await AsyncClient().get("/api/messages_list", {"session": "db-rx"}, headers=auth)
    assert listed.status_code == 200
    assert [m["body"] for m in json.loads(listed.content)["messages"]] == ['"through a database thread"']
    assert seen and seen[0].startswith("relaybay-db")
    wrong = await AsyncClient().get("/api/messages_list", {"session": "db-rx"}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401


def test_a_send_after_the_server_loop_closed_is_logged_not_raised(caplog):
    # A write that commits while the server shuts down still answers; only its ping is lost.
    from relaybay.events import sends_detached

    loop = asyncio.new_event_loop()
    loop.close()
    with sends_detached(loop), caplog.at_level("WARNING", logger="relaybay"):
        send_to_group("board", {"type": "board.ping", "topics": ["sessions"]})
    assert "did not take a board.ping" in caplog.text

"""Where hook ingestion runs under the ASGI server: long-lived hook threads (sessions_app/hooks/runner.py)."""

import asyncio
import json
import threading

import pytest
from channels.layers import get_channel_layer
from django import db
from django.test import AsyncClient

from relaybay.events import send_to_group
from sessions_app.hooks import runner
from sessions_app.models import Event

from .conftest import TOKEN

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def hook_threads(settings, monkeypatch):
    """The runner as relaybay.asgi sets it up, with a pool of its own for this test."""
    settings.RELAYBAY_HOOK_THREADS = 1
    monkeypatch.setattr(runner, "_enabled", True)
    monkeypatch.setattr(runner, "_executor", None)
    yield
    if runner._executor is not None:
        runner._executor.submit(lambda: db.connection.close()).result()
        runner._executor.shutdown()


def where():
    return threading.current_thread().name, db.connection.connection


def open_connection():
    db.connection.ensure_connection()
    return where()


async def test_hooks_run_on_one_long_lived_thread(hook_threads):
    first, connection = await runner.run(open_connection)
    second, kept = await runner.run(where)
    assert first == second and first.startswith("relaybay-hook")
    assert first != threading.current_thread().name
    if db.connection.vendor == "sqlite":
        assert kept is connection is not None  # the connection serves the next hook
    else:
        assert kept is None  # back in the pool after each hook; checked again on checkout


async def test_a_database_error_drops_the_hook_threads_connection(hook_threads):
    def fails():
        db.connection.ensure_connection()
        raise db.OperationalError("server closed the connection unexpectedly")

    with pytest.raises(db.OperationalError):
        await runner.run(fails)
    _, connection = await runner.run(where)
    assert connection is None


async def test_pings_from_a_hook_thread_reach_the_channel_layer_without_waiting(hook_threads):
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("board", channel)
    try:
        await runner.run(send_to_group, "board", {"type": "board.ping", "topics": ["sessions"]})
        assert await asyncio.wait_for(layer.receive(channel), 5) == {"type": "board.ping", "topics": ["sessions"]}
    finally:
        await layer.group_discard("board", channel)


async def test_a_hook_posted_to_the_server_is_recorded_and_pings_the_board(hook_threads):
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
    assert await Event.objects.filter(hook_session="h-runner", name="hook.UserPromptSubmit").aexists()


async def test_without_a_long_lived_loop_hooks_run_on_the_request_thread(settings, monkeypatch):
    # Django's WSGI handler gives each async view a loop that ends with the request: a send
    # handed to it could be cancelled, so nothing runs on hook threads there.
    settings.RELAYBAY_HOOK_THREADS = 1
    monkeypatch.setattr(runner, "_enabled", False)
    name, _ = await runner.run(where)
    assert not name.startswith("relaybay-hook")

"""No answer waits on the channel layer (docs/rules.md §2.7): board pings and wake-ups are made
in the background by the process's outbox (core/pings.py), one at a time within a bound, merged
while they wait and dropped with a log line when the layer does not take them; a sync worker's
sends go to an outbox thread; the wake-up long poll hands over what waits without the layer and
answers 503 when the layer does not let it wait.

The layer here is the test run's (in memory, or Redis on the scale-out pass) with its calls
held where a paused Redis would hold them. tests/test_faults.py pauses a real Redis under two
real servers."""

import asyncio
import json
import logging
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django import db
from django.conf import settings
from django.test import AsyncClient

from core import pings
from sessions_app.actions import do_write_comment
from sessions_app.hooks.ingest import ingest_hook
from sessions_app.models import HookLink, Session

from .conftest import TOKEN


class StalledLayer:
    """The channel layer's sends and group joins, recorded and held until `release()`."""

    def __init__(self, monkeypatch):
        self.layer = get_channel_layer()
        self.calls = []
        self.released = threading.Event()
        self.real_send, self.real_add = self.layer.group_send, self.layer.group_add
        monkeypatch.setattr(self.layer, "group_send", self.group_send)
        monkeypatch.setattr(self.layer, "group_add", self.group_add)

    async def _held(self):
        while not self.released.is_set():
            await asyncio.sleep(0.01)

    async def group_send(self, group, message):
        self.calls.append((group, message, threading.current_thread().name))
        await self._held()
        await self.real_send(group, message)

    async def group_add(self, group, channel):
        self.calls.append((group, "join", threading.current_thread().name))
        await self._held()
        await self.real_add(group, channel)

    def release(self):
        self.released.set()


@pytest.fixture
def stalled(monkeypatch):
    # A bound a test can wait out; the product's is a second.
    monkeypatch.setattr(pings, "SEND_BOUND", 0.2)
    return StalledLayer(monkeypatch)


async def until(predicate, what):
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


def board_ping(*topics):
    return {"type": "board.ping", "topics": list(topics)}


# --------------------------------------------------------------------------- the outbox


async def test_a_send_the_layer_does_not_take_in_time_is_kept_with_what_waits_behind_it_and_sent_once_the_layer_answers(stalled, monkeypatch, caplog):
    monkeypatch.setattr(pings, "RETRY_AFTER", 0.05)
    box = pings.outbox()
    with caplog.at_level(logging.WARNING, logger="relaybay"):
        box.post("board", board_ping("sessions"))
        box.post("wait.one", {"type": "wake"})
        box.post("wait.two", {"type": "wake"})
        # The first send is tried again and again while the layer does not answer; what waits
        # behind it stays, and a ping asked for meanwhile joins the one kept.
        await until(lambda: len(stalled.calls) >= 3, "a few tries")
        box.post("board", board_ping("messages"))
        tries = len(stalled.calls)
        await until(lambda: len(stalled.calls) >= tries + 2, "a try of the merged ping")
        assert {group for group, _, _ in stalled.calls} == {"board"}
        assert box.worker is not None and {group for group, _ in box.waiting} >= {"wait.one", "wait.two"}
    assert "the channel layer did not take a board.ping for board" in caplog.text
    assert caplog.text.count("did not take") == 1  # once for the stall, not once a try
    channels = {}
    for group in ("board", "wait.one", "wait.two"):
        channels[group] = await stalled.layer.new_channel()
        await stalled.real_add(group, channels[group])
    with caplog.at_level(logging.WARNING, logger="relaybay"):
        stalled.release()
        # The layer answers again: everything kept goes out, the board ping with both topics.
        assert await asyncio.wait_for(stalled.layer.receive(channels["board"]), 10) == board_ping("messages", "sessions")
        for group in ("wait.one", "wait.two"):
            assert await asyncio.wait_for(stalled.layer.receive(channels[group]), 10) == {"type": "wake"}
        await until(lambda: box.worker is None, "the outbox emptied")
    assert "the channel layer takes sends again" in caplog.text


async def test_a_send_kept_longer_than_a_wake_up_poll_lasts_is_dropped_and_logged(stalled, monkeypatch, caplog):
    monkeypatch.setattr(pings, "RETRY_AFTER", 0.05)
    monkeypatch.setattr(settings, "RELAYBAY_MAX_WAIT", 0.5)
    box = pings.outbox()
    with caplog.at_level(logging.WARNING, logger="relaybay"):
        box.post("wait.one", {"type": "wake"})
        await until(lambda: box.worker is None, "the outbox gave up")
    assert "dropped 1 channel-layer send(s) kept longer than a wake-up poll lasts" in caplog.text
    assert not box.waiting


async def test_pings_asked_for_while_a_send_is_on_its_way_go_out_merged(stalled, monkeypatch):
    monkeypatch.setattr(pings, "SEND_BOUND", 30)
    box = pings.outbox()
    box.post("board", board_ping("sessions"))
    await until(lambda: stalled.calls, "the first send")
    box.post("board", board_ping("messages"))
    box.post("wait.one", {"type": "wake"})
    box.post("board", board_ping("events", "messages"))
    box.post("wait.one", {"type": "wake"})
    stalled.release()
    await until(lambda: box.worker is None, "the outbox emptied")
    assert [(group, message) for group, message, _ in stalled.calls] == [
        ("board", board_ping("sessions")),
        ("board", board_ping("events", "messages")),
        ("wait.one", {"type": "wake"}),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_sync_workers_answer_goes_out_while_its_pings_wait_for_the_outbox_thread(stalled, monkeypatch):
    """Under gunicorn (relaybay/wsgi.py) a request's pings are made by a thread of the process."""
    import io
    import sys

    from relaybay import wsgi

    background = pings._BackgroundLoop()
    monkeypatch.setattr(pings, "_background", background)
    monkeypatch.setattr(pings, "SEND_BOUND", 30)
    body = json.dumps({"hook_event_name": "SessionStart", "session_id": "h-w", "cwd": "/p", "source": "startup"}).encode()
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/api/hooks", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80",
        "HTTP_HOST": "127.0.0.1", "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
        "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": "application/json",
        "HTTP_AUTHORIZATION": f"Bearer {TOKEN}",
    }  # fmt: skip
    started = []
    answered = {}
    request = threading.Thread(target=lambda: answered.update(body=b"".join(wsgi.application(environ, lambda *a: started.append(a)))))
    request.start()
    request.join(10)  # a request that made its sends itself would still wait for the layer
    try:
        assert not request.is_alive() and started[0][0].startswith("200"), started
        assert "SessionStart" in answered["body"].decode()
        stalled.release()
        for _ in range(500):
            if stalled.calls:
                break
            threading.Event().wait(0.01)
        assert {(group, thread) for group, _, thread in stalled.calls} == {("board", "relaybay-outbox")}
    finally:
        if background.loop is not None:
            background.loop.call_soon_threadsafe(background.loop.stop)


# --------------------------------------------------------------------------- the wake-up long poll


def in_thread(fn):
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        finally:
            db.connection.close()

    return sync_to_async(call, thread_sensitive=False)


@in_thread
def idle_session_with(comment=None):
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        ingest_hook({"hook_event_name": event, "session_id": "h-a", "cwd": "/p", "relaybay_session": "alice", "stop_hook_active": False})
    if comment:
        do_write_comment(session=Session.objects.get(title="alice"), body=comment)


async def wait(timeout=5):
    # (Bounded only so that a poll that waited on the layer fails here rather than hangs.)
    response = await asyncio.wait_for(
        AsyncClient().get("/api/hooks/wait", {"session_id": "h-a", "timeout": timeout}, headers={"Authorization": f"Bearer {TOKEN}"}),
        30,
    )
    return response.status_code, json.loads(response.content)


@pytest.mark.django_db(transaction=True)
async def test_a_wake_up_poll_hands_over_what_waits_though_the_channel_layer_does_not_answer(stalled):
    await idle_session_with(comment="are you there?")
    status, answer = await wait()
    assert (status, answer["status"]) == (200, "delivered")
    assert "are you there?" in answer["text"]
    assert [call for call in stalled.calls if call[1] == "join"] == []


@pytest.mark.django_db(transaction=True)
async def test_a_wake_up_poll_the_channel_layer_does_not_let_wait_answers_503_and_leaves_nobody_waiting(stalled):
    await idle_session_with()
    status, answer = await wait()
    assert status == 503 and answer["code"] == "channel_layer_unavailable", answer
    assert "channel layer" in answer["detail"]
    assert await in_thread(lambda: HookLink.objects.get(hook_session="h-a").waiter)() == ""


# --------------------------------------------------------------------------- a board page that writes


@pytest.mark.django_db(transaction=True)
async def test_a_board_page_that_writes_answers_though_the_channel_layer_does_not(stalled, monkeypatch):
    """The owner's comment from the board, through relaybay.asgi as daphne serves it."""
    from channels.testing import HttpCommunicator
    from django.test import Client

    from relaybay import asgi
    from sessions_app.models import Comment

    from .board_fixtures import make_owner

    monkeypatch.setattr(pings, "SEND_BOUND", 30)

    @in_thread
    def owner_and_row():
        client = Client()
        client.force_login(make_owner())
        return client.cookies["sessionid"].value, Session.objects.create(kind=Session.Kind.HOOK, title="alice").pk

    session_cookie, row = await owner_and_row()
    csrf = "c" * 32
    headers = [
        (b"host", b"127.0.0.1"),
        (b"cookie", f"sessionid={session_cookie}; csrftoken={csrf}".encode()),
        (b"x-csrftoken", csrf.encode()),
        (b"content-type", b"application/x-www-form-urlencoded"),
    ]
    communicator = HttpCommunicator(asgi.application, "POST", f"/sessions/{row}/comment/", b"body=from+the+board", headers)
    # (Bounded only so that a page that waited on the layer fails here rather than hangs.)
    response = await communicator.get_response(timeout=30)
    assert response["status"] in (200, 302), response
    assert await in_thread(lambda: list(Comment.objects.values_list("body", flat=True)))() == ["from the board"]
    assert not stalled.released.is_set()
    stalled.release()
    await until(lambda: any(group == "board" for group, _, _ in stalled.calls), "the comment's ping")

"""How relaybay.asgi serves the JSON API (the production path under daphne), run in process
through the ASGI application itself: /api/ without the board's middleware chain
(relaybay.asgi.APIHandler), each request's sync code on a long-lived database thread
(core/dbthreads.py), pings after commit made on the server's event loop, never waited for by the answer."""

import asyncio
import inspect
import json
import threading

import pytest
from channels.layers import get_channel_layer
from channels.testing import HttpCommunicator
from django import db
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.db import transaction
from django.test import override_settings

from core import pings
from relaybay import asgi
from core.errors import Refused
from sessions_app.hooks import ingest

from .conftest import TOKEN

pytestmark = pytest.mark.django_db(transaction=True)
AUTH = [(b"authorization", f"Bearer {TOKEN}".encode()), (b"content-type", b"application/json")]


@pytest.fixture(autouse=True)
def _close_database_threads_connections():
    yield
    for executor in asgi.db_threads.executors:
        executor.submit(lambda: db.connection.close()).result()


async def serve(method, path, body=None, headers=AUTH):
    if not any(name == b"host" for name, _ in headers):
        headers = [*headers, (b"host", b"127.0.0.1")]  # as every HTTP/1.1 client sends one
    communicator = HttpCommunicator(asgi.application, method, path, json.dumps(body).encode() if body is not None else b"", headers)
    response = await communicator.get_response(timeout=10)
    await communicator.wait(10)  # the request's end: request_finished, the thread's release
    headers = {name.lower(): value for name, value in response["headers"]}
    json_answer = headers.get(b"content-type", b"").startswith(b"application/json")
    return response["status"], headers, json.loads(response["body"] or b"null") if json_answer else response["body"]


def hook_payload(event, hook_session, **fields):
    return {"hook_event_name": event, "session_id": hook_session, "cwd": "/p", **fields}


@pytest.fixture
def board_group():
    """A board's channel on the layer: what a write pings."""

    class Board:
        async def __aenter__(self):
            self.layer = get_channel_layer()
            self.channel = await self.layer.new_channel()
            await self.layer.group_add("board", self.channel)
            return self

        async def __aexit__(self, *exc):
            await self.layer.group_discard("board", self.channel)

        async def next_ping(self):
            return await asyncio.wait_for(self.layer.receive(self.channel), 5)

    return Board()


@pytest.fixture
def seen_threads(monkeypatch):
    """The thread (and its database connection) each hook's ingestion ran on."""
    seen = []
    real = ingest.ingest_hook

    def recording(*args, **kwargs):
        answer = real(*args, **kwargs)
        seen.append((threading.current_thread().name, db.connection.connection))
        return answer

    monkeypatch.setattr("sessions_app.api.ingest_hook", recording)
    return seen


async def test_a_hook_is_ingested_on_a_database_thread_and_pings_the_board_after_commit(board_group, seen_threads):
    async with board_group as board:
        status, _, answer = await serve("POST", "/api/hooks", hook_payload("UserPromptSubmit", "h-serve", prompt="hi"))
        assert (status, answer) == (200, {})
        assert "sessions" in (await board.next_ping())["topics"]
    assert seen_threads[0][0].startswith("relaybay-db-")


async def test_the_database_thread_keeps_its_sqlite_connection_and_gives_a_postgresql_one_back(seen_threads):
    for event in ("SessionStart", "UserPromptSubmit", "PreToolUse"):
        status, _, _ = await serve("POST", "/api/hooks", hook_payload(event, "h-keep", source="startup", prompt="go", tool_name="Bash"))
        assert status == 200
    (first, connection), *rest = seen_threads
    assert all(thread == first for thread, _ in rest)  # an idle process's first thread
    if db.connection.vendor == "sqlite":
        assert all(kept is connection for _, kept in rest)  # no connection opened per request
        assert asgi.db_threads.executors[0].submit(lambda: db.connection.connection).result() is connection
    else:
        # Back to PostgreSQL (the pool in a server) at each request's end.
        assert all(executor.submit(lambda: db.connection.connection).result() is None for executor in asgi.db_threads.executors)


async def test_a_database_error_costs_the_thread_its_connection_not_its_next_request(monkeypatch, seen_threads):
    def broken(*args, **kwargs):
        db.connection.ensure_connection()
        raise db.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr("sessions_app.api.ingest_hook", broken)
    status, _, answer = await serve("POST", "/api/hooks", hook_payload("PreToolUse", "h-broken", tool_name="Bash"))
    assert status == 503 and "cannot reach its database" in answer["detail"]
    monkeypatch.undo()
    status, _, _ = await serve("POST", "/api/hooks", hook_payload("SessionStart", "h-broken", source="startup"))
    assert status == 200


async def test_mcp_operations_run_on_the_database_threads_and_ping_after_commit(board_group, monkeypatch):
    from messaging import formatting

    for hook, name in (("h-tx", "db-tx"), ("h-rx", "db-rx")):
        status, _, _ = await serve("POST", "/api/hooks", hook_payload("SessionStart", hook, source="startup", relaybay_session=name))
        assert status == 200
    seen = []
    listing = formatting.list_messages
    monkeypatch.setattr(formatting, "list_messages", lambda *a, **k: seen.append(threading.current_thread().name) or listing(*a, **k))
    async with board_group as board:
        status, _, sent = await serve("POST", "/api/message_send", {"to": "db-rx", "body": "through a database thread", "hook_session": "h-tx"})
        assert status == 200, sent
        assert "messages" in (await board.next_ping())["topics"]
    status, _, listed = await serve("GET", "/api/messages_list?session=db-rx&hook_session=h-rx")
    assert status == 200
    assert [m["body"] for m in listed["messages"]] == ['"through a database thread"']
    assert seen[0].startswith("relaybay-db-")


async def test_the_api_answers_without_the_boards_middleware_and_still_needs_the_token():
    status, headers, _ = await serve("GET", "/api/sessions_list")
    assert status == 200
    # The board's chain would add its security headers and a CSRF cookie check; /api/ skips it.
    assert b"x-frame-options" not in headers and b"set-cookie" not in headers
    status, _, answer = await serve("GET", "/api/sessions_list", headers=[(b"authorization", b"Bearer wrong")])
    assert status == 401 and "Missing or wrong token" in answer["detail"]
    # It says where the token is and how a CLI connected with an old one gets the current one.
    assert "data/token" in answer["detail"] and "manage.py connect claude" in answer["detail"]
    status, _, answer = await serve("POST", "/api/hooks", hook_payload("PreToolUse", ""), headers=AUTH)
    assert status == 400
    status, headers, _ = await serve("GET", "/login/", headers=[(b"host", b"127.0.0.1")])
    assert status == 200 and b"x-frame-options" in headers


def test_the_api_handler_sets_what_djangos_own_load_middleware_sets():
    """APIHandler overrides BaseHandler.load_middleware, a private method of Django's. If Django
    renames it, changes its signature, stops calling it as the ASGI handler starts, or has it set
    other attributes, this fails rather than the API being served by a handler half set up."""
    django_signature = inspect.signature(BaseHandler.load_middleware)
    assert list(django_signature.parameters) == ["self", "is_async"]
    assert django_signature.parameters["is_async"].default is False
    assert inspect.signature(asgi.APIHandler.load_middleware) == django_signature

    called = []

    class Starting(ASGIHandler):
        def load_middleware(self, is_async=False):
            called.append(is_async)

    Starting()
    assert called == [True]

    with override_settings(MIDDLEWARE=[]):
        django_handler = BaseHandler()
        django_handler.load_middleware(is_async=True)
        api_handler = asgi.APIHandler()
    set_by_django, set_by_ours = vars(django_handler), vars(api_handler)
    assert set(set_by_django) == set(set_by_ours) == {
        "_view_middleware",
        "_template_response_middleware",
        "_exception_middleware",
        "_middleware_chain",
    }
    for name in ("_view_middleware", "_template_response_middleware", "_exception_middleware"):
        assert set_by_ours[name] == set_by_django[name] == [], name
    assert callable(set_by_ours["_middleware_chain"])


SEEN_BY_MIDDLEWARE = []


def seen_by_middleware(get_response):
    """A middleware as a newcomer would add one to settings.MIDDLEWARE: it notes every path."""

    def middleware(request):
        SEEN_BY_MIDDLEWARE.append(request.path)
        return get_response(request)

    return middleware


async def test_an_api_request_passes_through_no_middleware_added_to_settings(settings, monkeypatch):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.test_serving.seen_by_middleware"]
    # Both handlers built as the server builds them, with the middleware in the settings.
    monkeypatch.setattr(asgi, "api_asgi_app", asgi.APIHandler())
    monkeypatch.setattr(asgi, "django_asgi_app", ASGIHandler())
    SEEN_BY_MIDDLEWARE.clear()
    headers = [*AUTH, (b"host", b"127.0.0.1")]  # a Host the board's chain would accept
    status, _, answer = await serve("GET", "/api/sessions_list", headers=headers)
    assert (status, answer) == (200, {"sessions": []})
    assert SEEN_BY_MIDDLEWARE == []
    # The same application's other Django requests do go through it.
    status, _, described = await serve("GET", "/api/openapi.json", headers=headers)
    assert status == 200 and described["info"]["title"] == "relaybay API"
    assert SEEN_BY_MIDDLEWARE == ["/api/openapi.json"]


class Sends(list):
    gate = None


@pytest.fixture
def layer_sends(monkeypatch):
    """Each channel-layer send, in order: whether it ran on the event loop's own thread. A
    database thread must not hand a send to the loop and wait for it (asgiref's async_to_sync
    in core.pings): such a send is recorded as refused and never made. `layer_sends.gate`,
    while clear, holds every send where the channel layer would: a Redis that does not answer."""
    order = Sends()
    layer = get_channel_layer()
    real = layer.group_send
    gate = asyncio.Event()
    gate.set()

    async def group_send(group, message):
        await gate.wait()
        order.append(("ping", threading.current_thread() is threading.main_thread()))
        await real(group, message)

    def waited_on_the_loop(fn):
        order.append("a database thread waited on the loop")
        raise RuntimeError("a database thread waited on the event loop for a channel-layer send")

    monkeypatch.setattr(layer, "group_send", group_send)
    monkeypatch.setattr(pings, "async_to_sync", waited_on_the_loop)
    order.gate = gate
    return order


async def call_app(method, path, body, order):
    """relaybay.asgi.application called as daphne calls it, the answer's messages added to `order`."""
    scope = {
        "type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
        "headers": AUTH, "http_version": "1.1", "scheme": "http", "server": ("testserver", 80), "client": ("127.0.0.1", 50000),
    }  # fmt: skip
    requests = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]

    async def receive():
        if requests:
            return requests.pop()
        await asyncio.Event().wait()  # the client stays connected

    async def send(message):
        order.append(message["type"])

    await asgi.application(scope, receive, send)


async def test_a_requests_pings_are_made_on_the_event_loop_and_its_answer_never_waits_for_them(board_group, layer_sends):
    async with board_group as board:
        # The channel layer takes nothing (Redis paused): the answer goes out all the same.
        layer_sends.gate.clear()
        # (Bounded only so that a server that waited would fail here rather than hang.)
        await asyncio.wait_for(call_app("POST", "/api/hooks", hook_payload("UserPromptSubmit", "h-held", prompt="hi"), layer_sends), 30)
        assert layer_sends == ["http.response.start", "http.response.body"]
        # Once the layer answers, the pings of what the request committed reach the board.
        layer_sends.gate.set()
        assert "sessions" in (await board.next_ping())["topics"]
    # A first hook makes the session's row and its exact link: each write pings, made on the
    # loop's own thread, merged while they waited (core.pings.Outbox).
    assert layer_sends[2:] == [("ping", True)], layer_sends


async def test_a_steps_pings_are_handed_to_the_event_loop_once_it_returns_even_when_it_raises_after_its_commit(board_group, layer_sends):
    """What the MCP tools and the wake-up long poll run with threads.run: a deep reply's refusal
    commits the owner's Inbox mark and its ping, then raises."""

    def step():
        with transaction.atomic():
            pings.ping("inbox")
        with transaction.atomic():
            pings.ping("never: rolled back")
            transaction.set_rollback(True)
        layer_sends.append("step committed")
        raise Refused("refused after the commit")

    async with board_group as board:
        with pytest.raises(Refused):
            await asgi.db_threads.run(step)
        layer_sends.append("run returned")
        assert (await board.next_ping())["topics"] == ["inbox"]
    assert layer_sends == ["step committed", "run returned", ("ping", True)]

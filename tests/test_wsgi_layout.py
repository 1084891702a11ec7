"""The recommended scale-out layout (docs/scale-out.md): the JSON API served by gunicorn
through Django's WSGI handler, beside daphne for websockets and the wake-up long poll, on one
PostgreSQL and one Redis. Hooks and sends through the WSGI process must keep every rule and
reach daphne's waiters and boards through Redis.
"""

import json
import time

import pytest

from tests.live_server import scale_out_env
from tests.scale_out import (
    board_socket,
    create_owner,
    delivered_ids,
    owner_cookie,
    parallel_hooks,
    post_json,
    query,
    start_cluster,
    stop_cluster,
    wait_until,
    write_comments,
)
from tests.test_scale_out import assert_each_once, idle, send, start, wait_on, waiter_of

pytestmark = pytest.mark.scale_out


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    servers = start_cluster(tmp_path_factory.mktemp("wsgi-layout"), 2, scale_out_env(), kinds=["daphne", "gunicorn"])
    for server in servers:
        server.get_wait = lambda hook, timeout, server=server: server.get("/hooks/wait", session_id=hook, timeout=timeout)
    yield servers
    stop_cluster(servers)


def test_hooks_through_gunicorn_and_daphne_deliver_each_item_once(layout):
    daphne, gunicorn = layout
    start(gunicorn, "hook-w-tx", "w-tx")
    start(daphne, "hook-w-tx3", "w-tx3")
    start(gunicorn, "hook-w-rx", "w-rx")
    gunicorn.hook("UserPromptSubmit", "hook-w-rx", prompt="work", cwd="/work/w-rx")
    write_comments(daphne, "w-rx", [f"wsgi note {i}" for i in range(3)])
    comments = [("C", pk) for (pk,) in query(daphne, "select id from sessions_app_comment where body like 'wsgi note %'")]
    sent = []
    for i in range(12):
        # Two senders (10 sends a minute each), one writing through each server.
        server, sender = (gunicorn, "w-tx") if i % 2 else (daphne, "w-tx3")
        status, answer = send(server, sender, f"hook-{sender}", "w-rx", f"#{i} " + "y" * 1500)
        assert status == 200, answer
        sent.append(("M", answer["id"]))
    answers = parallel_hooks(layout, "PreToolUse", "hook-w-rx", 32, tool_name="Bash", cwd="/work/w-rx")
    answers += parallel_hooks(layout, "PostToolUse", "hook-w-rx", 8, tool_name="Bash", cwd="/work/w-rx")
    assert_each_once(answers, sent + comments)
    carriers = query(daphne, "select delivered_by from session_message where delivered_by like '%hook-w-rx'")
    assert len(carriers) == len(sent)


def test_a_send_through_gunicorn_wakes_a_waiter_on_daphne(layout):
    daphne, gunicorn = layout
    start(gunicorn, "hook-w-waker", "w-waker")
    idle(gunicorn, "hook-w-sleeper", "w-sleeper")
    waiting = wait_on(daphne, "hook-w-sleeper")
    wait_until(lambda: waiter_of(daphne, "hook-w-sleeper"), what="the waiter to register")
    started = time.monotonic()
    status, sent = send(gunicorn, "w-waker", "hook-w-waker", "w-sleeper", "wake up (from the WSGI process)")
    assert status == 200, sent
    status, answer, _ = waiting.result()
    assert status == 200 and answer["status"] == "delivered", answer
    assert "wake up (from the WSGI process)" in answer["text"]
    assert time.monotonic() - started < 10  # woken by the send, not by the poll's timeout


def test_a_board_on_daphne_hears_hooks_posted_to_gunicorn(layout):
    daphne, gunicorn = layout
    create_owner(daphne)
    start(gunicorn, "hook-w-tx2", "w-tx2")
    start(gunicorn, "hook-w-busy", "w-busy")
    status, sent = send(gunicorn, "w-tx2", "hook-w-tx2", "w-busy", "seen live")
    assert status == 200, sent
    with board_socket(daphne, owner_cookie(daphne)) as ws:
        answer = gunicorn.hook("UserPromptSubmit", "hook-w-busy", prompt="go", cwd="/work/w-busy")
        assert delivered_ids(answer) == [("M", sent["id"])]
        deadline = time.monotonic() + 10
        topics = set()
        while not {"sessions", "messages"} <= topics and time.monotonic() < deadline:
            topics |= set(json.loads(ws.recv(timeout=deadline - time.monotonic()))["topics"])
        assert {"sessions", "messages"} <= topics


def test_the_api_answers_the_same_through_either_server(layout):
    daphne, gunicorn = layout
    for server in layout:
        status, answer = post_json(server.url, "wrong-token", "/hooks", {"session_id": "x", "hook_event_name": "Stop"})
        assert status == 401, answer
        status, answer = post_json(server.url, server.token, "/hooks", {"hook_event_name": "Stop"})
        assert status == 400 and "session_id" in answer["detail"]
    assert daphne.get("/sessions_list")[1] == gunicorn.get("/sessions_list")[1]

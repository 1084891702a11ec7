"""Faults (docs/scale-out.md, "When a service stops"): a server killed with `kill -9` under load loses no message whose send was
answered, and after a restart every pending item is delivered, once; a stopped database or
Redis gives clear errors and leaves no half-written rows; a paused Redis holds up no answer;
the hook client's spool keeps its order across a long outage with many events, replayed and
marked so on the server. (tests/test_delivery_faults.py runs the delivery fault loop.)

The kill and spool tests run on the test run's configuration (embedded on the first pass of
`make test`, PostgreSQL + Redis on the second); the outage tests stop a PostgreSQL cluster and
a redis-server of their own, never the shared ones.
"""

import collections
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.fault_loop import PausableRedis
from tests.live_server import RUN_DATABASE_URL, LiveRelaybay, free_port, scale_out_env, start_relaybay, stop_relaybay
from tests.scale_out import (
    PrivatePostgres,
    PrivateRedis,
    board_socket,
    create_owner,
    delivered_ids,
    kill_hard,
    owner_cookie,
    post_json,
    query,
    restart,
    start_cluster,
    stop_cluster,
    wait_until,
)

HOOK_CLIENT = Path(__file__).resolve().parents[1] / "bin" / "relaybay-hook"


def send(server, sender, to, body, timeout=30):
    return post_json(server.url, server.token, "/message_send", {"body": body, "to": to, "session": sender, "hook_session": f"hook-{sender}"}, timeout)


def no_half_written_messages(server):
    """Every stored message has the events its send wrote in the same transaction."""
    messages = query(server, "select count(*) from session_message")[0][0]
    sent_events = query(server, "select count(*) from sessions_app_event where name = 'message.sent'")[0][0]
    edges = query(server, "select count(*) from sessions_app_event where name = 'session.message'")[0][0]
    assert messages == sent_events == edges, (messages, sent_events, edges)
    return messages


# --------------------------------------------------------------------------- kill -9


@pytest.fixture
def servers(tmp_path):
    """On the scale-out pass two processes (one is killed, one keeps serving); on the embedded
    default its one process."""
    if RUN_DATABASE_URL:
        cluster = start_cluster(tmp_path, 2, scale_out_env())
    else:
        cluster = [LiveRelaybay(*start_relaybay(tmp_path / "process-1"))]
    yield cluster
    stop_cluster(cluster)


def test_kill_9_under_load_loses_no_answered_send_and_a_restart_delivers_everything_once(servers):
    victim = servers[0]
    senders = [f"loader{i}" for i in range(6)]
    for name in senders:
        victim.start_session(f"hook-{name}", name, cwd=f"/work/{name}")
    victim.start_session("hook-sink", "sink", cwd="/work/sink")
    victim.hook("UserPromptSubmit", "hook-sink", prompt="busy", cwd="/work/sink")

    answered, failed = [], []
    lock = threading.Lock()
    stop = threading.Event()

    def sender(name, index):
        for i in range(9):  # under the rate limit of 10 a minute
            server = servers[(index + i) % len(servers)]
            status, answer = send(server, name, "sink", f"{name} message {i}", timeout=10)
            with lock:
                (answered if status == 200 else failed).append(answer["id"] if status == 200 else (status, answer))
            time.sleep(0.05)

    def noise(name):
        # Hooks of the senders themselves (nothing pending for them): write load on the server.
        while not stop.is_set():
            time.sleep(0.01)
            for server in servers:
                post_json(server.url, server.token, "/hooks", {"hook_event_name": "PreToolUse", "session_id": f"hook-{name}", "cwd": f"/work/{name}", "tool_name": "Read"}, 10)

    threads = [threading.Thread(target=sender, args=(name, i)) for i, name in enumerate(senders)]
    threads += [threading.Thread(target=noise, args=(name,)) for name in senders[:3]]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(answered) >= 12, timeout=60, what="a dozen answered sends")
    kill_hard(victim)
    for thread in threads[: len(senders)]:
        thread.join(120)
    stop.set()
    for thread in threads[len(senders):]:
        thread.join(30)
    assert failed, "the kill should have cut some sends off"

    restart(victim)
    stored = no_half_written_messages(victim)
    assert stored >= len(answered)
    delivered = collections.Counter()
    for _ in range(30):
        answer = victim.hook("PreToolUse", "hook-sink", tool_name="Read", cwd="/work/sink")
        if not answer:
            break
        delivered.update(number for kind, number in delivered_ids(answer) if kind == "M")
    assert all(n == 1 for n in delivered.values()), delivered
    assert set(answered) <= set(delivered), f"answered sends never delivered: {set(answered) - set(delivered)}"
    assert sum(delivered.values()) == stored
    assert query(victim, "select count(*) from session_message where delivered_at is null") == [(0,)]


# --------------------------------------------------------------------------- the database stops


def hook_client(url, token, spool, payload, **env):
    return subprocess.run(
        [sys.executable, "-S", str(HOOK_CLIENT)],
        input=json.dumps(payload).encode(),
        env={**{k: v for k, v in os.environ.items() if not k.startswith("RELAYBAY_")}, "RELAYBAY_URL": url, "RELAYBAY_TOKEN": token, "RELAYBAY_SPOOL": str(spool), **env},
        capture_output=True,
        timeout=60,
    )


@pytest.mark.scale_out
def test_a_stopped_database_gives_clear_503s_no_half_written_rows_and_relaybay_recovers(tmp_path):
    postgres = PrivatePostgres().init()
    server = None
    try:
        # A request waits at most 2 s for a connection while the database is down.
        env = {**scale_out_env(database_url=postgres.url), "RELAYBAY_DB_POOL_TIMEOUT": "2"}
        server = LiveRelaybay(*start_relaybay(tmp_path / "process-1", **env))
        server.start_session("hook-writer", "writer", cwd="/work/writer")
        server.start_session("hook-reader", "reader", cwd="/work/reader")
        status, before = send(server, "writer", "reader", "before the outage")
        assert status == 200, before

        # Sends in flight while the database goes down hard: each is stored whole or not at all.
        results = []
        threads = [
            threading.Thread(target=lambda i=i: results.append(send(server, "writer", "reader", f"in flight {i}", timeout=30)))
            for i in range(6)
        ]
        for thread in threads:
            thread.start()
        postgres.stop("immediate")
        for thread in threads:
            thread.join(60)

        status, answer = send(server, "writer", "reader", "while the database is down")
        assert status == 503, answer
        assert "cannot reach its database" in answer["detail"] and "Nothing was stored" in answer["detail"]
        status, answer = post_json(server.url, server.token, "/hooks", {"hook_event_name": "UserPromptSubmit", "session_id": "hook-reader", "cwd": "/work/reader", "prompt": "hi"})
        assert status == 503, answer
        # The hook client takes the 503 for "relaybay is down": it spools and stays silent.
        spool = tmp_path / "spool.jsonl"
        started = time.monotonic()
        completed = hook_client(server.url, server.token, spool, {"hook_event_name": "PreToolUse", "session_id": "hook-reader", "cwd": "/work/reader", "tool_name": "Read"})
        assert completed.returncode == 0 and completed.stdout == b"", completed
        assert time.monotonic() - started < 30
        assert spool.stat().st_size > 0

        postgres.start()
        # Back within the pool's reconnect time, with no restart of relaybay.
        status, answer = wait_until(lambda: (lambda r: r if r[0] == 200 else None)(send(server, "writer", "reader", "after the outage")), timeout=30, what="relaybay to reach the database again")
        bodies = [row[0] for row in query(server, "select body from session_message order by id")]
        assert "while the database is down" not in bodies
        answered = [answer["id"] for status, answer in results if status == 200]
        assert set(answered) <= {row[0] for row in query(server, "select id from session_message")}
        no_half_written_messages(server)
        # The spooled event is replayed, marked so, by the next hook call, after that call's own.
        completed = hook_client(server.url, server.token, spool, {"hook_event_name": "PostToolUse", "session_id": "hook-reader", "cwd": "/work/reader", "tool_name": "Read"})
        assert completed.returncode == 0, completed
        events = query(server, "select name, replay from sessions_app_event where hook_session = 'hook-reader' and name like 'hook.%' order by id")
        assert events[-2:] == [("hook.PostToolUse", False), ("hook.PreToolUse", True)]
    finally:
        if server is not None:
            stop_relaybay(server.process)
        postgres.destroy()


@pytest.mark.scale_out
def test_board_requests_daphne_cuts_short_give_their_database_connections_back_to_the_pool(tmp_path):
    import psycopg

    # Two connections in the pool, and a page waits at most 2 s for one.
    env = {**scale_out_env(), "RELAYBAY_DB_POOL_SIZE": "2", "RELAYBAY_DB_POOL_TIMEOUT": "2"}
    server = LiveRelaybay(*start_relaybay(tmp_path / "process-1", ready_timeout=120, **env))
    try:
        create_owner(server)
        cookie = owner_cookie(server)
        page = urllib.request.Request(f"{server.url}/", headers={"Cookie": f"sessionid={cookie}"})
        log = server.process.relaybay_data / "server.log"
        # The owner's session row is locked: each page waits in its read of it, holding a
        # connection, until its client leaves and daphne cancels it (its close timeout, 10 s).
        with psycopg.connect(server.process.relaybay_env["DATABASE_URL"]) as lock:
            lock.execute("lock table django_session in access exclusive mode")
            for _ in range(3):
                with pytest.raises(TimeoutError):
                    urllib.request.urlopen(page, timeout=0.5)
            wait_until(lambda: log.read_text().count("took too long to shut down and was killed") >= 2, timeout=60, what="daphne to cancel the pages")
        # The lock is gone: the cut-short pages' steps end, and a page has a connection again.
        with urllib.request.urlopen(page, timeout=30) as answer:
            assert answer.status == 200 and "/login/" not in answer.geturl()
    finally:
        stop_relaybay(server.process)


# --------------------------------------------------------------------------- Redis stops


@pytest.mark.scale_out
def test_a_stopped_redis_keeps_writes_whole_refuses_long_polls_clearly_and_recovers(tmp_path):
    redis_server = PrivateRedis(tmp_path).start()
    servers = []
    try:
        servers = start_cluster(tmp_path, 2, scale_out_env(redis_url=redis_server.url))
        first, second = servers
        create_owner(first)
        first.start_session("hook-alpha", "alpha", cwd="/work/alpha")
        first.start_session("hook-beta", "beta", cwd="/work/beta")
        first.hook("UserPromptSubmit", "hook-beta", prompt="go", cwd="/work/beta")
        first.hook("Stop", "hook-beta", stop_hook_active=False, cwd="/work/beta")

        redis_server.stop()
        # The database is the record: a send is stored and answered; its pings are lost, logged.
        started = time.monotonic()
        status, sent = send(first, "alpha", "beta", "while redis is down")
        assert status == 200, sent
        assert time.monotonic() - started < 10
        assert query(first, "select count(*) from session_message where body = 'while redis is down'") == [(1,)]
        no_half_written_messages(first)
        # Hooks still deliver (they need the database, not Redis).
        answer = second.hook("UserPromptSubmit", "hook-beta", prompt="again", cwd="/work/beta")
        assert "while redis is down" in answer["hookSpecificOutput"]["additionalContext"]
        second.hook("Stop", "hook-beta", stop_hook_active=False, cwd="/work/beta")
        # The long poll cannot wait without the channel layer: it says so, and no waiter is left
        # registered that would tell senders the session is being woken.
        status, answer = second.get("/hooks/wait", session_id="hook-beta", timeout=5)
        assert status == 503, answer
        assert "channel layer" in answer["detail"] and "Redis" in answer["detail"]
        assert query(first, "select waiter from sessions_app_hooklink where hook_session = 'hook-beta'") == [("",)]
        # What waits already needs no waiting: the poll hands it over (docs/rules.md §2.7).
        assert send(first, "alpha", "beta", "for the poll")[0] == 200
        status, answer = second.get("/hooks/wait", session_id="hook-beta", timeout=5)
        assert status == 200 and answer["status"] == "delivered" and "for the poll" in answer["text"], answer
        second.hook("Stop", "hook-beta", stop_hook_active=False, cwd="/work/beta")

        redis_server.start()
        # Back: a waiter on one process is woken by a send on the other, and boards hear pings.
        box = {}
        waiter = threading.Thread(target=lambda: box.update(result=second.get("/hooks/wait", session_id="hook-beta", timeout=30)))
        waiter.start()
        wait_until(lambda: query(first, "select waiter from sessions_app_hooklink where hook_session = 'hook-beta'")[0][0], what="the waiter")
        # The handshake completes once the consumer has joined the board's group (board/consumers.py).
        with board_socket(second, owner_cookie(second)) as ws:
            status, sent = send(first, "alpha", "beta", "redis is back")
            assert status == 200, sent
            waiter.join(20)
            status, answer = box["result"]
            assert answer["status"] == "delivered" and "redis is back" in answer["text"], answer
            assert "messages" in json.loads(ws.recv(timeout=10))["topics"]
    finally:
        stop_cluster(servers)
        redis_server.stop()


@pytest.mark.scale_out
def test_with_redis_paused_hook_answers_sends_and_wake_up_polls_wait_for_nothing(tmp_path):
    """Redis paused (CLIENT PAUSE) answers nothing and refuses nothing: an answer that waited
    on its board ping would outlast the hook client's timeout, and the mail it carried would be
    marked delivered yet never reach the model (docs/rules.md §2.7)."""
    redis_server = PausableRedis(tmp_path / "redis").start()
    servers = []
    try:
        servers = start_cluster(tmp_path, 2, scale_out_env(redis_url=redis_server.url))
        first, second = servers
        first.start_session("hook-alpha", "alpha", cwd="/work/alpha")
        first.start_session("hook-beta", "beta", cwd="/work/beta")
        first.hook("UserPromptSubmit", "hook-beta", prompt="go", cwd="/work/beta")
        assert send(first, "alpha", "beta", "before the pause")[0] == 200

        redis_server.pause(60)
        # The real hook client, with its own timeout (10 s): the answer carries the mail.
        prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "hook-beta", "cwd": "/work/beta", "prompt": "more"}
        completed = hook_client(second.url, second.token, tmp_path / "spool.jsonl", prompt)
        assert completed.returncode == 0 and b"before the pause" in completed.stdout, completed
        second.hook("Stop", "hook-beta", stop_hook_active=False, cwd="/work/beta")
        # A send to the idle session is answered; its wake waits for Redis in the background.
        status, sent = send(second, "alpha", "beta", "during the pause", timeout=10)
        assert status == 200, sent
        # Its wake-up poll hands over what waits, and without anything waiting says it cannot
        # wait now (the hook client tries again within its bound).
        status, answer = second.get("/hooks/wait", session_id="hook-beta", timeout=5)
        assert status == 200 and answer["status"] == "delivered" and "during the pause" in answer["text"], answer
        second.hook("Stop", "hook-beta", stop_hook_active=False, cwd="/work/beta")
        status, answer = second.get("/hooks/wait", session_id="hook-beta", timeout=5)
        assert status == 503 and "channel layer" in answer["detail"], answer
    finally:
        stop_cluster(servers)
        redis_server.stop()


@pytest.mark.scale_out
def test_a_send_made_while_redis_is_paused_wakes_its_idle_recipient_once_redis_answers_not_at_the_end_of_its_poll(tmp_path):
    """The wake the send asks for is kept by the sending process and made again once Redis
    answers (docs/rules.md §2.7): the waiter on the other process answers before its poll
    would have ended and found the message in the database anyway."""
    redis_server = PausableRedis(tmp_path / "redis").start()
    servers = []
    try:
        servers = start_cluster(tmp_path, 2, scale_out_env(redis_url=redis_server.url))
        first, second = servers
        first.start_session("hook-alpha", "alpha", cwd="/work/alpha")
        first.start_session("hook-beta", "beta", cwd="/work/beta")
        first.hook("UserPromptSubmit", "hook-beta", prompt="go", cwd="/work/beta")
        first.hook("Stop", "hook-beta", stop_hook_active=False, cwd="/work/beta")
        poll = 25
        answered = {}

        def waiter():
            started = time.monotonic()
            answered["answer"] = first.get("/hooks/wait", session_id="hook-beta", timeout=poll)
            answered["after"] = time.monotonic() - started

        thread = threading.Thread(target=waiter)
        thread.start()
        wait_until(lambda: query(first, "select waiter from sessions_app_hooklink where hook_session = 'hook-beta'")[0][0], what="the waiter")
        time.sleep(0.5)  # registered, then joined its group
        redis_server.pause(5)
        status, sent = send(second, "alpha", "beta", "during the pause", timeout=10)
        assert status == 200, sent
        thread.join(poll + 10)
        status, answer = answered["answer"]
        assert status == 200 and answer["status"] == "delivered" and "during the pause" in answer["text"], answer
        # Its last check of the database comes at `poll` seconds: woken well before.
        assert answered["after"] < poll - 2, answered
    finally:
        stop_cluster(servers)
        redis_server.stop()


# --------------------------------------------------------------------------- the spool across a long outage


def as_dict(data):
    return json.loads(data) if isinstance(data, str) else data


def as_time(value):
    """A stored time as an aware datetime (SQLite gives text, PostgreSQL a datetime)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def test_the_spool_keeps_order_across_a_long_outage_with_many_events(tmp_path):
    """Two sessions' events (a hundred in all) are spooled while relaybay is down for what the
    spool records as six minutes; once it is back every one reaches it in order, marked as a
    replay with the time it was spooled, after the live event that found it up (a call posts its
    own event first, so a spool never stands between the model and relaybay)."""
    spool = tmp_path / "spool.jsonl"
    down = f"http://127.0.0.1:{free_port()}"
    sequence = []
    for i in range(100):
        hook = "hook-long-a" if i % 3 else "hook-long-b"
        event = ["PreToolUse", "PostToolUse"][i % 2] if i else "SessionStart"
        payload = {"hook_event_name": event, "session_id": hook, "cwd": "/work/long", "tool_name": "Bash", "tool_input": {"command": f"step {i}"}}
        completed = hook_client(down, "unused", spool, payload, RELAYBAY_TIMEOUT="1")
        # Nothing for the model; at SessionStart, a word for the user that relaybay is down.
        assert completed.returncode == 0 and (completed.stdout == b"") == (event != "SessionStart")
        sequence.append((hook, event, f"step {i}"))
    lines = spool.read_text().splitlines()
    assert len(lines) == 100
    # Spread the spooling times over six minutes, as a long outage would have.
    start = datetime.now(timezone.utc) - timedelta(minutes=7)
    stamps = []
    rewritten = []
    for i, line in enumerate(lines):
        entry = json.loads(line)
        entry["spooled_at"] = (start + timedelta(seconds=3.6 * i)).isoformat()
        stamps.append(entry["spooled_at"])
        rewritten.append(json.dumps(entry))
    spool.write_text("\n".join(rewritten) + "\n")

    live = LiveRelaybay(*start_relaybay(tmp_path / "relaybay"))
    try:
        # Each call posts its own event, then replays what its budget allows; a few calls
        # empty the spool.
        for call in range(20):
            payload = {"hook_event_name": "PreToolUse", "session_id": "hook-long-a", "cwd": "/work/long", "tool_name": "Bash", "tool_input": {"command": f"live {call}"}}
            completed = hook_client(live.url, live.token, spool, payload)
            assert completed.returncode == 0, completed
            if not spool.exists() or not spool.read_text().strip():
                break
        assert not spool.exists() or not spool.read_text().strip()
        rows = [
            (hook, name[len("hook."):], as_dict(data)["tool_input"]["command"], replay, as_time(happened))
            for hook, name, data, replay, happened in query(
                live, "select hook_session, name, data, replay, happened_at from sessions_app_event where name like 'hook.%' order by id"
            )
        ]
        # In id order: the first live event, then the hundred spooled ones as they were spooled,
        # each later live event ahead of what was still spooled.
        assert rows[0][2] == "live 0" and rows[0][3] in (False, 0)
        replayed = [row for row in rows if row[3]]
        assert [(hook, name, command) for hook, name, command, _, _ in replayed] == sequence
        assert [row[4] for row in replayed] == [datetime.fromisoformat(stamp) for stamp in stamps]
        lives = [row for row in rows if not row[3]]
        assert len(rows) == 100 + len(lives)
        assert [command for _, _, command, _, _ in lives] == [f"live {i}" for i in range(len(lives))]
        # The last call found an empty spool and was answered live.
        assert lives[-1][3] in (False, 0)
    finally:
        stop_relaybay(live.process)

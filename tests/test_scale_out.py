"""Scale-out (docs/rules.md §0, docs/scale-out.md): two daphne processes on one PostgreSQL database and one Redis
channel layer. The rules that must hold across processes are kept in the database or Redis,
never in one process's memory: exactly-once claims, Stop blocks per turn, the per-sender rate
limit, "a newer wake-up waiter replaces the older", and the board's pings.

These always run on PostgreSQL + Redis (127.0.0.1, or the test run's DATABASE_URL/REDIS_URL);
a missing service fails them, it never skips them.
"""

import collections
import json
import threading
import time

import pytest

from tests.live_server import scale_out_env
from tests.scale_out import (
    board_socket,
    create_owner,
    delivered_ids,
    owner_cookie,
    parallel,
    parallel_hooks,
    post_json,
    query,
    start_cluster,
    stop_cluster,
    wait_until,
    write_comments,
)

pytestmark = pytest.mark.scale_out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    servers = start_cluster(tmp_path_factory.mktemp("scale-out"), 2, scale_out_env())
    yield servers
    stop_cluster(servers)


def start(server, hook, name):
    server.start_session(hook, name, cwd=f"/work/{name}")


def send(server, sender, hook, to, body):
    return post_json(server.url, server.token, "/message_send", {"body": body, "to": to, "session": sender, "hook_session": hook})


def pending(server, name):
    return query(
        server,
        "select count(*) from session_message m join sessions_app_session s on s.id = m.recipient_id "
        "where s.title = ? and m.delivered_at is null",
        name,
    )[0][0]


def assert_each_once(answers, expected):
    seen = collections.Counter(item for answer in answers for item in delivered_ids(answer))
    twice = {item: n for item, n in seen.items() if n > 1}
    assert not twice, f"delivered more than once: {twice}"
    assert set(seen) == set(expected), f"missing {set(expected) - set(seen)}, unexpected {set(seen) - set(expected)}"


def test_a_message_sent_through_one_process_is_delivered_once_to_hooks_on_both(cluster):
    first, second = cluster
    start(first, "hook-tx1", "tx1")
    start(first, "hook-tx2", "tx2")
    start(second, "hook-rx", "rx")
    second.hook("UserPromptSubmit", "hook-rx", prompt="work", cwd="/work/rx")
    write_comments(first, "rx", [f"owner note {i}" for i in range(3)])
    comments = [("C", pk) for (pk,) in query(first, "select id from sessions_app_comment where body like 'owner note %'")]
    # Bodies of ~1,500 characters: an answer holds four or five, so many hooks claim a share.
    sent = []
    for sender in ("tx1", "tx2"):
        for i in range(10):
            status, answer = send(first, sender, f"hook-{sender}", "rx", f"{sender} #{i} " + "x" * 1500)
            assert status == 200, answer
            sent.append(("M", answer["id"]))
    answers = parallel_hooks(cluster, "PreToolUse", "hook-rx", 40, tool_name="Bash", tool_input={"command": "ls"}, cwd="/work/rx")
    answers += parallel_hooks(cluster, "PostToolUse", "hook-rx", 8, tool_name="Bash", cwd="/work/rx")
    assert_each_once(answers, sent + comments)
    assert pending(first, "rx") == 0
    carriers = query(first, "select delivered_by from session_message where delivered_by like '%hook-rx'")
    assert len(carriers) == len(sent)


def test_claims_stay_exact_while_sends_and_hooks_run_together_on_both_processes(cluster):
    first, second = cluster
    for name in ("mixa", "mixb", "mixc"):
        start(first, f"hook-{name}", name)
    start(second, "hook-mixr", "mixr")
    second.hook("UserPromptSubmit", "hook-mixr", prompt="work", cwd="/work/mixr")
    sends = [
        (lambda server=cluster[i % 2], name=name, i=i: send(server, name, f"hook-{name}", "mixr", f"{name} {i} " + "y" * 900))
        for name in ("mixa", "mixb", "mixc")
        for i in range(8)
    ]
    hook = {"hook_event_name": "PreToolUse", "session_id": "hook-mixr", "cwd": "/work/mixr", "tool_name": "Read"}
    hooks = [(lambda server=cluster[i % 2]: post_json(server.url, server.token, "/hooks", hook)) for i in range(40)]
    # Sends and hooks interleaved, released together.
    calls = [call for pair in zip(sends + [None] * (len(hooks) - len(sends)), hooks) for call in pair if call]
    results = parallel(calls)
    for status, answer in results:
        assert status == 200, answer
    sent = [("M", answer["id"]) for answer in (a for _, a in results) if "id" in answer]
    assert len(sent) == len(sends)
    answers = [answer for _, answer in results if "id" not in answer]
    answers += [second.hook("UserPromptSubmit", "hook-mixr", prompt="more", cwd="/work/mixr") for _ in range(6)]
    assert_each_once(answers, sent)
    assert pending(first, "mixr") == 0


def test_stop_blocks_per_turn_are_capped_across_processes(cluster):
    first, second = cluster
    start(first, "hook-stopper", "stopper")
    start(second, "hook-stopped", "stopped")
    second.hook("UserPromptSubmit", "hook-stopped", prompt="work", cwd="/work/stopped")
    sent = []
    for i in range(8):
        status, answer = send(first, "stopper", "hook-stopper", "stopped", f"stop {i} " + "z" * 3000)
        assert status == 200, answer
        sent.append(("M", answer["id"]))
    # Two ~3,000-character messages fill one answer: eight need four Stop blocks, the cap is three.
    answers = parallel_hooks(cluster, "Stop", "hook-stopped", 12, stop_hook_active=False, cwd="/work/stopped")
    blocks = [answer for answer in answers if answer.get("decision") == "block"]
    assert len(blocks) == 3
    assert pending(first, "stopped") == len(sent) - sum(len(delivered_ids(b)) for b in blocks)
    assert pending(first, "stopped") > 0
    # A new prompt resets the count; what waited arrives then, still once.
    later = [second.hook("UserPromptSubmit", "hook-stopped", prompt="next", cwd="/work/stopped") for _ in range(4)]
    assert_each_once(blocks + later, sent)


def test_the_rate_limit_holds_for_one_sender_writing_through_both_processes_at_once(cluster):
    first, second = cluster
    start(first, "hook-chatty", "chatty")
    start(second, "hook-quiet", "quiet")
    calls = [(lambda server=cluster[i % 2], i=i: send(server, "chatty", "hook-chatty", "quiet", f"burst {i}")) for i in range(30)]
    statuses = collections.Counter(status for status, _ in parallel(calls))
    assert statuses == {200: 10, 429: 20}
    stored = query(
        first,
        "select count(*) from session_message m join sessions_app_session s on s.id = m.sender_id where s.title = 'chatty'",
    )[0][0]
    assert stored == 10


def test_a_new_sender_writing_through_both_processes_at_once_gets_one_row(cluster):
    first, second = cluster
    start(second, "hook-newrx", "newrx")
    calls = [
        (lambda server=cluster[i % 2], i=i: post_json(server.url, server.token, "/message_send", {"body": f"hello {i}", "to": "newrx", "session_title": "brand-new"}))
        for i in range(8)
    ]
    results = parallel(calls)
    assert [status for status, _ in results] == [200] * 8, results
    rows = query(first, "select id from sessions_app_session where title = 'brand-new'")
    assert len(rows) == 1
    status, answer = post_json(first.url, first.token, "/message_send", {"body": "again", "to": "newrx", "session": "brand-new"})
    assert status == 200, answer


def wait_on(server, hook, timeout=30):
    """A wake-up long poll in a thread; .result() gives (status, answer, seconds)."""
    box = {}

    def run():
        started = time.monotonic()
        status, answer = server.get_wait(hook, timeout)
        box["result"] = (status, answer, time.monotonic() - started)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    class Waiting:
        def done(self):
            return "result" in box

        def result(self, timeout=40):
            thread.join(timeout)
            assert "result" in box, "the long poll did not return"
            return box["result"]

    return Waiting()


def idle(server, hook, name):
    start(server, hook, name)
    server.hook("UserPromptSubmit", hook, prompt="work", cwd=f"/work/{name}")
    server.hook("Stop", hook, stop_hook_active=False, cwd=f"/work/{name}")


def waiter_of(server, hook):
    return query(server, "select waiter from sessions_app_hooklink where hook_session = ?", hook)[0][0]


@pytest.fixture(autouse=True)
def _wait_calls(cluster):
    for server in cluster:
        server.get_wait = lambda hook, timeout, server=server: server.get("/hooks/wait", session_id=hook, timeout=timeout)


def test_a_wake_up_waiting_on_one_process_is_woken_by_a_send_on_the_other(cluster):
    first, second = cluster
    start(first, "hook-waker", "waker")
    idle(second, "hook-sleeper", "sleeper")
    waiting = wait_on(second, "hook-sleeper")
    wait_until(lambda: waiter_of(first, "hook-sleeper"), what="the waiter to register")
    # Idle longer than channels_redis's 5 s blocking pop (redis-py 8 once timed such reads out).
    time.sleep(6)
    status, sent = send(first, "waker", "hook-waker", "sleeper", "wake up (cross-process)")
    assert status == 200, sent
    status, answer, seconds = waiting.result()
    assert status == 200 and answer["status"] == "delivered", answer
    assert "wake up (cross-process)" in answer["text"]
    # Woken through Redis, long before the 30-second poll would have ended on its own.
    assert seconds < 16


def test_a_newer_waiter_on_the_other_process_replaces_the_older(cluster):
    first, second = cluster
    start(first, "hook-poker", "poker")
    idle(first, "hook-dozer", "dozer")
    older = wait_on(first, "hook-dozer")
    older_id = wait_until(lambda: waiter_of(first, "hook-dozer"), what="the first waiter")
    newer = wait_on(second, "hook-dozer")
    wait_until(lambda: waiter_of(first, "hook-dozer") not in ("", older_id), what="the second waiter")
    status, answer, seconds = older.result()
    assert answer["status"] == "replaced" and seconds < 10, answer
    status, sent = send(first, "poker", "hook-poker", "dozer", "for the newer waiter")
    assert status == 200, sent
    status, answer, _ = newer.result()
    assert answer["status"] == "delivered" and "for the newer waiter" in answer["text"], answer


def test_of_waiters_started_together_on_both_processes_exactly_one_keeps_waiting(cluster):
    first, second = cluster
    start(first, "hook-nudger", "nudger")
    idle(second, "hook-napper", "napper")
    waiters = [wait_on(cluster[i % 2], "hook-napper", timeout=20) for i in range(6)]
    # Every older waiter hears that it was replaced; the one the database names stays.
    wait_until(lambda: sum(waiting.done() for waiting in waiters) == 5, what="five waiters replaced")
    current = waiter_of(first, "hook-napper")
    assert current
    status, sent = send(first, "nudger", "hook-nudger", "napper", "only one of you")
    assert status == 200, sent
    outcomes = collections.Counter(waiting.result()[1]["status"] for waiting in waiters)
    assert outcomes == {"replaced": 5, "delivered": 1}


def test_a_board_websocket_on_one_process_hears_a_write_on_the_other(cluster):
    first, second = cluster
    create_owner(first)
    start(first, "hook-speaker", "speaker")
    start(first, "hook-listener", "listener")
    with board_socket(second, owner_cookie(second)) as ws:
        time.sleep(6)  # an idle page, longer than channels_redis's 5 s blocking pop
        status, sent = send(first, "speaker", "hook-speaker", "listener", "ping across processes")
        assert status == 200, sent
        deadline = time.monotonic() + 10
        topics = set()
        while "messages" not in topics and time.monotonic() < deadline:
            topics |= set(json.loads(ws.recv(timeout=deadline - time.monotonic()))["topics"])
        assert "messages" in topics


def test_the_first_events_of_a_new_hook_id_on_both_processes_make_one_link(cluster):
    answers = parallel_hooks(cluster, "PreToolUse", "hook-brand-new-id", 8, tool_name="Read", cwd="/work/fresh")
    assert answers == [{}] * 8
    first = cluster[0]
    assert query(first, "select count(*) from sessions_app_hooklink where hook_session = 'hook-brand-new-id'") == [(1,)]
    assert query(first, "select count(*) from sessions_app_session where folder = '/work/fresh'") == [(1,)]
    events = query(first, "select count(*) from sessions_app_event where hook_session = 'hook-brand-new-id' and name = 'hook.PreToolUse'")
    assert events == [(8,)]


def test_waiting_sessions_hold_no_database_connection_and_a_process_stays_within_its_pool(cluster):
    first, second = cluster
    database = query(first, "select current_database()")[0][0]

    def connections():
        return query(first, "select count(*) from pg_stat_activity where datname = ?", database)[0][0] - 1  # less our own

    for i in range(12):
        idle(second, f"hook-idle-{i}", f"idle-{i}")
    waiters = [wait_on(second, f"hook-idle-{i}", timeout=20) for i in range(12)]
    for i in range(12):
        wait_until(lambda i=i: waiter_of(first, f"hook-idle-{i}"), what=f"waiter {i}")
    # Twelve long polls wait on one process, and more hooks than its pool run beside them.
    started = time.monotonic()
    start(first, "hook-busy-bee", "busy-bee")
    parallel_hooks(cluster, "PreToolUse", "hook-busy-bee", 40, tool_name="Read", cwd="/work/busy-bee")
    assert time.monotonic() - started < 15
    assert connections() <= 2 * 10  # RELAYBAY_DB_POOL_SIZE's default, per process
    start(first, "hook-rouser", "rouser")
    start(first, "hook-waker2", "waker2")
    for i in range(12):
        sender = ("rouser", "waker2")[i % 2]  # six each, under the rate limit
        status, sent = send(first, sender, f"hook-{sender}", f"idle-{i}", f"rise {i}")
        assert status == 200, sent
    for i, waiting in enumerate(waiters):
        status, answer, _ = waiting.result()
        assert status == 200 and answer["status"] == "delivered" and f"rise {i}" in answer["text"], (status, answer)

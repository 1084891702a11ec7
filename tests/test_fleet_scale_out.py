"""Messaging for a fleet across processes (docs/rules.md §4.8): two daphne processes on one
PostgreSQL database and one Redis. Repeats of one call, duplicates of one body and sends past a
recipient's unread cap arrive at both processes at the same moment; the rules hold because
they are judged in the database (the sender's row lock, the recipient's inbox lock, a unique
constraint on request ids), never in one process's memory."""

import pytest

from tests.live_server import scale_out_env
from tests.scale_out import parallel, post_json, query, start_cluster, stop_cluster

pytestmark = pytest.mark.scale_out

CAP = 5


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    env = {**scale_out_env(), "RELAYBAY_UNREAD_CAP": str(CAP), "RELAYBAY_SENDS_PER_MINUTE": "1000"}
    servers = start_cluster(tmp_path_factory.mktemp("fleet-scale-out"), 2, env)
    yield servers
    stop_cluster(servers)


def start(server, name):
    server.start_session(f"hook-{name}", name, cwd=f"/work/{name}")


def send(server, sender, to, body, **fields):
    data = {"body": body, "to": to, "session": sender, "hook_session": f"hook-{sender}", **fields}
    return lambda: post_json(server.url, server.token, "/message_send", data)


def rows(server, sender, to):
    return query(
        server,
        "select m.id from session_message m join sessions_app_session s on s.id = m.sender_id "
        "join sessions_app_session r on r.id = m.recipient_id where s.title = ? and r.title = ?",
        sender,
        to,
    )


def test_one_request_id_repeated_at_both_processes_at_once_writes_one_message(cluster):
    first, second = cluster
    start(first, "rq-sender")
    start(second, "rq-recipient")
    calls = [send(cluster[i % 2], "rq-sender", "rq-recipient", "deploy now", request_id="req-42") for i in range(16)]
    results = parallel(calls)
    assert all(status == 200 for status, _ in results), results
    answers = [answer for _, answer in results]
    assert len(rows(first, "rq-sender", "rq-recipient")) == 1
    [originals] = [a for a in answers if not a["repeat"]] or [None]
    assert originals is not None, "one call is the original, every other one its repeat"
    for answer in answers:
        assert {**answer, "repeat": False} == originals
    dispatches = query(first, "select count(*) from message_dispatch where request_id = 'req-42'")[0][0]
    assert dispatches == 1


def test_one_body_sent_at_both_processes_at_once_writes_one_message(cluster):
    first, second = cluster
    start(first, "dd-sender")
    start(second, "dd-recipient")
    results = parallel([send(cluster[i % 2], "dd-sender", "dd-recipient", "same words") for i in range(16)])
    assert all(status == 200 for status, _ in results), results
    [(message_id,)] = rows(first, "dd-sender", "dd-recipient")
    assert {answer["id"] for _, answer in results} == {message_id}
    assert sum(1 for _, answer in results if answer["duplicate"]) == 15


def test_the_unread_cap_holds_when_many_senders_write_at_both_processes_at_once(cluster):
    first, second = cluster
    start(second, "cap-recipient")
    senders = [f"cap-sender-{i}" for i in range(8)]
    for name in senders:
        start(first, name)
    calls = [send(cluster[(i + n) % 2], name, "cap-recipient", f"{name} #{n}") for i, name in enumerate(senders) for n in range(2)]
    results = parallel(calls)
    accepted = [answer for status, answer in results if status == 200]
    refused = [answer for status, answer in results if status != 200]
    assert len(accepted) == CAP, results
    assert {status for status, _ in results if status != 200} == {429}
    assert {answer["code"] for answer in refused} == {"unread_cap"}
    waiting = query(
        first,
        "select count(*) from session_message m join sessions_app_session r on r.id = m.recipient_id "
        "where r.title = 'cap-recipient' and m.delivered_at is null",
    )[0][0]
    assert waiting == CAP

"""A connection that sends nothing, or half a request header, is closed after relaybay's header
timeout (relaybay/serve.py, as `make run` and tests/devserver.py start daphne), while an ordinary
request and a wake-up long poll longer than that timeout are answered in full."""

import json
import selectors
import socket
import time
import urllib.request

import pytest

from relaybay.serve import HEADER_TIMEOUT
from tests.devserver import Server

# The server is the embedded default of its own (tests/devserver.py with no services), whatever
# the pass's: make test runs the module once.
pytestmark = pytest.mark.embedded_only

# What Twisted may add to the timeout: its timers and our polling.
SLACK = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    running = Server(tmp_path_factory.mktemp("header-timeout") / "data").start()
    yield running
    running.stop()


def api(server, path, body=None, timeout=30):
    request = urllib.request.Request(
        f"{server.url}/api{path}",
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, json.loads(response.read())


def closed_after(sockets, limit):
    """Seconds until the server closed each socket (None: still open after `limit`)."""
    selector = selectors.DefaultSelector()
    for i, sock in enumerate(sockets):
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, i)
    closed, started = [None] * len(sockets), time.monotonic()
    while selector.get_map() and time.monotonic() - started < limit:
        for key, _ in selector.select(timeout=0.1):
            try:
                data = key.fileobj.recv(4096)
            except ConnectionError:
                data = b""
            if not data:
                closed[key.data] = time.monotonic() - started
                selector.unregister(key.fileobj)
    return closed


def test_connections_that_send_half_a_header_or_nothing_are_closed_after_the_header_timeout(server):
    address = ("127.0.0.1", int(server.url.rsplit(":", 1)[1]))
    half = [socket.create_connection(address) for _ in range(5)]
    for sock in half:
        sock.sendall(b"GET /api/sessions_list HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    silent = [socket.create_connection(address) for _ in range(2)]
    try:
        # The server answers others meanwhile.
        assert api(server, "/sessions_list")[0] == 200
        closed = closed_after(half + silent, HEADER_TIMEOUT + SLACK)
    finally:
        for sock in half + silent:
            sock.close()
    assert None not in closed, closed
    assert all(HEADER_TIMEOUT - 1 <= seconds <= HEADER_TIMEOUT + SLACK for seconds in closed), closed


def test_a_wake_up_long_poll_longer_than_the_header_timeout_is_answered_in_full(server):
    assert api(server, "/hooks", {"hook_event_name": "SessionStart", "session_id": "h-long", "cwd": "/p", "source": "startup"})[0] == 200
    wait = HEADER_TIMEOUT + SLACK
    started = time.monotonic()
    assert api(server, f"/hooks/wait?session_id=h-long&timeout={wait}", timeout=wait + 30) == (200, {"status": "timeout", "text": ""})
    assert time.monotonic() - started >= wait

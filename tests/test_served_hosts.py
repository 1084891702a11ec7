"""relaybay answers only to the hosts it is served as (settings.ALLOWED_HOSTS: loopback and
RELAYBAY_ALLOWED_HOSTS), on every path: the JSON API, the wake-up long poll, the MCP server and
the board. A page on another site that reaches 127.0.0.1 under its own name (DNS rebinding)
gets a 400; /mcp refuses another site's Origin too (core/hosts.py)."""

import http.client
import json

import pytest
from channels.testing import HttpCommunicator
from django import db

from relaybay import asgi
from relaybay.settings import served_hosts
from tests.devserver import Server

from .conftest import TOKEN

pytestmark = pytest.mark.django_db(transaction=True)

MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = [(b"accept", b"application/json, text/event-stream"), (b"content-type", b"application/json")]
# Each path with a request that passes its host check and is answered without an MCP session
# manager (in process, /mcp is asked without the token: its 401 comes after the host check).
PATHS = {
    "api": ("GET", "/api/sessions_list", b"", [(b"authorization", f"Bearer {TOKEN}".encode())], 200),
    "wake-up long poll": ("GET", "/api/hooks/wait?session_id=h-hosts&timeout=0", b"", [(b"authorization", f"Bearer {TOKEN}".encode())], 200),
    "api docs": ("GET", "/api/openapi.json", b"", [(b"authorization", f"Bearer {TOKEN}".encode())], 200),
    "mcp": ("POST", "/mcp", json.dumps(MCP_LIST).encode(), MCP_HEADERS, 401),
    "board": ("GET", "/login/", b"", [], 200),
}
JSON_ANSWERS = {"api", "wake-up long poll", "api docs", "mcp"}


@pytest.fixture(autouse=True)
def _close_database_threads_connections():
    yield
    for executor in asgi.db_threads.executors:
        executor.submit(lambda: db.connection.close()).result()


async def request(path_name, host, extra_headers=()):
    method, path, body, headers, _ = PATHS[path_name]
    communicator = HttpCommunicator(asgi.application, method, path, body, [*headers, (b"host", host.encode()), *extra_headers])
    response = await communicator.get_response(timeout=10)
    await communicator.wait(10)
    return response["status"], response["body"]


@pytest.mark.parametrize("path_name", PATHS)
@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhost.evil.example:8000"])
async def test_a_host_relaybay_is_not_served_as_gets_a_400_on_every_path(path_name, host):
    status, body = await request(path_name, host)
    assert status == 400
    if path_name in JSON_ANSWERS:
        answer = json.loads(body)
        assert answer["code"] == "host_not_served"
        assert f"relaybay is not served as {host!r}" in answer["detail"]


@pytest.mark.parametrize("path_name", PATHS)
@pytest.mark.parametrize("host", ["127.0.0.1:8000", "127.0.0.1", "localhost:8000", "LOCALHOST", "[::1]:8000"])
async def test_a_loopback_host_is_served_on_every_path(path_name, host):
    status, _ = await request(path_name, host)
    assert status == PATHS[path_name][-1]


@pytest.mark.parametrize("path_name", PATHS)
async def test_a_host_named_in_relaybay_allowed_hosts_is_served_on_every_path(settings, path_name):
    settings.ALLOWED_HOSTS = served_hosts("relay.example.org, board.example.org", "127.0.0.1")
    for host in ("relay.example.org", "board.example.org:443", "127.0.0.1:8000"):
        status, _ = await request(path_name, host)
        assert status == PATHS[path_name][-1], host
    status, _ = await request(path_name, "other.example.org")
    assert status == 400


@pytest.mark.parametrize("origin", [b"http://evil.example", b"http://evil.example:8000", b"null", b"http://127.0.0.1.evil.example"])
async def test_mcp_refuses_a_page_of_another_site_by_its_origin(origin):
    status, body = await request("mcp", "127.0.0.1:8000", [(b"origin", origin)])
    assert status == 400
    assert json.loads(body)["code"] == "host_not_served"


@pytest.mark.parametrize("origin", [b"http://127.0.0.1:8000", b"http://localhost:8000", b"http://[::1]:8000"])
async def test_mcp_answers_an_origin_relaybay_is_served_as(origin):
    status, _ = await request("mcp", "127.0.0.1:8000", [(b"origin", origin)])
    assert status == 401


def test_the_served_hosts_are_loopback_the_bound_address_and_the_setting():
    assert served_hosts("", "127.0.0.1") == ["127.0.0.1", "localhost", "[::1]"]
    assert served_hosts(" relay.example.org ,, .example.net", "0.0.0.0") == ["127.0.0.1", "localhost", "[::1]", "relay.example.org", ".example.net"]
    assert served_hosts("", "192.168.1.5") == ["127.0.0.1", "localhost", "[::1]", "192.168.1.5"]
    assert served_hosts("", "fd00::5") == ["127.0.0.1", "localhost", "[::1]", "[fd00::5]"]
    assert served_hosts("", "::") == ["127.0.0.1", "localhost", "[::1]"]


def test_under_the_wsgi_layout_the_api_refuses_a_host_with_the_same_json(client):
    refused = client.get("/api/sessions_list", HTTP_HOST="evil.example", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert refused.status_code == 400
    assert refused.json()["code"] == "host_not_served"
    assert client.get("/api/sessions_list", HTTP_HOST="localhost:8000", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    assert client.get("/login/", HTTP_HOST="evil.example").status_code == 400


@pytest.mark.embedded_only  # a server of its own on the embedded default, whatever the pass's services
def test_a_server_started_with_relaybay_allowed_hosts_answers_that_name_and_loopback_only(tmp_path):
    """The setting read from the environment, through a real daphne, on every path."""
    server = Server(tmp_path / "data", env={"RELAYBAY_ALLOWED_HOSTS": "relay.example.org"}).start()
    try:
        port = int(server.url.rsplit(":", 1)[1])
        auth = {"Authorization": f"Bearer {server.token}"}
        asked = {
            "api": ("GET", "/api/sessions_list", None, auth),
            "wake-up long poll": ("GET", "/api/hooks/wait?session_id=h-live&timeout=0", None, auth),
            "mcp": ("POST", "/mcp", json.dumps(MCP_LIST), {**auth, "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}),
            "board": ("GET", "/login/", None, {}),
        }
        for name, (method, path, body, headers) in asked.items():
            for host, expected in (("relay.example.org", 200), (f"127.0.0.1:{port}", 200), ("evil.example", 400)):
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                connection.request(method, path, body=body, headers={**headers, "Host": host})
                answer = connection.getresponse()
                assert answer.status == expected, (name, host, answer.read()[:300])
                connection.close()
    finally:
        server.stop()

"""Who may call what (docs/rules.md §6): the table there is walked against the real URL conf, the
websocket routes and the MCP tool list, and every JSON route is called with each credential. The
agents' token (in every session's config) can do nothing the board reserves for the owner; the
owner token, kept only in data/, is made for an install that has none and read by the commands."""

import asyncio
import inspect
import json
import re
import stat
import subprocess
import sys

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from ninja.constants import NOT_SET
from ninja.operation import PathView

from board.routing import websocket_urlpatterns
from core.auth import AgentAuth, AsyncAgentAuth, AsyncOwnerAuth, OwnerAuth
from core.limits import Limits
from mcp_server.tools import build_server
from sessions_app.models import Session

from .conftest import OWNER_TOKEN, TOKEN
from .live_server import MANAGE, REPO_ROOT, server_env
from .message_personas import rb  # noqa: F401

RULES = REPO_ROOT / "docs" / "rules.md"
WHO = {"agent", "owner", "owner login", "agent or owner login", "anyone"}
AUTH_OF = {"agent": (AgentAuth, AsyncAgentAuth), "owner": (OwnerAuth, AsyncOwnerAuth)}


def table():
    """{route or tool: who} from the one table of docs/rules.md §6, and the tools it names."""
    section = RULES.read_text().split("## §6 ", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| Route")]
    who_may, tools = {}, set()
    for row in rows:
        first, who = (cell.strip() for cell in row.strip("|").split("|")[:2])
        assert who in WHO, row
        for item in re.findall(r"`([^`]+)`", first):
            assert item not in who_may, f"{item} has two rows"
            who_may[item] = who
            if first.startswith("MCP tool"):
                tools.add(item)
    return who_may, tools


def url_patterns(patterns=None, prefix=""):
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            yield from url_patterns(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern.callback


def path_view(callback):
    """The django-ninja PathView behind a URL conf entry, or None for a plain Django view."""
    if not inspect.isfunction(callback):
        return None
    found = inspect.getclosurevars(callback).nonlocals.get("self")
    return found if isinstance(found, PathView) else None


def api_operations():
    """[(key as the table writes it, route, operation)] of every JSON route in the URL conf."""
    found = []
    for route, callback in url_patterns():
        view = path_view(callback)
        for operation in view.operations if view else []:
            for method in operation.methods:
                found.append((f"{method} /{route}", route, operation))
    return found


def routes():
    """Every route relaybay serves, as the table names it."""
    keys = {key for key, _, _ in api_operations()}
    for route, callback in url_patterns():
        if path_view(callback) is not None:
            continue
        if route.startswith("admin/"):
            keys.add("/admin/…")
        elif route in ("api/", "^api/"):
            keys.add("/api/" if route == "api/" else "/api/…")
        else:
            keys.add(f"/{route}")
    keys |= {f"/{pattern.pattern}" for pattern in websocket_urlpatterns}
    # relaybay/asgi.py hands /mcp to the MCP server before Django's URL conf.
    keys.add("/mcp")
    return keys


def mcp_tools():
    return {tool.name for tool in asyncio.run(build_server(object(), limits=Limits()).list_tools())}


def test_every_route_and_tool_has_exactly_one_row_in_the_table():
    who_may, tools = table()
    assert set(who_may) - tools == routes()
    assert tools == mcp_tools()
    assert {who_may[tool] for tool in tools} == {"agent"}
    assert who_may["/mcp"] == "agent"


def test_each_json_route_names_its_credential_as_the_table_says():
    who_may, _ = table()
    for key, _, operation in api_operations():
        assert operation.auth_param is not NOT_SET, f"{key} names no auth"
        [auth] = operation.auth_callbacks
        assert isinstance(auth, AUTH_OF[who_may[key]]), key


def call(client, key, route, token=None):
    method, _ = key.split(" ", 1)
    path = "/" + re.sub(r"<[^>]+>", "S-1", route)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    if method == "GET":
        return client.get(path, **headers)
    return getattr(client, method.lower())(path, "{}", content_type="application/json", **headers)


@pytest.mark.django_db
def test_every_owner_route_refuses_the_agents_token_with_owner_only(client):
    who_may, _ = table()
    owner_routes = [(key, route) for key, route, _ in api_operations() if who_may[key] == "owner"]
    assert {key for key, _ in owner_routes} == {
        "POST /api/relay", "POST /api/sessions/<handle>/inbound", "GET /api/approvals", "POST /api/approvals/<pk>",
    }  # fmt: skip
    for key, route in owner_routes:
        refused = call(client, key, route, TOKEN)
        assert (refused.status_code, refused.json()["code"]) == (403, "owner_only"), key
        assert "the agents' token (RELAYBAY_TOKEN) cannot" in refused.json()["detail"]
        assert call(client, key, route).status_code == 401, key
        assert call(client, key, route, "wrong").status_code == 401, key
        assert call(client, key, route, OWNER_TOKEN).status_code not in (401, 403), key


@pytest.mark.django_db
def test_every_agent_route_takes_either_token_and_refuses_none(client):
    who_may, _ = table()
    for key, route, _ in api_operations():
        if who_may[key] != "agent":
            continue
        assert call(client, key, route).status_code == 401, key
        for token in (TOKEN, OWNER_TOKEN):
            assert call(client, key, route, token).status_code not in (401, 403), key


@pytest.mark.django_db
def test_every_board_page_sends_a_caller_with_only_the_agents_token_to_log_in(client):
    who_may, _ = table()
    pages = [key for key, who in who_may.items() if who == "owner login" and key not in ("/ws/board/", "/admin/…")]
    assert len(pages) >= 25
    for page in [*pages, "/admin/"]:
        response = client.get(re.sub(r"<int:[a-z_]+>", "1", page), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 302 and "login/?next=" in response["Location"], page


@pytest.mark.django_db
def test_the_api_description_opens_for_either_token_or_the_login_and_no_one_else(client):
    for page in ("/api/openapi.json", "/api/docs"):
        assert client.get(page).status_code == 401
        assert client.get(page, HTTP_AUTHORIZATION=f"Bearer {OWNER_TOKEN}").status_code == 200
        assert client.get(page, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


# The owner's powers the agents' token does not have


@pytest.mark.django_db
def test_the_agents_token_cannot_undo_the_owner_s_hold(rb):
    bob = rb.live("bob", "hook-b")
    rb.inbound("bob", "hold")
    refused = rb.api.post(f"/sessions/{bob.handle}/inbound", {"policy": "accept"})
    assert (refused.status_code, refused.json()["code"]) == (403, "owner_only")
    assert Session.objects.get(pk=bob.pk).inbound == "hold"


@pytest.mark.django_db
def test_the_agents_token_cannot_relay_a_wake_up_or_a_board_ping(client):
    for group, message in (("board", {"type": "board.ping", "topics": ["sessions"]}), ("wait." + "0" * 40, {"type": "wake"})):
        body = json.dumps({"group": group, "message": message})
        refused = client.post("/api/relay", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert (refused.status_code, refused.json()["code"]) == (403, "owner_only")
        taken = client.post("/api/relay", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {OWNER_TOKEN}")
        assert taken.status_code == 204


# The owner token on an install


def manage(data_dir, *args, **env):
    environment = {k: v for k, v in server_env(data_dir, "").items() if k not in ("RELAYBAY_TOKEN", "RELAYBAY_OWNER_TOKEN")}
    return subprocess.run(
        [sys.executable, str(MANAGE), *args], cwd=REPO_ROOT, env={**environment, **env}, capture_output=True, text=True, timeout=120
    )


@pytest.mark.embedded_only  # an install of its own on the embedded default, whatever the pass's services
def test_make_run_gives_an_install_with_only_the_agents_token_an_owner_token_of_its_own(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "token").write_text("an-agents-token-of-an-old-install\n")
    for step in (["migrate", "--noinput", "-v", "0"], ["setup_owner"]):  # what `make run` runs before it serves
        done = manage(data_dir, *step)
        assert done.returncode == 0, done.stderr
    owner_token = data_dir / "owner-token"
    assert stat.S_IMODE(owner_token.stat().st_mode) == 0o600
    assert len(owner_token.read_text().strip()) >= 40
    assert owner_token.read_text().strip() != (data_dir / "token").read_text().strip()
    assert f"The owner token, for your scripts and manage.py commands (never give it to a session): kept in {owner_token}" in done.stdout
    assert (data_dir / "token").read_text() == "an-agents-token-of-an-old-install\n"


@pytest.mark.embedded_only  # an install of its own on the embedded default, whatever the pass's services
def test_an_owner_token_equal_to_the_agents_token_stops_relaybay(tmp_path):
    done = manage(tmp_path, "check", RELAYBAY_TOKEN="same-for-both", RELAYBAY_OWNER_TOKEN="same-for-both")
    assert done.returncode != 0
    assert "RELAYBAY_OWNER_TOKEN is the agents' token (RELAYBAY_TOKEN): every session could act as the owner." in done.stderr

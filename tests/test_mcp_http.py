"""relaybay's own MCP server at /mcp (streamable HTTP, the official SDK): the token, bad input,
and the process proof that tells it which Claude Code session calls. The tools' answers on both
transports are in test_mcp_server.py."""

import json
import os
import secrets
import subprocess
import uuid

import httpx2
import pytest
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from relaybay_hook.proof import PROCESS_HEADER, process_proof
from tests.live_server import REPO_ROOT, live_relaybay  # noqa: F401  (fixture)
from tests.test_mcp_server import answer, error_text, http_session, stdio_session


@pytest.fixture
def names():
    suffix = uuid.uuid4().hex[:6]
    return lambda name: f"{name}-{suffix}"


def proof():
    """A Claude Code process's proof, as its headersHelper and its hooks send it."""
    return {PROCESS_HEADER: process_proof(secrets.token_hex(16))}


def post_mcp(live, body, headers=None):
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **(headers or {})}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(f"{live.url}/mcp", content=content, headers=headers, timeout=30)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


def test_mcp_without_the_token_is_refused_with_the_api_sentence(live_relaybay):
    for headers in ({}, {"Authorization": "Bearer not-the-token"}, {"Authorization": f"Basic {live_relaybay.token}"}):
        refused = post_mcp(live_relaybay, INITIALIZE, headers)
        assert refused.status_code == 401, headers
        assert refused.headers["www-authenticate"] == "Bearer"
        assert refused.json()["detail"].startswith("Missing or wrong token: send Authorization: Bearer <RELAYBAY_TOKEN>")
    accepted = post_mcp(live_relaybay, INITIALIZE, {"Authorization": f"Bearer {live_relaybay.token}"})
    assert accepted.status_code == 200
    assert accepted.json()["result"]["serverInfo"]["name"] == "relaybay"


async def test_the_sdk_client_with_a_wrong_token_cannot_connect(live_relaybay):
    with pytest.raises(ExceptionGroup) as failure:
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer wrong"}) as client:
            async with streamable_http_client(f"{live_relaybay.url}/mcp", http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
    assert failure.group_contains(MCPError, match="Server returned an error response", depth=2)


def test_bad_json_rpc_is_answered_as_a_json_rpc_error_not_a_crash(live_relaybay):
    token = {"Authorization": f"Bearer {live_relaybay.token}"}
    not_json = post_mcp(live_relaybay, b"{not json", token)
    assert not_json.status_code == 400
    assert not_json.json()["error"]["code"] == -32700
    not_rpc = post_mcp(live_relaybay, {"hello": "there"}, token)
    assert not_rpc.status_code == 400
    assert "error" in not_rpc.json()


async def test_a_call_is_verified_through_the_process_proof_without_a_hook_session(live_relaybay, names, tmp_path):
    alpha, beta = names("Alpha"), names("Beta")
    process = proof()
    live_relaybay.start_session(f"hook-{alpha}", alpha, headers=process)
    live_relaybay.start_session(f"hook-{beta}", beta)
    async with http_session(live_relaybay, tmp_path, headers=process) as mcp:
        sent = answer(await mcp.call_tool("message_send", {"body": "hello", "to": beta}))
        named = answer(await mcp.call_tool("message_send", {"body": "again", "to": beta, "session": alpha}))
    assert (sent["sender"], sent["sender_verified"]) == (alpha, True)
    assert (named["sender"], named["sender_verified"], named["note"]) == (alpha, True, "")


async def test_the_hook_client_and_the_headers_helper_prove_one_process(live_relaybay, names, tmp_path):
    # The two stdlib scripts Claude Code runs, with the environment it gives both of them.
    alpha, beta = names("Alpha"), names("Beta")
    live_relaybay.start_session(f"hook-{beta}", beta)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "RELAYBAY_URL": live_relaybay.url,
        "RELAYBAY_TOKEN": live_relaybay.token,
        "RELAYBAY_SESSION": alpha,
        "CLAUDE_CODE_MESSAGING_TOKEN": secrets.token_hex(16),
    }
    start = {"session_id": f"hook-{alpha}", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(tmp_path)}
    hook = subprocess.run(["python3", "-S", str(REPO_ROOT / "bin" / "relaybay-hook")], input=json.dumps(start).encode(), env=env, capture_output=True, timeout=30)
    helper = subprocess.run(["python3", "-S", str(REPO_ROOT / "bin" / "relaybay-mcp-headers")], env=env, capture_output=True, timeout=30)
    assert alpha in json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    async with http_session(live_relaybay, tmp_path, headers=json.loads(helper.stdout)) as mcp:
        sent = answer(await mcp.call_tool("message_send", {"body": "hello", "to": beta}))
    assert (sent["sender"], sent["sender_verified"]) == (alpha, True)


async def test_the_proof_follows_the_process_to_its_new_session_id_after_clear(live_relaybay, names, tmp_path):
    alpha, beta = names("Alpha"), names("Beta")
    process = proof()
    live_relaybay.start_session(f"hook-{alpha}", alpha, headers=process)
    live_relaybay.start_session(f"hook-{beta}", beta)
    async with http_session(live_relaybay, tmp_path, headers=process) as mcp:
        before = answer(await mcp.call_tool("message_send", {"body": "before", "to": beta}))
        # /clear: the old id ends, the same process starts a new id (its hooks, its proof).
        live_relaybay.hook("SessionEnd", f"hook-{alpha}", headers=process, reason="clear")
        live_relaybay.hook("SessionStart", f"hook-{alpha}-2", headers=process, source="clear")
        linked = answer(await mcp.call_tool("session_link", {"session": alpha}))
        after = answer(await mcp.call_tool("message_send", {"body": "after", "to": beta}))
    assert (before["sender"], before["sender_verified"]) == (alpha, True)
    # The new id's first hook, carrying the same proof, linked it exactly to alpha's row: nothing moves.
    assert (linked["hook_session"], linked["exact"], linked["moved"]) == (f"hook-{alpha}-2", True, False)
    assert (after["sender"], after["sender_verified"]) == (alpha, True)


async def test_a_replayed_hook_does_not_move_the_proof(live_relaybay, names, tmp_path):
    alpha, beta = names("Alpha"), names("Beta")
    process = proof()
    live_relaybay.start_session(f"hook-{alpha}", alpha, headers=process)
    live_relaybay.start_session(f"hook-{beta}", beta)
    # An event of another id spooled long ago, replayed by this process's hook client.
    live_relaybay.hook("Stop", f"hook-{alpha}-old", headers={**process, "X-Relaybay-Replay": "1"})
    async with http_session(live_relaybay, tmp_path, headers=process) as mcp:
        sent = answer(await mcp.call_tool("message_send", {"body": "hello", "to": beta}))
    assert (sent["sender"], sent["sender_verified"]) == (alpha, True)


@pytest.mark.parametrize("headers", [{}, proof(), {PROCESS_HEADER: "not-a-digest"}], ids=["missing", "unknown", "malformed"])
async def test_a_missing_or_wrong_proof_gets_the_answers_of_a_wrong_hook_session(live_relaybay, names, tmp_path, headers):
    alpha, beta = names("Alpha"), names("Beta")
    live_relaybay.start_session(f"hook-{alpha}", alpha)
    live_relaybay.start_session(f"hook-{beta}", beta)
    gamma = names("Gamma")  # no row, no link: its name is only claimed
    calls = [
        ("message_send", {"body": "hi", "to": beta, "session": alpha}),
        ("message_ack", {"session": alpha}),
        ("message_send", {"body": "hi", "to": beta}),
    ]
    async with http_session(live_relaybay, tmp_path, headers=headers) as mcp:
        http_answers = [(await mcp.call_tool(tool, args)).content[0].text for tool, args in calls]
        claimed = answer(await mcp.call_tool("message_send", {"body": "hi", "to": beta, "session": gamma}))
    async with stdio_session(live_relaybay, tmp_path, claude_session=f"hook-wrong-{uuid.uuid4().hex[:6]}") as mcp:
        stdio_answers = [(await mcp.call_tool(tool, args)).content[0].text for tool, args in calls]
    assert f'"{alpha}" is linked to a live Claude Code session; write with its hook_session' in http_answers[0]
    assert http_answers[:2] == stdio_answers[:2]
    # No name and no proof: stdio names the wrong id it was given, http says a sender is needed.
    assert "The sender is required" in http_answers[2] and "has seen no hook events" in stdio_answers[2]
    assert (claimed["sender"], claimed["sender_verified"]) == (gamma, False)
    assert "Your name is not verified" in claimed["note"]


async def test_session_link_without_a_proof_says_how_to_name_the_hook_session(live_relaybay, names, tmp_path):
    async with http_session(live_relaybay, tmp_path) as mcp:
        refused = error_text(await mcp.call_tool("session_link", {"session": names("Epsilon")}))
    assert "Pass hook_session: your Claude Code session id (the SessionStart note names it)" in refused
    assert "CLAUDE_CODE_HARBOR_KITE=0" in refused


async def test_a_wrong_type_from_a_client_skipping_the_schema_is_a_tool_error(live_relaybay, tmp_path):
    async with http_session(live_relaybay, tmp_path) as mcp:
        refused = error_text(await mcp.call_tool("messages_list", {"session": ["a", "list"]}))
        missing = error_text(await mcp.call_tool("message_send", {"to": "someone"}))
    assert "session" in refused and "valid string" in refused
    assert "body" in missing and "required" in missing.lower()

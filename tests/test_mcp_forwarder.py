"""The local MCP server each session runs (bin/relaybay-mcp, relaybay_hook/mcp.py), driven by the
official MCP SDK client over stdio as a CLI starts it, against a real relaybay that is stopped
and started again: the tools survive the restart, a call while relaybay is down is a tool error
saying so, and the process stays small."""

import asyncio
import json
import secrets
import subprocess
import sys
import time
from contextlib import asynccontextmanager

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from relaybay_hook.proof import PROCESS_HEADER, process_proof
from tests.e2e.relaybay_cli import query
from tests.live_server import REPO_ROOT, LiveRelaybay, restart_relaybay, start_relaybay, stop_relaybay

# The client's own behaviour, which neither database nor channel layer changes.
pytestmark = pytest.mark.embedded_only
FORWARDER = REPO_ROOT / "bin" / "relaybay-mcp"
TOOLS = {"message_send", "message_broadcast", "messages_list", "message_ack", "session_link", "sessions_list", "files_reserve", "files_release", "files_list"}


@pytest.fixture
def relaybay(tmp_path):
    url, token, process = start_relaybay(tmp_path / "server")
    live = LiveRelaybay(url, token, process)
    yield live
    stop_relaybay(live.process)


@asynccontextmanager
async def forwarder(tmp_path, url, token, messaging_token=None, **extra):
    """bin/relaybay-mcp started as Claude Code starts a stdio server: python3 -S, the entry's env."""
    env = {"RELAYBAY_URL": url, "RELAYBAY_TOKEN": token, "RELAYBAY_SPOOL": str(tmp_path / "spool" / "spool.jsonl"), **extra}
    if messaging_token:
        env["CLAUDE_CODE_MESSAGING_TOKEN"] = messaging_token
    params = StdioServerParameters(command="python3", args=["-S", str(FORWARDER)], env=env)
    with open(tmp_path / "forwarder.log", "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def text_of(result):
    return result.content[0].text


def proven_sender(relaybay, name):
    """A session `name` whose hooks reported a process proof: its messaging token."""
    token = secrets.token_hex(16)
    relaybay.start_session(f"hook-{name}", name=name, headers={PROCESS_HEADER: process_proof(token)})
    return token


def test_the_tools_are_relaybays_own_and_a_send_speaks_for_the_process_proof(relaybay, tmp_path):
    messaging = proven_sender(relaybay, "alpha")
    relaybay.start_session("hook-bravo", name="bravo")

    async def run():
        async with forwarder(tmp_path, relaybay.url, relaybay.token, messaging) as session:
            listed = await session.list_tools()
            sent = await session.call_tool("message_send", {"to": "bravo", "body": "forwarded-1234"})
            return listed, sent

    listed, sent = asyncio.run(run())
    assert {tool.name for tool in listed.tools} == TOOLS
    assert not sent.is_error, text_of(sent)
    answer = json.loads(text_of(sent))
    assert answer["sender"] == "alpha" and answer["sender_verified"] is True


def test_a_call_while_relaybay_is_down_says_so_and_the_next_after_it_is_back_is_sent(relaybay, tmp_path):
    messaging = proven_sender(relaybay, "alpha")
    relaybay.start_session("hook-bravo", name="bravo")

    async def run():
        async with forwarder(tmp_path, relaybay.url, relaybay.token, messaging) as session:
            first = await session.call_tool("message_send", {"to": "bravo", "body": "before-1"})
            stop_relaybay(relaybay.process)
            down = await session.call_tool("message_send", {"to": "bravo", "body": "while-down-2"})
            listed_down = await session.list_tools()
            relaybay.process = await asyncio.to_thread(restart_relaybay, relaybay.process)
            after = await session.call_tool("message_send", {"to": "bravo", "body": "after-3"})
            return first, down, listed_down, after

    first, down, listed_down, after = asyncio.run(run())
    assert not first.is_error, text_of(first)
    assert down.is_error
    said = text_of(down)
    assert said.startswith(f"relaybay is not running at {relaybay.url}; it was reachable until ")
    assert "your message was not sent" in said
    # The tools stay listed while relaybay is down: the CLI keeps offering them.
    assert {tool.name for tool in listed_down.tools} == TOOLS
    assert not after.is_error, text_of(after)
    assert json.loads(text_of(after))["sender_verified"] is True
    bodies = {body for (body,) in query(relaybay, "select body from session_message")}
    assert bodies == {"before-1", "after-3"}


def test_a_session_started_while_relaybay_is_down_lists_the_tools_it_last_had_and_calls_them_once_it_is_up(relaybay, tmp_path):
    relaybay.start_session("hook-bravo", name="bravo")

    async def once_up():
        async with forwarder(tmp_path, relaybay.url, relaybay.token) as session:
            await session.list_tools()

    asyncio.run(once_up())
    stop_relaybay(relaybay.process)

    async def started_while_down():
        async with forwarder(tmp_path, relaybay.url, relaybay.token) as session:
            listed = await session.list_tools()
            down = await session.call_tool("sessions_list", {})
            relaybay.process = await asyncio.to_thread(restart_relaybay, relaybay.process)
            up = await session.call_tool("sessions_list", {})
            return listed, down, up

    listed, down, up = asyncio.run(started_while_down())
    assert {tool.name for tool in listed.tools} == TOOLS
    assert down.is_error and "nothing was done" in text_of(down)
    assert not up.is_error, text_of(up)
    assert "bravo" in text_of(up)


def test_a_session_that_never_reached_relaybay_is_told_of_its_tools_once_relaybay_answers(relaybay, tmp_path):
    stop_relaybay(relaybay.process)
    changed = asyncio.Event()

    async def on_message(message):
        if getattr(getattr(message, "root", message), "method", None) == "notifications/tools/list_changed":
            changed.set()

    async def run():
        env = {"RELAYBAY_URL": relaybay.url, "RELAYBAY_TOKEN": relaybay.token, "RELAYBAY_SPOOL": str(tmp_path / "fresh" / "spool.jsonl")}
        params = StdioServerParameters(command="python3", args=["-S", str(FORWARDER)], env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                await session.initialize()
                empty = await session.list_tools()
                down = await session.call_tool("message_send", {"to": "x", "body": "y"})
                relaybay.process = await asyncio.to_thread(restart_relaybay, relaybay.process)
                await asyncio.wait_for(changed.wait(), 30)
                return empty, down, await session.list_tools()

    empty, down, listed = asyncio.run(run())
    assert empty.tools == []
    assert down.is_error and "it has not been reachable from this machine yet" in text_of(down)
    assert {tool.name for tool in listed.tools} == TOOLS


def test_a_refused_token_is_a_tool_error_naming_the_way_out(relaybay, tmp_path):
    async def run():
        async with forwarder(tmp_path, relaybay.url, relaybay.token) as session:
            await session.list_tools()
        async with forwarder(tmp_path, relaybay.url, "not-the-token") as session:
            return await session.call_tool("sessions_list", {})

    refused = asyncio.run(run())
    assert refused.is_error
    assert "refused this session (401" in text_of(refused) and "claude_config" in text_of(refused)


def test_twenty_forwarders_stay_under_15_mb_each(relaybay, tmp_path):
    processes = []
    try:
        for n in range(20):
            process = subprocess.Popen(
                ["python3", "-S", str(FORWARDER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env={"RELAYBAY_URL": relaybay.url, "RELAYBAY_TOKEN": relaybay.token, "RELAYBAY_SPOOL": str(tmp_path / "spool.jsonl")},
            )  # fmt: skip
            processes.append(process)
            for message in initialize_and_list():
                process.stdin.write(message)
            process.stdin.flush()
            assert b'"message_send"' in read_answer(process, 2)
        sizes = [resident_kb(process.pid) for process in processes]
    finally:
        for process in processes:
            process.kill()
            process.wait()
    assert max(sizes) < 15 * 1024, sizes


def initialize_and_list():
    return [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode() + b"\n",
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n',
    ]


def read_answer(process, request_id, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if json.loads(line).get("id") == request_id:
            return line
    raise AssertionError(f"no answer to {request_id}")


def resident_kb(pid):
    status = open(f"/proc/{pid}/status").read()
    return int(status.split("VmRSS:")[1].split()[0])
